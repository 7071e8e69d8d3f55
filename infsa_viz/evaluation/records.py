"""The evaluation record: one map of one model on one image, scored; and its aggregation.

:class:`ImageRecord` is what the engine produces and every reader consumes (the JSON/CSV/HTML
writer, the CLI, the app's per-image badges and curves). Its figures live in one mapping keyed by
the registered figures (:data:`~infsa_viz.metrics.registry.FIGURES`); :func:`summarise` turns the
records of one (model, method) into a table row, each figure averaged over the images its
declaration names.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..metrics.registry import FIGURES, METRICS, Figure, Metric
from .intervals import bootstrap_ci

__all__ = ["INTERVALS", "ImageRecord", "interval_figures", "per_image_figures", "scored_mask", "summarise"]


@dataclass(frozen=True, eq=False)
class ImageRecord:
    """One map of one model on one image, with every figure the evaluation computed for it.

    Undefined figures are ``nan`` (e.g. box scores of an image without a box, curve scores with
    ``p_0 = 0``); the reason is in the protocol of the row that aggregates the record. Figures and
    curves are also attributes: ``record.morf_aoc`` is ``record.figures["morf_aoc"]``,
    ``record.morf`` is ``record.curves["morf"]`` (a registered figure that was not measured reads
    as ``nan``).

    Attributes:
        model: the model's name (its directory as given).
        variant: the model's attention variant.
        method: the map method.
        index: the image's position in the evaluated data set.
        name: the image's name (``"test:17"``, a file path).
        label: ground-truth class, or ``None`` (an upload).
        logits: ``(classes,)`` the model's logits on the clean image.
        target: the class the map explains (methods that explain a class), else ``None``.
        explained: the class explained and scored, whose probability the perturbation curves track (the
            record's :attr:`ForwardRecord.explained <infsa_viz.forward.ForwardRecord.explained>`).
        figures: figure key (:attr:`Figure.key <infsa_viz.metrics.registry.Figure.key>`) → value.
        curves: per-image curves of the metrics (``morf``, ``lerf``: ``(K + 1,)`` probabilities of
            ``explained`` as patches are removed; ``precision``: interpolated precision at
            :data:`~infsa_viz.metrics.RECALL_GRID`).
        map_min, map_max, map_mass: the map's minimum, maximum and ``Σ|m|``.
        validity: where the absorbing-chain reading of the map's graph holds
            (:meth:`~infsa_viz.maps.Validity.for_image`), or ``None`` for maps that do not rely on it.
    """

    model: str
    variant: str
    method: str
    index: int
    name: str
    label: int | None
    logits: np.ndarray
    target: int | None
    explained: int
    figures: dict[str, float] = field(default_factory=dict)
    curves: dict[str, np.ndarray] = field(default_factory=dict)
    map_min: float = math.nan
    map_max: float = math.nan
    map_mass: float = math.nan
    validity: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        # Only called when normal lookup fails: figures and curves by name.
        values = self.__dict__
        for group in ("figures", "curves"):
            if group in values and name in values[group]:
                return values[group][name]
        if any(f.key == name for f in FIGURES.values()):
            return math.nan
        raise AttributeError(f"{type(self).__name__!r} has no attribute or figure {name!r}")

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
        """A flat row: every scalar field and figure (``nan`` → ``None``), logits as a list, no curves."""
        row: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("curves", "figures"):
                continue
            if f.name == "logits":
                value = [round(float(v), 6) for v in value]
            elif f.name == "validity":
                value = None if value is None else value["holds"]
            row[f.name] = _none_if_nan(value)
        for key, value in self.figures.items():
            row[key] = _none_if_nan(value)
        if "importance" in self.curves:  # the model's per-object importance (evidence ground truth)
            row["importance"] = [_none_if_nan(round(float(v), 6)) for v in self.curves["importance"]]
        row["predicted"] = self.predicted
        row["probability"] = self.probability
        return row


def _none_if_nan(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


#: How every ``<figure>_ci`` of a row is computed (:func:`~infsa_viz.evaluation.intervals.bootstrap_ci`).
INTERVALS = {"method": "percentile", "confidence": 0.95, "n_resamples": 2000, "seed": 0}


def _measured(records: Sequence[ImageRecord]) -> list[Metric]:
    """The registered metrics with at least one figure in the records, in registry order."""
    keys = set().union(*(r.figures for r in records)) if records else set()
    return [m for m in METRICS.values() if any(f.key in keys for f in m.figures)]


def scored_mask(records: Sequence[ImageRecord], *, select: str) -> np.ndarray:
    """``(n,) bool``: the images a ``"scored"`` figure counts — the ``select`` images (``"correct"``:
    the clean prediction equals the label, or the explained class where the label is unknown) with a
    defined MoRF score where MoRF was measured."""
    keep = np.ones(len(records), dtype=bool)
    if select == "correct":
        keep = np.array([r.predicted == (r.explained if r.label is None else r.label) for r in records], dtype=bool)
    if any("morf_aoc" in r.figures for r in records):
        keep &= np.isfinite(np.array([r.figures.get("morf_aoc", math.nan) for r in records], dtype=np.float64))
    return keep


def interval_figures(records: Sequence[ImageRecord]) -> list[Figure]:
    """The row figures that get an interval and paired tests: every table figure measured."""
    return [f for m in _measured(records) for f in m.figures if f.table and any(f.key in r.figures for r in records)]


def per_image_figures(records: Sequence[ImageRecord], *, select: str) -> dict[str, np.ndarray]:
    """Each row figure's per-image values, ``nan`` where the image is not in the row's mean.

    The row figure is the mean of these values over the finite ones: ``"scored"`` figures count
    the ``select`` images (``"correct"``: the clean prediction equals the label, or the explained
    class where the label is unknown) with a defined score, the others the images where they are
    defined, accuracy the labelled images. Paired tests and intervals read the same values.

    Returns:
        ``accuracy`` and every measured table figure → ``(n,) float64`` in the order of ``records``.
    """
    eligible = np.ones(len(records), dtype=bool)
    if select == "correct":
        eligible = np.array([r.predicted == (r.explained if r.label is None else r.label) for r in records], dtype=bool)
    out = {"accuracy": np.array([math.nan if r.label is None else float(r.correct) for r in records])}
    for figure in interval_figures(records):
        values = np.array([r.figures.get(figure.key, math.nan) for r in records], dtype=np.float64)
        out[figure.name] = np.where(eligible, values, math.nan) if figure.images == "scored" else values
    return out


def _round(value: float, digits: int) -> float | None:
    return None if not math.isfinite(value) else round(value, digits)


def _intervals(records: Sequence[ImageRecord], select: str) -> dict[str, Any]:
    """``<figure>_ci``: ``[low, high]`` bootstrap interval over images of every row figure (``None``
    without values)."""
    digits = {f.name: f.digits for f in FIGURES.values()}
    out: dict[str, Any] = {}
    for name, values in per_image_figures(records, select=select).items():
        finite = values[np.isfinite(values)]
        if not finite.size:
            out[f"{name}_ci"] = None
            continue
        ci = bootstrap_ci(finite, **INTERVALS)  # type: ignore[arg-type]
        out[f"{name}_ci"] = [_round(ci.low, digits.get(name, 5)), _round(ci.high, digits.get(name, 5))]
    return out


def summarise(records: Sequence[ImageRecord], *, select: str, protocol: dict[str, Any]) -> dict[str, Any]:
    """One table row from the records of one (model, method), with its ``protocol``.

    Each measured figure is the mean over the images its declaration names (``"scored"``: the
    ``select`` images with a defined MoRF score; ``"all"``: every image where it is defined),
    rounded to its digits; each metric may add its own row entries (counts, mean curves).
    """
    first = records[0]
    scored = scored_mask(records, select=select)
    labelled = [r for r in records if r.label is not None]
    validity = [r.validity for r in records if r.validity is not None]
    row: dict[str, Any] = {
        "model": first.model,
        "variant": first.variant,
        "method": first.method,
        "n_images": len(records),
        "n_scored": int(scored.sum()),
        "accuracy": _round(float(np.mean([r.correct for r in labelled])), 5) if labelled else None,
    }
    curves: dict[str, Any] = {}
    for metric in _measured(records):
        per_image = {f.key: np.array([r.figures.get(f.key, math.nan) for r in records], dtype=np.float64)
                     for f in metric.figures}
        for figure in metric.figures:
            values = per_image[figure.key]
            ok = np.isfinite(values) & (scored if figure.images == "scored" else True)
            row[figure.name] = _round(float(values[ok].mean()), figure.digits) if ok.any() else None
        if metric.count:
            lead = metric.figures[0]
            row[metric.count] = int((np.isfinite(per_image[lead.key]) & (scored if lead.images == "scored" else True)).sum())
        extra = dict(metric.row_extras(records, scored, protocol.get(metric.name, {})))
        curves.update(extra.pop("curves", {}))
        row.update(extra)
    row["chain_valid_images"] = _round(float(np.mean([v["holds"] for v in validity])), 5) if validity else None
    row["chain_valid_rows"] = (_round(float(np.mean([np.mean(v["row_share"]) for v in validity])), 5)
                               if validity else None)
    row["curves"] = curves
    row["protocol"] = {**protocol, "intervals": {
        **INTERVALS, "over": "images", "rule": "<figure>_ci: bootstrap interval of the row figure's mean, "
                                               "resampling the images in that mean"}}
    row.update(_intervals(records, select))
    return row
