"""The evaluation record: one map of one model on one image, scored; and its aggregation.

:class:`ImageRecord` is what the engine produces and every reader consumes (the JSON/CSV/HTML
writer, the CLI, the app's per-image badges and curves). :func:`summarise` turns the records of
one (model, method) into a table row with the same selection rules as the metric functions
(it calls them).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..metrics import RECALL_GRID, PerturbationCurves, aopc, lerf_auc, morf_aoc
from .protocols import summarise_extra

__all__ = ["INTERVALS", "ROW_FIGURES", "SCALAR_FIELDS", "ImageRecord", "per_image_figures", "summarise"]


@dataclass(frozen=True, eq=False)
class ImageRecord:
    """One map of one model on one image, with every figure the evaluation computes for it.

    Undefined figures are ``nan`` (e.g. box scores of an image without a box, curve scores with
    ``p_0 = 0``); the reason is in the protocol of the row that aggregates the record.

    Attributes:
        model: the model's name (its directory as given).
        variant: the model's attention variant.
        method: the map method.
        index: the image's position in the evaluated data set.
        name: the image's name (``"test:17"``, a file path).
        label: ground-truth class, or ``None`` (an upload).
        logits: ``(classes,)`` the model's logits on the clean image.
        target: the class the map explains (methods that explain a class), else ``None``.
        scored: the class whose probability the perturbation curves track.
        morf, lerf: ``(K + 1,)`` probability of ``scored`` as patches are removed, most / least
            relevant first (index 0 = the clean image).
        morf_aoc, lerf_auc, aopc: the curve scores of this image (``select="all"``).
        box_roc_auc, box_pr_auc: the map against the target boxes' pixels.
        distractor_roc_auc: target pixels against the negative boxes' pixels.
        positive_fraction: share of target pixels (the PR-AUC of a constant map).
        pointing_hit: 1.0 hit, 0.0 miss, ``nan`` without a box.
        precision: ``(R,)`` interpolated precision at :data:`~infsa_viz.metrics.RECALL_GRID`.
        map_min, map_max, map_mass: the map's minimum, maximum and ``Σ|m|``.
        validity: where the absorbing-chain reading of the map's graph holds
            (:meth:`~infsa_viz.maps.Validity.for_image`), or ``None`` for maps that do not rely on it.
        energy_pointing_game … road_lerf_auc: the protocols beyond MoRF and box AUC
            (:data:`~infsa_viz.evaluation.protocols.EXTRA_FIELDS`; ``nan`` where not measured).
    """

    model: str
    variant: str
    method: str
    index: int
    name: str
    label: int | None
    logits: np.ndarray
    target: int | None
    scored: int
    morf: np.ndarray
    lerf: np.ndarray
    morf_aoc: float
    lerf_auc: float
    aopc: float
    box_roc_auc: float
    box_pr_auc: float
    distractor_roc_auc: float
    positive_fraction: float
    pointing_hit: float
    precision: np.ndarray
    map_min: float
    map_max: float
    map_mass: float
    validity: dict[str, Any] | None = None
    energy_pointing_game: float = math.nan
    relevance_rank_accuracy: float = math.nan
    complexity: float = math.nan
    deletion_auc: float = math.nan
    insertion_auc: float = math.nan
    positive_perturbation_auc: float = math.nan
    negative_perturbation_auc: float = math.nan
    class_switch_shift: float = math.nan
    class_switch_target_drop: float = math.nan
    class_switch_distractor_gain: float = math.nan
    road_morf_aoc: float = math.nan
    road_lerf_auc: float = math.nan

    @property
    def predicted(self) -> int:
        return int(np.argmax(self.logits))

    @property
    def probability(self) -> float:
        """Softmax probability of the predicted class."""
        z = self.logits - self.logits.max()
        return float(np.exp(z).max() / np.exp(z).sum())

    @property
    def correct(self) -> bool | None:
        return None if self.label is None else self.predicted == self.label

    def scalars(self) -> dict[str, Any]:
        """A flat row: every scalar field (``nan`` → ``None``), logits as a list, no curves."""
        row: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("morf", "lerf", "precision"):
                continue
            if f.name == "logits":
                value = [round(float(v), 6) for v in value]
            elif f.name == "validity":
                value = None if value is None else value["holds"]
            elif isinstance(value, float) and not math.isfinite(value):
                value = None
            row[f.name] = value
        row["predicted"] = self.predicted
        row["probability"] = self.probability
        return row


#: Per-image scalar figures, in the order of tables and badges.
SCALAR_FIELDS = ("morf_aoc", "lerf_auc", "aopc", "pointing_hit", "box_roc_auc", "box_pr_auc", "distractor_roc_auc")


#: Row figure → the record field it averages (``accuracy`` averages the ``correct`` flag).
ROW_FIGURES = {"accuracy": "correct", "morf_aoc": "morf_aoc", "lerf_auc": "lerf_auc", "aopc": "aopc",
               "box_roc_auc": "box_roc_auc", "box_pr_auc": "box_pr_auc", "distractor_roc_auc": "distractor_roc_auc",
               "pointing_game": "pointing_hit"}
_CURVE_FIGURES = ("morf_aoc", "lerf_auc", "aopc")
#: How every ``<figure>_ci`` of a row is computed (:func:`~infsa_viz.evaluation.stats.bootstrap_ci`).
INTERVALS = {"method": "percentile", "confidence": 0.95, "n_resamples": 2000, "seed": 0}


def per_image_figures(records: Sequence[ImageRecord], *, select: str) -> dict[str, np.ndarray]:
    """Each row figure's per-image values, ``nan`` where the image is not in the row's mean.

    The row figure is the mean of these values over the finite ones: curve scores count the
    ``select`` images (``"correct"``: the clean prediction equals the label, or the scored class
    where the label is unknown) with a defined score, box and pointing scores the images where they
    are defined, accuracy the labelled images. Paired tests and intervals read the same values.

    Returns:
        figure → ``(n,) float64`` in the order of ``records``.
    """
    correct = np.array([r.predicted == (r.scored if r.label is None else r.label) for r in records])
    out: dict[str, np.ndarray] = {}
    for figure, name in ROW_FIGURES.items():
        if name == "correct":
            values = np.array([math.nan if r.label is None else float(r.correct) for r in records])
        else:
            values = np.array([getattr(r, name) for r in records], dtype=np.float64)
        if figure in _CURVE_FIGURES and select == "correct":
            values = np.where(correct, values, math.nan)
        out[figure] = values
    return out


def _intervals(records: Sequence[ImageRecord], select: str, digits: dict[str, int]) -> dict[str, Any]:
    """``<figure>_ci``: ``[low, high]`` bootstrap interval over images of every row figure (``None``
    without values)."""
    from .stats import bootstrap_ci

    out: dict[str, Any] = {}
    for figure, values in per_image_figures(records, select=select).items():
        finite = values[np.isfinite(values)]
        if not finite.size:
            out[f"{figure}_ci"] = None
            continue
        ci = bootstrap_ci(finite, **INTERVALS)  # type: ignore[arg-type]
        out[f"{figure}_ci"] = [_round(ci.low, digits[figure]), _round(ci.high, digits[figure])]
    return out


def _nanmean(values: Sequence[float]) -> float:
    array = np.asarray(values, dtype=np.float64)
    array = array[np.isfinite(array)]
    return float(array.mean()) if array.size else math.nan


def _curves(records: Sequence[ImageRecord], order: str, steps: tuple[np.ndarray, np.ndarray],
            protocol: dict[str, Any]) -> PerturbationCurves:
    probs = np.stack([getattr(r, order) for r in records])
    labels = np.array([r.scored if r.label is None else r.label for r in records], dtype=np.int64)
    fractions, removed = steps
    return PerturbationCurves(order=order, fractions=fractions, removed=removed,
                              probs=probs, targets=labels, predicted=np.array([r.predicted for r in records]),
                              scored_class=np.array([r.scored for r in records]), protocol=protocol)


def _round(value: float, digits: int) -> float | None:
    return None if not math.isfinite(value) else round(value, digits)


def summarise(records: Sequence[ImageRecord], *, select: str, steps: tuple[np.ndarray, np.ndarray],
              protocol: dict[str, Any]) -> dict[str, Any]:
    """One table row from the records of one (model, method), with its ``protocol``.

    Curve scores are averaged over the ``select`` images (``"correct"``: correctly classified)
    whose score is defined, by :func:`~infsa_viz.metrics.morf_aoc` and friends; box and pointing
    scores over images where they are defined. Curves are averaged as ``p_k / p_0``.
    """
    import warnings

    from ..metrics import UndefinedMetricWarning

    first = records[0]
    with warnings.catch_warnings():  # undefined images are counted in the row instead
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        morf_curves = _curves(records, "morf", steps, protocol)
        morf = morf_aoc(morf_curves, select=select)  # type: ignore[arg-type]
        lerf = lerf_auc(_curves(records, "lerf", steps, protocol), select=select)  # type: ignore[arg-type]
        gap = aopc(morf_curves, select=select)  # type: ignore[arg-type]
    included = morf.included
    probs = morf_curves.probs
    lerf_probs = np.stack([r.lerf for r in records])
    precision = np.stack([r.precision for r in records])  # (B, R)
    defined_pr = np.isfinite(precision[:, 0])
    labelled = [r for r in records if r.label is not None]
    validity = [r.validity for r in records if r.validity is not None]
    row: dict[str, Any] = {
        "model": first.model,
        "variant": first.variant,
        "method": first.method,
        "n_images": len(records),
        "n_scored": int(morf.n_included),
        "accuracy": _round(float(np.mean([r.correct for r in labelled])), 5) if labelled else None,
        "morf_aoc": _round(morf.mean, 3),
        "lerf_auc": _round(lerf.mean, 3),
        "aopc": _round(gap.mean, 5),
        "box_roc_auc": _round(_nanmean([r.box_roc_auc for r in records]), 5),
        "box_pr_auc": _round(_nanmean([r.box_pr_auc for r in records]), 5),
        "box_undefined": int(sum(not math.isfinite(r.box_roc_auc) for r in records)),
        "distractor_roc_auc": _round(_nanmean([r.distractor_roc_auc for r in records]), 5),
        "pointing_game": _round(_nanmean([r.pointing_hit for r in records]), 5),
        "positive_fraction": _round(_nanmean([r.positive_fraction for r in records]), 5),
        "chain_valid_images": _round(float(np.mean([v["holds"] for v in validity])), 5) if validity else None,
        "chain_valid_rows": _round(float(np.mean([np.mean(v["row_share"]) for v in validity])), 5) if validity else None,
        **summarise_extra(records, selected=included),
        "curves": {
            "fractions": [round(float(f), 5) for f in steps[0]],
            "morf_mean": (probs[included] / probs[included, :1]).mean(0).round(5).tolist() if included.any() else None,
            "lerf_mean": (lerf_probs[included] / lerf_probs[included, :1]).mean(0).round(5).tolist()
            if included.any() else None,
            "recall": RECALL_GRID.round(3).tolist(),
            "precision_mean": precision[defined_pr].mean(0).round(5).tolist() if defined_pr.any() else None,
        },
        "protocol": {**protocol, "intervals": {
            **INTERVALS, "over": "images", "rule": "<figure>_ci: bootstrap interval of the row figure's mean, "
                                                   "resampling the images in that mean"}},
    }
    digits = {"accuracy": 5, "morf_aoc": 3, "lerf_auc": 3, "aopc": 5}
    row.update(_intervals(records, select, {f: digits.get(f, 5) for f in ROW_FIGURES}))
    return row
