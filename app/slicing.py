"""What the Slice page computes: every model's prediction on the first images of a set and
their per-image figures, from the library's engine and the metric registry.

Figures come from :func:`infsa_viz.evaluation.score_images` with the metrics a user picks from
:data:`infsa_viz.metrics.registry.METRICS` (their figures, labels and directions are the
registry's), scored per chunk of :data:`CHUNK` images and cached, so a wider slice only adds
chunks. Labels are the model's own classes (:func:`inputs.set_labels`); a model whose classes the
set does not name is scored on its prediction.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np
import streamlit as st

import catalog
import compute
import inputs
from catalog import ModelEntry
from infsa_viz.data import LabelledImages, cue_conditions
from infsa_viz.estimate import Workload
from infsa_viz.evaluation import EvalSettings, score_images
from infsa_viz.metrics.registry import METRICS, RowMetric, figures_of

__all__ = ["CHUNK", "FEW_FORWARDS", "cues", "default_metrics", "figures", "predictions", "scored_metrics"]

#: Images scored per cached call.
CHUNK = 100
#: Model passes per image a metric chosen by default may make (a scene's objects changed one at a time).
FEW_FORWARDS = 5


def scored_metrics() -> list[str]:
    """The registered per-image metrics (row metrics, such as the sanity checks, run on the Checks page)."""
    return [name for name, m in METRICS.items() if not isinstance(m, RowMetric)]


def default_metrics(entries: Sequence[ModelEntry]) -> list[str]:
    """Metrics cheap enough for a few hundred images: by their own estimate
    (:meth:`~infsa_viz.metrics.registry.Metric.estimate`), at most :data:`FEW_FORWARDS` model passes
    per image on every selected model that loads, and no maps of other classes."""
    settings = EvalSettings().resolved()
    works = [w for e in catalog.loaded(list(entries))
             if (w := Workload.of(catalog.get_model(e)[0], batch=CHUNK)) is not None]
    return [name for name in scored_metrics() if works and not METRICS[name].redraws
            and all(METRICS[name].estimate(w, settings).forwards <= FEW_FORWARDS for w in works)]


def predictions(entry: ModelEntry, set_key: str, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(predicted (n,), confidence (n,), labels (n,) or None)`` of the first ``n`` images, the
    labels in the model's classes (``None`` when the set's labels are not its classes)."""
    probs = compute.set_probabilities(entry, set_key, n)
    labels = inputs.set_labels(entry, set_key)
    return probs.argmax(-1), probs.max(-1), None if labels is None else labels[:n]


def cues(set_key: str, n: int) -> np.ndarray | None:
    """How each image's cue relates to its label (:func:`infsa_viz.data.cue_conditions`), or
    ``None`` for a set without cues."""
    data = inputs.set_data(set_key)
    if data.scenes is None or "cue" not in data.scenes[0].object_names:
        return None
    return cue_conditions(data.scenes[:n], data.labels[:n])


@st.cache_data(show_spinner=False, max_entries=256)
def _chunk(path: str, version: int, set_key: str, spec: str, start: int, stop: int, labels_json: str | None,
           method: str, options_json: str, metrics: tuple[str, ...], target: Any,
           _entry: ModelEntry) -> dict[str, np.ndarray]:
    model, lock = catalog.model_at(path, version)
    data = inputs.set_data(set_key).subset(range(start, stop))
    if labels_json is not None:
        labels = np.asarray(json.loads(labels_json), dtype=np.int64)
        data = LabelledImages(images=data.images, labels=labels, boxes=data.boxes, negative_boxes=data.negative_boxes,
                              names=data.names, negative_labels=data.negative_labels, scenes=data.scenes)
    else:
        data = LabelledImages(images=data.images, labels=np.full(len(data), -1), boxes=[np.zeros((0, 4), np.int64)]
                              * len(data), names=data.names)
    protocol = EvalSettings(metrics=metrics, select="all", target=target)
    record = compute.set_rows(_entry, set_key, range(start, stop))  # the set's one forward, read
    record = record.explaining(target=protocol.target, labels=data.labels)
    with lock:
        records, _, _ = score_images(model, data, method, protocol=protocol, indices=list(range(start, stop)),
                                     options=json.loads(options_json), record=record)
    return {f.key: np.array([getattr(r, f.key) for r in records], dtype=np.float64) for f in figures_of(metrics)}


def figures(entry: ModelEntry, set_key: str, n: int, method: str, options: dict[str, Any],
            metrics: Sequence[str], target: Any) -> dict[str, np.ndarray]:
    """Figure key → ``(n,)`` values of ``method``'s maps of the first ``n`` images for ``entry``
    (``nan`` where undefined), computed :data:`CHUNK` images at a time and cached, every chunk reading the
    set's one forward (:func:`compute.set_rows`)."""
    labels = inputs.set_labels(entry, set_key)
    out: dict[str, list[np.ndarray]] = {}
    spec = inputs.set_spec(set_key)  # a cache key beside the set's short name (compute._set)
    for start in range(0, n, CHUNK):
        stop = min(start + CHUNK, n)
        labelled = None if labels is None else json.dumps(labels[start:stop].tolist())
        part = _chunk(entry.source, entry.version, set_key, spec, start, stop, labelled, method,
                      json.dumps(options, sort_keys=True), tuple(metrics), target, entry)
        for key, values in part.items():
            out.setdefault(key, []).append(values)
    return {key: np.concatenate(parts) for key, parts in out.items()}
