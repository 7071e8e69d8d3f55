"""The evaluation engine: maps of every (model, method) on the same images, scored per image.

:func:`score_images` scores one batch (the app calls it for one image) with every selected
metric of the registry (:data:`~infsa_viz.metrics.registry.METRICS`); :func:`evaluate` runs it
over a data set in fixed chunks, sharded over torchrun ranks and gathered on rank 0, so a sharded
run gives the records of a single-process run. Every image goes through the model's own
preprocessing (:func:`~infsa_viz.preprocess.prepare`), boxes included.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from ..data import LabelledImages
from ..estimate import format_seconds
from ..distributed import Dist, shard_indices
from ..maps import METHODS, GroundTruth, MapResult, attribute, check_method
from ..metrics.registry import RowScoring, Scores, Scoring
from ..forward import ForwardRecord
from ..preprocess import Prepared, prepare
from ..plugins import PluginError, plugin_call, plugin_of
from ..progress import progress
from .budget import check_evaluation
from .interventions import ObjectImportance, object_importance
from .journal import Journal
from .records import ImageRecord, summarise
from .settings import EvalSettings

__all__ = ["EvalSettings", "Evaluation", "chunk_record", "default_methods", "evaluate", "finish_rows",
           "needs_evidence", "reference_methods", "row_scoring", "score_images", "score_metrics", "scoring_context"]

log = logging.getLogger(__name__)


def default_methods() -> list[str]:
    """The methods of the published report: every registered method with ``in_default_report``."""
    return [name for name, method in METHODS.items() if method.in_default_report]


def reference_methods() -> list[str]:
    """The reference rows ``--references`` adds: every registered floor or ceiling map that is cheap
    enough for a whole split (:attr:`~infsa_viz.maps.MapMethod.with_references`)."""
    return [name for name, method in METHODS.items() if method.role != "explanation" and method.with_references]


def _truth(prepared: Prepared, data: LabelledImages, evidence: ObjectImportance | None) -> GroundTruth:
    """The images' ground truth in model-input pixels (with the scene objects' masks and importance)."""
    boxes = [prepared.boxes(i, b) for i, b in enumerate(data.boxes)]
    scenes = None if data.scenes is None else list(data.scenes)
    if evidence is None:
        return GroundTruth(boxes=boxes, scenes=scenes)
    return GroundTruth(boxes=boxes, objects=evidence.objects, masks=evidence.masks, importance=evidence.prob_drop,
                       scenes=scenes)


def needs_evidence(protocol: EvalSettings, methods: Sequence[str]) -> bool:
    """Whether a run reads the scene objects' importance (the evidence metric or an oracle)."""
    return "evidence" in protocol.metrics or any(check_method(m).needs_truth for m in methods)


def _scatter(metric: Any, scores: Scores, rows: np.ndarray, n: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A metric's values on ``rows`` of a chunk of ``n`` images, ``nan`` (curves: ``nan`` rows) elsewhere."""
    values = {}
    for figure in metric.figures:
        full = np.full(n, np.nan)
        full[rows] = np.asarray(scores.values[figure.key], dtype=np.float64)
        values[figure.key] = full
    curves = {}
    for key, curve in scores.curves.items():
        full = np.full((n, *np.shape(curve)[1:]), np.nan)
        full[rows] = curve
        curves[key] = full
    return values, curves


def score_metrics(metrics: Sequence[Any], ctx: Scoring) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray],
                                                                 dict[str, Any]]:
    """Every metric of ``metrics`` on the images of ``ctx`` (each on its own image subset).

    Returns:
        ``(figures, curves, protocols)``: figure key → ``(B,)`` values (``nan`` where a metric did not
        run), curve name → ``(B, …)``, metric name → its protocol (with ``ran``).
    """
    figures: dict[str, np.ndarray] = {}
    curves: dict[str, np.ndarray] = {}
    protocols: dict[str, Any] = {}
    n, settings = len(ctx), ctx.settings
    for metric in metrics:
        rows = np.arange(n) if metric.subset is None else np.flatnonzero(ctx.positions < settings[metric.subset])
        scores = Scores({f.key: np.full(0, np.nan) for f in metric.figures})
        if rows.size:
            scoring = ctx if rows.size == n else ctx.take(rows)
            plugin = plugin_of(metric)
            scores = metric.score(scoring) if plugin is None else \
                plugin_call(plugin, f"metric {metric.name!r}", metric.score, scoring)
            if not isinstance(scores, Scores):
                raise PluginError(f"plugin {plugin!r} (metric {metric.name!r} returned {type(scores).__name__}; "
                                  "expected Scores)") if plugin else TypeError(f"metric {metric.name!r} returned "
                                                                               f"{type(scores).__name__}")
        values, kept = _scatter(metric, scores, rows, n)
        figures.update(values)
        curves.update(kept)
        protocols[metric.name] = {**metric.describe(settings), **scores.protocol, "ran": bool(rows.size)}
    return figures, curves, protocols


def chunk_record(model: nn.Module, data: LabelledImages, protocol: EvalSettings = EvalSettings(), *,
                 capture: bool = False, prepared: Prepared | None = None) -> ForwardRecord:
    """The :class:`~infsa_viz.forward.ForwardRecord` of ``data`` for ``model``: the images prepared once
    (the model's own preprocessing), their labels and the run's target; ``capture`` when map methods
    that read attention follow (their one forward then records it)."""
    prepared = prepare(model, data.images) if prepared is None else prepared
    return ForwardRecord(model, prepared.tensor, labels=data.labels, target=protocol.target, prepared=prepared,
                         capture=capture)


def scoring_context(
    model: nn.Module, data: LabelledImages, method: str, *, protocol: EvalSettings = EvalSettings(),
    indices: Sequence[int] | None = None, options: dict[str, Any] | None = None, prepared: Prepared | None = None,
    evidence: ObjectImportance | None = None, record: ForwardRecord | None = None, result: MapResult | None = None,
) -> tuple[Scoring, MapResult, Tensor, np.ndarray]:
    """What every metric of :func:`score_images` sees, before any metric runs: the
    :class:`~infsa_viz.metrics.registry.Scoring` of ``method``'s maps on ``data``, the map result,
    the clean logits ``(B, classes)`` and which images have a label (arguments as :func:`score_images`)."""
    spec = check_method(method)
    if record is None:
        record = chunk_record(model, data, protocol, capture=spec.reads_attention, prepared=prepared)
    prepared = record.prepared if record.prepared is not None else prepare(model, data.images)
    negatives = None if data.negative_boxes is None else [prepared.boxes(i, b) for i, b in enumerate(data.negative_boxes)]
    positions = np.arange(len(record)) if indices is None else np.asarray([int(i) for i in indices], dtype=np.int64)
    if evidence is None and data.scenes is not None and needs_evidence(protocol, [method]):
        evidence = object_importance(model, data, explained=record.explained, indices=positions,
                                     batch_size=protocol.batch_size)
    truth = _truth(prepared, data, evidence)
    shared = {k: v for k, v in protocol.resolved().items() if k in spec.from_settings}
    extra = {**shared, **protocol.options_for(method), **(options or {})}
    if spec.seeded and "seed" not in extra:  # one random map per chunk, reproducible from the settings
        extra["seed"] = protocol.seed + (int(positions[0]) if len(positions) else 0)
    if result is None:
        result = attribute(record, method, truth=truth if spec.needs_truth else None, **extra)

    def redraw(rows: np.ndarray, classes: np.ndarray) -> Tensor:
        if not spec.explains_class:  # a map that explains no class does not move
            return result.maps[rows]
        return attribute(record.take(rows).explaining(classes), method, **extra).maps

    ctx = Scoring(record=record, maps=result.maps, positions=positions, truth=truth, negatives=negatives,
                  negative_labels=data.negative_labels, settings=protocol.resolved(), redraw=redraw)
    return ctx, result, record.logits, record.known


def score_images(
    model: nn.Module, data: LabelledImages, method: str, *, protocol: EvalSettings = EvalSettings(),
    name: str = "model", indices: Sequence[int] | None = None, options: dict[str, Any] | None = None,
    prepared: Prepared | None = None, evidence: ObjectImportance | None = None, record: ForwardRecord | None = None,
    result: MapResult | None = None,
) -> tuple[list[ImageRecord], MapResult, dict[str, Any]]:
    """Preprocess ``data`` for ``model``, compute ``method``'s maps and score every image.

    Args:
        model: the model (eval mode is set).
        data: images in source pixels, labels (``-1`` where unknown, e.g. an upload: the
            model's prediction is then scored and explained, and the record's label is ``None``)
            and boxes.
        method: a registered map method (reference maps such as ``"box_oracle"`` read the
            images' ground truth).
        protocol: the evaluation settings (:class:`EvalSettings`).
        name: the model's name in the records.
        indices: the images' positions in the whole data set (default ``0..n-1``).
        options: map options (default: the method's own, with the settings' map selectors).
        prepared: ``prepare(model, data.images)`` when the caller already has it (default: made here).
        evidence: the images' :func:`~infsa_viz.evaluation.interventions.object_importance` for the
            run's target class when the caller already has it (default: measured here when the data
            holds scenes and the run reads it; :func:`evaluate` measures it once per model and chunk).
        record: the images' :class:`~infsa_viz.forward.ForwardRecord` (:func:`chunk_record`) when the
            caller already has it: :func:`evaluate` builds one per model and chunk, so every method
            reads the same clean forward (default: built here).
        result: ``method``'s maps of these images when the caller already has them (the app shows a
            map before its figures; default: computed here).

    Returns:
        ``(records, map result, protocols)``: one :class:`ImageRecord` per image, the maps, and
        each metric's resolved protocol under its name (with ``steps``, the MoRF curves'
        ``(fractions, removed)``, when MoRF ran).
    """
    ctx, result, logits, known = scoring_context(model, data, method, protocol=protocol, indices=indices,
                                                  options=options, prepared=prepared, evidence=evidence,
                                                  record=record, result=result)
    labels, positions = ctx.record.filled_labels, ctx.positions
    figures, curves, protocols = score_metrics(protocol.image_metrics(), ctx)
    if "fractions" in protocols.get("perturbation", {}):
        steps = protocols["perturbation"]
        protocols["steps"] = (np.asarray(steps["fractions"]), np.asarray(steps["removed"]))
    explained = ctx.explained  # the class every metric scored
    names = list(data.names) if data.names else [str(i) for i in positions]
    variant = getattr(getattr(model, "config", None), "attention", "unknown")
    maps = result.maps.double()
    records = [ImageRecord(
        model=name, variant=variant, method=method, index=int(position), name=names[i],
        label=int(labels[i]) if known[i] else None, logits=logits[i].numpy(),
        target=None if result.target is None else int(result.target[i]), explained=int(explained[i]),
        figures={k: float(v[i]) for k, v in figures.items()}, curves={k: v[i] for k, v in curves.items()},
        map_min=float(maps[i].min()), map_max=float(maps[i].max()), map_mass=float(maps[i].abs().sum()),
        validity=None if result.validity is None else result.validity.for_image(i),
    ) for i, position in enumerate(positions)]
    return records, result, protocols


@dataclass
class Evaluation:
    """What :func:`evaluate` returns on rank 0.

    Attributes:
        records: every :class:`ImageRecord`, by model, method, then image.
        rows: one summary row per (model, method), each with its full ``protocol``.
        protocol: the run's settings.
        dataset: the data set's description.
        comparisons: the report's sections beyond its rows (``paired_tests``, ``benchmark_quality``,
            ``seeds``, ``verdict``); empty from :func:`evaluate`, filled by
            :func:`infsa_viz.stats.with_comparisons`.
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


def _row_protocol(protocol: EvalSettings, method: str, chunks: list[tuple[MapResult, dict[str, Any]]]) -> dict[str, Any]:
    """The protocol of one (model, method) row: settings, the map's options and metadata over all
    chunks (a value that differs between chunks, e.g. a solver's residual, is given as a range),
    and each metric's protocol (from the first chunk it ran on)."""
    results = [result for result, _ in chunks]
    metrics: dict[str, Any] = {}
    for metric in [*protocol.image_metrics(), *protocol.row_metrics()]:
        found = [parts[metric.name] for _, parts in chunks if metric.name in parts]
        ran = [p for p in found if p.get("ran")]
        if found:
            metrics[metric.name] = {k: v for k, v in (ran or found)[0].items() if k != "ran"}
    return {
        "evaluation": protocol.to_dict(),
        "map": {"method": method, "options": _merged([r.options for r in results]),
                **_merged([r.metadata for r in results])},
        **metrics,
        "aggregation": f"'scored' figures (curve scores): mean over the '{protocol.select}' images whose MoRF "
                       "score is defined (n_scored; within a metric's image subset, its count); other figures: "
                       "mean over images where they are defined (box_undefined counts the images without a box score)",
    }


def evaluate(
    models: Sequence[tuple[str, nn.Module]],
    methods: Sequence[str],
    data: LabelledImages,
    *,
    protocol: EvalSettings = EvalSettings(),
    dist: Dist = Dist(),
    journal: Journal | None = None,
) -> Evaluation | None:
    """Score every ``(model, method)`` on ``data``; the :class:`Evaluation` on rank 0, ``None`` elsewhere.

    The evaluation holds the per-image records, the rows (each figure with its interval over images)
    and the rankings; the statistics that judge them (paired tests, benchmark headroom, seeds, the
    verdict) are added by :func:`infsa_viz.stats.with_comparisons`.

    Args:
        models: ``(name, model)`` pairs; each model reads the images through its own preprocessing.
        methods: map methods (keys of :data:`infsa_viz.maps.METHODS`, reference maps included).
        data: images, labels and boxes in source pixels.
        protocol: the evaluation settings (:class:`EvalSettings`).
        dist: torchrun rank/world (default single process).
        journal: where finished chunks are kept and read back (resuming a killed run); default none.

    Raises:
        ValueError: no model, no method, an unknown method, more processes than chunks, or a map or
            metric call that cannot fit the memory available or its bound
            (:func:`~infsa_viz.evaluation.budget.check_evaluation`, before any image is scored).
    """
    if not models:
        raise ValueError("models is empty; expected at least one (name, model) pair")
    if not methods:
        raise ValueError(f"methods is empty; expected at least one of {sorted(METHODS)}")
    for method in methods:
        check_method(method)
    n = len(data)
    check_evaluation(models, methods, protocol, n_images=n)
    all_chunks = [list(range(s, min(s + protocol.chunk, n))) for s in range(0, n, protocol.chunk)]
    chunks = [all_chunks[i] for i in shard_indices(len(all_chunks), dist)]
    if not chunks:
        raise ValueError(f"{n} images in chunks of {protocol.chunk} leave rank {dist.rank} of "
                         f"{dist.world_size} without work; use fewer processes")
    records: list[ImageRecord] = []
    rows: list[dict[str, Any]] = []
    evidence_wanted = data.scenes is not None and needs_evidence(protocol, methods)
    capture = any(check_method(m).reads_attention for m in methods)
    clock = _Clock(len(models) * len(chunks) * len(methods))
    for name, model in models:
        found: dict[str, list[ImageRecord]] = {m: [] for m in methods}
        done: dict[str, list[tuple[int, MapResult, dict[str, Any]]]] = {m: [] for m in methods}
        desc = f"{name} ({len(methods)} methods x {len(chunks)} chunks)" if dist.is_main else None
        units = [(chunk, j, method) for chunk in chunks for j, method in enumerate(methods)]
        record: ForwardRecord | None = None  # one clean forward per chunk, read by every method
        evidence: ObjectImportance | None = None  # the scene objects' importance, once per chunk
        first = _FirstChunk()  # the first chunk's record and maps, read again by the row metrics
        for chunk, j, method in progress(units, desc=desc, unit="map"):  # progress per chunk and method
            if j == 0:  # a new chunk
                part_data = data.subset(chunk)
                record, evidence = None, None
            entry = None if journal is None else journal.load(name, method, chunk)
            if entry is None:
                if record is None:
                    record = chunk_record(model, part_data, protocol, capture=capture)
                if evidence_wanted and evidence is None:
                    evidence = object_importance(model, part_data, explained=record.explained, indices=chunk,
                                                 batch_size=protocol.batch_size)
                entry = score_images(model, part_data, method, protocol=protocol, name=name, indices=chunk,
                                     evidence=evidence, record=record)
                if chunk[0] == 0:
                    first.record, first.results[method] = record, entry[1]
                if journal is not None:
                    journal.save(name, method, chunk, *entry)
            part, result, parts = entry
            found[method] += part
            done[method].append((chunk[0], result, parts))
            clock.tick(f"{name}: {method} on images {chunk[0]}-{chunk[-1]}")
        sanity: dict[int, ForwardRecord] = {}  # the row metrics' images, one record for every method
        for method in methods:
            gathered = dist.gather((found[method], done[method]))
            if dist.is_main:
                merged = sorted((r for p, _ in gathered for r in p), key=lambda r: r.index)  # type: ignore[union-attr]
                ordered = sorted((c for _, d in gathered for c in d), key=lambda c: c[0])  # type: ignore[union-attr]
                row_protocol = _row_protocol(protocol, method, [(r, parts) for _, r, parts in ordered])
                records += merged
                rows.append(summarise(merged, select=protocol.select, protocol=row_protocol))
                log.info("%s %s: MoRF-AOC %s, PR-AUC %s", name, method, rows[-1].get("morf_aoc"),
                         rows[-1].get("box_pr_auc"))
                if not check_method(method).needs_truth:  # an oracle reads the truth, not the model
                    _add_row_metrics(rows[-1], model, data, method, protocol, sanity, first, capture=capture)
    if not dist.is_main:
        return None
    rankings = finish_rows(rows)
    return Evaluation(records=records, rows=rows, dataset=data.description,
                      protocol={"settings": protocol.to_dict(), "world_size": dist.world_size}, rankings=rankings)


class _Clock:
    """Logs each finished (model, chunk, method) unit with the time it took and the time left at that pace."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.start = total, 0, time.perf_counter()
        self.last = self.start

    def tick(self, what: str) -> None:
        now = time.perf_counter()
        self.done += 1
        left = (now - self.start) / self.done * (self.total - self.done)
        log.info("%s: %s (%d/%d; %s so far, about %s left)", what, format_seconds(now - self.last), self.done,
                 self.total, format_seconds(now - self.start), format_seconds(left))
        self.last = now


def finish_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flag passes-MoRF-fails-sanity per row (MoRF-AOC above the same model's floor map) and add each
    method's ranks on the registered criteria; returns the ranking records."""
    from ..metrics import rank_methods

    floors = {r["model"]: r for r in rows if check_method(r["method"]).role == "floor"}
    for row in rows:
        floor = floors.get(row["model"])
        fails = row.get("sanity_fails")
        beats = (None if floor is None or row.get("morf_aoc") is None or floor.get("morf_aoc") is None
                 else row["morf_aoc"] > floor["morf_aoc"])
        row["passes_morf_fails_sanity"] = None if fails is None or beats is None else bool(beats and fails)
    rankings = rank_methods(rows)
    found = {(r["model"], r["method"]): r["mean_rank"] for r in rankings}
    for row in rows:
        row["mean_rank"] = found[row["model"], row["method"]]
    return rankings


@dataclass
class _FirstChunk:
    """The record and map results of the run's first chunk (computed here, not read from a journal)."""

    record: ForwardRecord | None = None
    results: dict[str, MapResult] = field(default_factory=dict)


def row_scoring(model: nn.Module, data: LabelledImages, method: str, protocol: EvalSettings, count: int, *,
                records: dict[int, ForwardRecord] | None = None, first: Any = None,
                capture: bool = False) -> RowScoring:
    """What the row metrics of ``method`` see: the first ``count`` images' record and the trained maps.

    Where the run's first chunk holds those images and computed ``method``'s maps with the same options
    (``first``: its record and map results), both are read from it: the row metrics repeat no clean forward
    and no trained map. Otherwise (more images than a chunk, a resumed chunk) one record is built for
    them, kept in ``records`` under ``count`` for every method of the model.
    """
    spec = check_method(method)
    options = {**protocol.options_for(method), **({"seed": protocol.seed} if spec.seeded else {})}
    chunk = None if first is None else first.record
    done = None if first is None else first.results.get(method)
    reuse = (chunk is not None and isinstance(done, MapResult) and count <= len(chunk)
             and done.options == spec.resolve(options))
    records = {} if records is None else records
    if count not in records:
        if reuse and chunk is not None:
            records[count] = chunk if count == len(chunk) else chunk.take(np.arange(count))
        else:
            records[count] = chunk_record(model, data.subset(range(count)), protocol, capture=capture)
    record = records[count]
    maps = done.maps[:count] if reuse and done is not None else attribute(record, method, **options).maps

    def maps_of(m: nn.Module, classes: Tensor | None) -> Tensor:
        if m is record.model:  # the trained model: its record, explaining other classes if asked
            same = classes is None or torch.equal(torch.as_tensor(classes), record.explained)
            return attribute(record if same else record.explaining(classes), method, **options).maps
        other = ForwardRecord(m, record.inputs, labels=record.labels, capture=spec.reads_attention,
                              classes=None if classes is None else torch.as_tensor(classes))
        return attribute(other, method, **options).maps

    return RowScoring(record=record, maps=maps, method=method, options=options, settings=protocol.resolved(),
                      maps_of=maps_of, classes=record.explained if spec.explains_class else None)


def _add_row_metrics(row: dict[str, Any], model: nn.Module, data: LabelledImages, method: str,
                     protocol: EvalSettings, records: dict[int, ForwardRecord], first: _FirstChunk, *,
                     capture: bool = False) -> None:
    """The row metrics (sanity checks) of one row on the first images its setting names (rank 0).

    Class-explaining maps explain the class the run's ``target`` names (as the evaluated maps do); the
    trained model's record and maps are the first chunk's where it holds the images (:func:`row_scoring`)."""
    settings = protocol.resolved()
    for metric in protocol.row_metrics():
        count = min(int(settings[metric.subset]), len(data)) if metric.subset else len(data)
        if not count:
            continue
        scoring = row_scoring(model, data, method, protocol, count, records=records, first=first, capture=capture)
        figures, report = metric.score_row(scoring)
        row.update(figures)
        row[f"{metric.name}_fails"] = report.get("fails")
        row[metric.name] = report
        row["protocol"][metric.name] = metric.describe(settings)
