"""The evaluation engine: maps of every (model, method) on the same images, scored per image.

:func:`score_images` scores one batch (the app calls it for one image); :func:`evaluate` runs it
over a data set in fixed chunks, sharded over torchrun ranks and gathered on rank 0, so a sharded
run gives the records of a single-process run. Every image goes through the model's own
preprocessing (:func:`~infsa_viz.preprocess.prepare`), boxes included.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from ..data import LabelledImages
from ..distributed import Dist, shard_indices
from ..maps import METHODS, MapResult, attribute, check_method
from ..metrics import RECALL_GRID, UndefinedMetricWarning, box_auc, box_curves, perturbation_curves, pointing_game
from ..metrics import aopc, lerf_auc, morf_aoc
from .._checks import check_choice, check_float, check_int
from ..metrics.protocol import BASELINES, SCORES, SELECTIONS
from ..preprocess import Prepared, prepare
from ..progress import progress
from .journal import Journal
from .protocols import extra_protocols, finish_rows, sanity_row, score_extra
from .records import ImageRecord, summarise
from .reference import box_oracle, check_evaluation_method, is_reference

__all__ = ["TARGETS", "EvalProtocol", "Evaluation", "default_methods", "evaluate", "score_images"]

log = logging.getLogger(__name__)

#: What a class-explaining map explains: the ground-truth label, the prediction, or a class index.
TARGETS = ("label", "predicted")


def default_methods() -> list[str]:
    """The methods of the published report: every registered method with ``in_default_report``."""
    return [name for name, method in METHODS.items() if method.in_default_report]


@dataclass(frozen=True)
class EvalProtocol:
    """The evaluation's free choices (each metric adds its own fixed rules to the protocol).

    Args:
        steps: MoRF/LeRF removal steps K (K + 1 points, both endpoints).
        baseline: what removed patches become (``"mean"`` = 0 in normalised space).
        score: ``"target"`` (probability of the ground-truth class) or ``"predicted"``.
        select: images in the curve scores: ``"correct"`` (correctly classified) or ``"all"``.
        target: what class-explaining maps (gradients) explain: ``"label"`` (default, the
            ground truth), ``"predicted"`` or a class index.
        seed: tie-breaking seed (and random-map seed).
        chunk: images per map call (also bounds memory of dense spectral maps).
        batch_size: perturbed copies per forward pass (does not change the results).
        subsample: deletion/insertion, positive/negative perturbation and the class switch run
            on the images with index below this (0 = off); see :mod:`.protocols`.
        insertion_steps: deletion/insertion steps.
        blur_sigma: deletion/insertion blur sigma in pixels (``None``: patch_size / 2).
        road_images: ROAD runs on the images with index below this (0 = off).
        road_steps: ROAD steps (fractions 0 .. (K-1)/K).
        road_noise: ROAD's imputation noise (normalised units).
        sanity_images: the sanity checks run on this many first images (0 = off).
    """

    steps: int = 20
    baseline: str = "mean"
    score: str = "target"
    select: str = "correct"
    target: str | int = "label"
    seed: int = 0
    chunk: int = 50
    batch_size: int = 512
    subsample: int = 100
    insertion_steps: int = 20
    blur_sigma: float | None = None
    road_images: int = 30
    road_steps: int = 8
    road_noise: float = 0.01
    sanity_images: int = 30

    def __post_init__(self) -> None:
        check_int("steps", self.steps, minimum=1)
        check_choice("baseline", self.baseline, tuple(b for b in BASELINES if b != "zero"))
        check_choice("score", self.score, SCORES)
        check_choice("select", self.select, SELECTIONS)
        if not (self.target in TARGETS or (isinstance(self.target, int) and not isinstance(self.target, bool)
                                           and self.target >= 0)):
            raise ValueError(f"target={self.target!r} is invalid; expected 'label', 'predicted' or a class index >= 0")
        check_int("seed", self.seed, minimum=0)
        check_int("chunk", self.chunk, minimum=1)
        check_int("batch_size", self.batch_size, minimum=1)
        for name in ("subsample", "road_images", "sanity_images"):
            check_int(name, getattr(self, name), minimum=0)
        check_int("insertion_steps", self.insertion_steps, minimum=1)
        check_int("road_steps", self.road_steps, minimum=2)
        if self.blur_sigma is not None:
            check_float("blur_sigma", self.blur_sigma, positive=True)
        check_float("road_noise", self.road_noise, minimum=0.0)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self),
                "target_rule": "class-explaining maps (gradient family) explain "
                               + ("the ground-truth label" if self.target == "label" else
                                  "the model's prediction" if self.target == "predicted" else f"class {self.target}")}


def score_images(
    model: nn.Module, data: LabelledImages, method: str, *, protocol: EvalProtocol = EvalProtocol(),
    name: str = "model", indices: Sequence[int] | None = None, options: dict[str, Any] | None = None,
    prepared: Prepared | None = None,
) -> tuple[list[ImageRecord], MapResult, dict[str, Any]]:
    """Preprocess ``data`` for ``model``, compute ``method``'s maps and score every image.

    Args:
        model: the model (eval mode is set).
        data: images in source pixels, labels (``-1`` where unknown, e.g. an upload: the
            model's prediction is then scored and explained, and the record's label is ``None``)
            and boxes.
        method: a registered map method, or a reference map (``"box_oracle"``, which reads the
            target boxes; :mod:`~infsa_viz.evaluation.reference`).
        protocol: the evaluation choices.
        name: the model's name in the records.
        indices: the images' positions in the whole data set (default ``0..n-1``).
        options: map options (default the method's own).
        prepared: ``prepare(model, data.images)`` when the caller already has it (default: made here).

    Returns:
        ``(records, map result, protocols)``: one :class:`ImageRecord` per image, the maps, and
        the resolved protocols of the metrics (``perturbation``, ``box_auc``, ``pointing_game``)
        with ``steps``, the curves' ``(fractions, removed)``.
    """
    model.eval()
    prepared = prepare(model, data.images) if prepared is None else prepared
    x = prepared.tensor
    size = tuple(x.shape[-2:])
    with torch.no_grad():
        logits = model(x).double()  # (B, classes)
    given = np.asarray(data.labels, dtype=np.int64)
    known = given >= 0
    labels = np.where(known, given, logits.argmax(-1).numpy())  # unknown labels: the prediction
    boxes = [prepared.boxes(i, b) for i, b in enumerate(data.boxes)]
    negatives = None if data.negative_boxes is None else [prepared.boxes(i, b) for i, b in enumerate(data.negative_boxes)]
    spec = None if is_reference(check_evaluation_method(method)) else check_method(method)
    extra = dict(options or {})
    if spec is not None and spec.seeded and "seed" not in extra:  # one random map per chunk, reproducible from the protocol
        extra["seed"] = protocol.seed + (int(indices[0]) if indices is not None and len(indices) else 0)
    target: int | Tensor | None = None
    if spec is not None and spec.explains_class:
        target = (torch.as_tensor(labels) if protocol.target == "label" else
                  None if protocol.target == "predicted" else int(protocol.target))
    if spec is None:  # a reference map: made from the target boxes, not from the model
        if extra:
            raise ValueError(f"options {sorted(extra)} do not apply to reference map {method!r}")
        result = box_oracle(boxes, image_size=size, patch_size=model.patch_size)  # type: ignore[arg-type]
    else:
        result = attribute(model, x, method, target=target, **extra)
    curves = perturbation_curves(model, x, result.maps, labels, patch_size=model.patch_size, order="both",
                                 steps=protocol.steps, baseline=protocol.baseline, score=protocol.score,
                                 seed=protocol.seed, batch_size=protocol.batch_size)
    with warnings.catch_warnings():  # undefined images are nan in the records and counted in the rows
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        auc = box_auc(result.maps, boxes, image_size=size, negatives_boxes=negatives)
        point = pointing_game(result.maps, boxes, image_size=size)
        morf = morf_aoc(curves["morf"], select="all").per_image
        lerf = lerf_auc(curves["lerf"], select="all").per_image
        gap = aopc(curves["morf"], select="all").per_image
    precision = [np.full(len(RECALL_GRID), np.nan) if c is None else c.interpolated_precision()
                 for c in box_curves(result.maps, boxes, image_size=size)]
    positions = list(range(len(labels))) if indices is None else [int(i) for i in indices]
    beyond, beyond_protocols = score_extra(model, x, labels, result, positions=positions, boxes=boxes,
                                           negatives=negatives, negative_labels=data.negative_labels, size=size,
                                           protocol=protocol, map_options=extra)
    names = list(data.names) if data.names else [str(i) for i in positions]
    variant = getattr(getattr(model, "config", None), "attention", "unknown")
    maps = result.maps.double()
    records = []
    for i, position in enumerate(positions):
        records.append(ImageRecord(
            model=name, variant=variant, method=method, index=position, name=names[i],
            label=int(labels[i]) if known[i] else None, logits=logits[i].numpy(),
            target=None if result.target is None else int(result.target[i]),
            scored=int(curves["morf"].scored_class[i]), morf=curves["morf"].probs[i], lerf=curves["lerf"].probs[i],
            morf_aoc=float(morf[i]), lerf_auc=float(lerf[i]), aopc=float(gap[i]),
            box_roc_auc=float(auc.roc_auc[i]), box_pr_auc=float(auc.pr_auc[i]),
            distractor_roc_auc=math.nan if auc.negatives_roc_auc is None else float(auc.negatives_roc_auc[i]),
            positive_fraction=float(auc.positive_fraction[i]), pointing_hit=float(point.hits[i]),
            precision=precision[i], map_min=float(maps[i].min()), map_max=float(maps[i].max()),
            map_mass=float(maps[i].abs().sum()),
            validity=None if result.validity is None else result.validity.for_image(i),
            **{k: float(v[i]) for k, v in beyond.items()},
        ))
    protocols = {"perturbation": {k: v for k, v in curves["morf"].protocol.items() if k != "order"},
                 "box_auc": auc.protocol, "pointing_game": point.protocol,
                 "beyond_morf": {**extra_protocols(protocol), **beyond_protocols},
                 "steps": (curves["morf"].fractions, curves["morf"].removed)}
    return records, result, protocols


@dataclass
class Evaluation:
    """What :func:`evaluate` returns on rank 0.

    Attributes:
        records: every :class:`ImageRecord`, by model, method, then image.
        rows: one summary row per (model, method), each with its full ``protocol``.
        protocol: the run's settings.
        dataset: the data set's description.
        comparisons: ``paired_tests``, ``benchmark_quality`` and ``seeds``
            (:func:`~infsa_viz.evaluation.comparisons.compare`).
        rankings: each method's rank on each criterion and its mean rank, per model
            (:func:`~infsa_viz.metrics.rank_methods`).
    """

    records: list[ImageRecord]
    rows: list[dict[str, Any]]
    protocol: dict[str, Any]
    dataset: dict[str, Any]
    rankings: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    comparisons: dict[str, Any] = field(default_factory=dict)


def _agreed(values: list[Any]) -> Any:
    """One value where every chunk agrees; otherwise the range (numbers) or a note."""
    if all(v == values[0] for v in values):
        return values[0]
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return {"varies_by_chunk": True, "min": min(values), "max": max(values)}
    return {"varies_by_chunk": True}


def _merged(dicts: list[dict[str, Any]]) -> dict[str, Any]:
    """JSON-able entries of per-chunk dicts, each key's values merged by :func:`_agreed`."""
    keys = dict.fromkeys(k for d in dicts for k, v in d.items() if isinstance(v, (str, int, float, bool, list))
                         or v is None)
    return {k: _agreed([d.get(k) for d in dicts]) for k in keys}


def _row_protocol(protocol: EvalProtocol, method: str, chunks: list[tuple[MapResult, dict[str, Any]]]) -> dict[str, Any]:
    """The protocol of one (model, method) row: settings, the map's options and metadata over all
    chunks (a value that differs between chunks, e.g. a solver's residual, is given as a range),
    and the metric protocols."""
    results = [result for result, _ in chunks]
    return {
        "evaluation": protocol.to_dict(),
        "map": {"method": method, "options": _merged([r.options for r in results]),
                **_merged([r.metadata for r in results])},
        **{k: v for k, v in chunks[0][1].items() if k != "steps"},
        "aggregation": f"curve scores: mean over the '{protocol.select}' images whose score is defined "
                       "(n_scored; ROAD: those of its subset, n_road); box and pointing scores: mean over images where they are defined "
                       "(box_undefined counts the others)",
    }


def evaluate(
    models: Sequence[tuple[str, nn.Module]],
    methods: Sequence[str],
    data: LabelledImages,
    *,
    protocol: EvalProtocol = EvalProtocol(),
    dist: Dist = Dist(),
    journal: Journal | None = None,
) -> Evaluation | None:
    """Score every ``(model, method)`` on ``data``; the :class:`Evaluation` on rank 0, ``None`` elsewhere.

    Args:
        models: ``(name, model)`` pairs; each model reads the images through its own preprocessing.
        methods: map methods (keys of :data:`infsa_viz.maps.METHODS`).
        data: images, labels and boxes in source pixels.
        protocol: the evaluation choices.
        dist: torchrun rank/world (default single process).
        journal: where finished chunks are kept and read back (resuming a killed run); default none.

    Raises:
        ValueError: no model, no method, an unknown method, or more processes than chunks.
    """
    if not models:
        raise ValueError("models is empty; expected at least one (name, model) pair")
    if not methods:
        raise ValueError(f"methods is empty; expected at least one of {sorted(METHODS)}")
    for method in methods:
        check_evaluation_method(method)
    n = len(data)
    all_chunks = [list(range(s, min(s + protocol.chunk, n))) for s in range(0, n, protocol.chunk)]
    chunks = [all_chunks[i] for i in shard_indices(len(all_chunks), dist)]
    if not chunks:
        raise ValueError(f"{n} images in chunks of {protocol.chunk} leave rank {dist.rank} of "
                         f"{dist.world_size} without work; use fewer processes")
    records: list[ImageRecord] = []
    rows: list[dict[str, Any]] = []
    for name, model in models:
        for method in methods:
            desc = f"{getattr(model.config, 'attention', name)} {method}" if dist.is_main else None
            part: list[ImageRecord] = []
            done: list[tuple[int, MapResult, dict[str, Any]]] = []
            for chunk in progress(chunks, desc=desc, unit="chunk"):
                entry = None if journal is None else journal.load(name, method, chunk)
                if entry is None:
                    entry = score_images(model, data.subset(chunk), method, protocol=protocol, name=name,
                                         indices=chunk)
                    if journal is not None:
                        journal.save(name, method, chunk, *entry)
                found, result, parts = entry
                part += found
                done.append((chunk[0], result, parts))
            gathered = dist.gather((part, done))
            if dist.is_main:
                merged = sorted((r for p, _ in gathered for r in p), key=lambda r: r.index)  # type: ignore[union-attr]
                ordered = sorted((c for _, d in gathered for c in d), key=lambda c: c[0])  # type: ignore[union-attr]
                row_protocol = _row_protocol(protocol, method, [(r, parts) for _, r, parts in ordered])
                records += merged
                rows.append(summarise(merged, select=protocol.select, steps=ordered[0][2]["steps"],
                                      protocol=row_protocol))
                log.info("%s %s: MoRF-AOC %s, PR-AUC %s", name, method, rows[-1]["morf_aoc"], rows[-1]["box_pr_auc"])
                if protocol.sanity_images and not is_reference(check_evaluation_method(method)):
                    _add_sanity(rows[-1], model, data, method, protocol)
    if not dist.is_main:
        return None
    rankings = finish_rows(rows)
    from .comparisons import compare

    return Evaluation(records=records, rows=rows, dataset=data.description,
                      protocol={"settings": protocol.to_dict(), "world_size": dist.world_size}, rankings=rankings,
                      comparisons=compare(records, rows, select=protocol.select, seed=protocol.seed))


def _add_sanity(row: dict[str, Any], model: nn.Module, data: LabelledImages, method: str,
                protocol: EvalProtocol) -> None:
    """The sanity checks of one row on the first ``protocol.sanity_images`` images (rank 0)."""
    part = data.subset(range(min(protocol.sanity_images, len(data))))
    x = prepare(model, part.images).tensor
    labels = np.asarray(part.labels, dtype=np.int64)
    if (labels < 0).any():
        with torch.no_grad():
            labels = np.where(labels >= 0, labels, model(x).argmax(-1).numpy())
    options = {"seed": protocol.seed} if check_method(method).seeded else {}
    report = sanity_row(model, x, labels, method, options=options, protocol=protocol)
    row["sanity_randomised_spearman"] = report["randomised_spearman"]
    row["sanity_randomised_ssim"] = report["randomised_ssim"]
    row["sanity_random_logit_spearman"] = None if report["random_logit"] is None else \
        report["random_logit"]["spearman"]["mean"]
    row["sanity_fails"] = report["fails"]
    row["sanity"] = report
