"""What the app computes, cached: model inputs, predictions, maps, figures and spectra.

Every value comes from the library: each model's own preprocessing
(:func:`infsa_viz.preprocess.prepare`), one forward record per model and image
(:class:`infsa_viz.forward.ForwardRecord`: its logits, the class a target names), the maps
(:func:`infsa_viz.maps.attribute`), their per-image figures (:func:`infsa_viz.evaluation.score_images`,
the metrics the registry marks for single images) and the spectra
(:func:`infsa_viz.spectral.layer_spectra`). ``st.cache_data`` keys are the model's path and
version, the image's key (which records its resize and whether its label is used), the method,
its options and the class explained; a map is computed once, whether it is drawn alone or with its
figures. Pages pass the image they show; :func:`inputs.for_model` turns it into what each model is
given.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import catalog
import inputs
import numpy as np
import streamlit as st
import targets
import torch
from catalog import ModelEntry
from inputs import ImageChoice

from infsa_viz.estimate import Estimate, Workload, available_memory, check_estimate
from infsa_viz.evaluation import EvalSettings, ImageRecord, score_images
from infsa_viz.forward import ForwardRecord
from infsa_viz.io import read_json
from infsa_viz.maps import METHODS, MapResult, attribute
from infsa_viz.metrics.registry import image_metrics
from infsa_viz.preprocess import Prepared, prepare
from infsa_viz.spectral import LayerSpectrum, layer_spectra

# One image through a small ViT is a few milliseconds of work: intra-op threads only add
# synchronisation, and on a busy machine (or with several sessions, each in its own thread) they
# oversubscribe the cores and make every switch many times slower. OMP_NUM_THREADS overrides.
if "OMP_NUM_THREADS" not in os.environ:
    torch.set_num_threads(1)

#: Images per forward pass of a whole set (one cached record each, :func:`_set_record`).
BATCH = 64
#: A whole-set forward of more batches than this shows a progress bar with the time left.
PROGRESS_AFTER_BATCHES = 2
#: The most memory the captured attention of one model on one whole set may take (see :func:`_set_captures`).
SET_ATTENTION_BYTES = 1 << 30
# ---------------------------------------------------------------------------- model inputs
@st.cache_data(show_spinner=False, max_entries=256)
def _prepared(path: str, version: int, image_key: str, _image: ImageChoice) -> Prepared:
    model = catalog.model_at(path, version)[0]
    return prepare(inputs.input_config(model, _image), _image.data.images)


def model_input(entry: ModelEntry, image: ImageChoice) -> Prepared:
    """The image as this model sees it (its own preprocessing, or the letterbox chosen; cached)."""
    image = inputs.for_model(image, entry)
    return _prepared(entry.source, entry.version, image.key, image)


@st.cache_resource(show_spinner=False, max_entries=32)  # q and k of every layer: ~15 MB an image at ViT-B/16
def _forward(path: str, version: int, image_key: str, _image: ImageChoice) -> ForwardRecord:
    """The one forward of the model on the image as it sees it, attention captured as it goes: every
    page reads its logits and attention (a resource, not data: it holds the shared model). An image of a
    set, as the model's own preprocessing gives it, is its row of the set's record (:func:`_set_record`)
    where that captured attention: one forward of each image of a set, whichever page shows it."""
    model, lock = catalog.model_at(path, version)
    label = [-1 if _image.label is None else _image.label]
    forward = None
    if _image.set_key is not None and _image.index is not None and inputs.input_config(model, _image) is \
            model.config and _set_captures(path, version, *_set(_image.set_key)):  # its set's record, read
        start = _image.index - _image.index % BATCH
        try:
            forward = _set_record(path, version, *_set(_image.set_key), start).take([_image.index - start])
            forward = forward.explaining(labels=label)
        except ValueError:  # the set's batch does not fit in memory: this image alone may
            forward = None
    if forward is None:  # an upload, a letterbox, a set whose attention is not kept: its own forward
        prepared = _prepared(path, version, image_key, _image)
        forward = ForwardRecord(model, prepared.tensor, labels=label, prepared=prepared, capture=True, name="class")
    with lock:
        forward.attention  # runs it (or reads the set's): the logits and every layer's attention
    return forward


@st.cache_data(show_spinner=False, max_entries=512)
def _logits(path: str, version: int, image_key: str, _image: ImageChoice) -> np.ndarray:
    return _forward(path, version, image_key, _image).logits[0].float().numpy()


def logits(entry: ModelEntry, image: ImageChoice) -> np.ndarray:
    """``(classes,)``: the model's logits on the image, as it sees it (cached)."""
    image = inputs.for_model(image, entry)
    return _logits(entry.source, entry.version, image.key, image)


def probabilities(entry: ModelEntry, image: ImageChoice) -> np.ndarray:
    """``(classes,)``: the model's softmax probabilities on the image (cached)."""
    z = logits(entry, image).astype(np.float64)
    e = np.exp(z - z.max())
    return e / e.sum()


def label_for(entry: ModelEntry, image: ImageChoice) -> int | None:
    """The image's label as a class of this model, or ``None`` (an upload, or a set the model does
    not belong to)."""
    return inputs.for_model(image, entry).label


def _record(path: str, version: int, image: ImageChoice, target: Any = None, classes: Any = None) -> ForwardRecord:
    """The forward record of an image already given to a model, explaining ``target`` or the explicit
    ``classes``: the image's one cached forward (:func:`_forward`; its label, ``-1`` when it has none
    for this model), read, never run again."""
    return _forward(path, version, image.key, image).explaining(None if classes is None else [classes],
                                                                target=target)


def record(entry: ModelEntry, image: ImageChoice, target: targets.Target = targets.DEFAULT) -> ForwardRecord:
    """The image's :class:`~infsa_viz.forward.ForwardRecord` for this model, explaining ``target``."""
    image = inputs.for_model(image, entry)
    return _record(entry.source, entry.version, image, target)


def record_at(path: str, version: int, image: ImageChoice) -> ForwardRecord:
    """:func:`record` of a model path and version, for an image already given to it."""
    return _record(path, version, image)


def class_index(entry: ModelEntry, image: ImageChoice, target: targets.Target) -> int:
    """The class ``target`` names for this model and image, as the library's record resolves it (an
    image without a label for this model: its prediction; ``ValueError``: not one of its classes)."""
    return int(record(entry, image, target).explained[0])


# ------------------------------------------------------------------------- whole image sets
def _set(set_key: str) -> tuple[str, str]:
    """``(set key, spec)``: what every cache of a set's results is keyed by (:func:`inputs.set_spec`: one
    short name may name another folder on the next server, or in the next test)."""
    return set_key, inputs.set_spec(set_key)


@st.cache_data(show_spinner=False, max_entries=64)
def _set_captures(path: str, version: int, set_key: str, spec: str) -> bool:
    """Whether the forward of a whole set captures its attention: when every image's ``q`` and ``k``
    (:meth:`~infsa_viz.estimate.Workload.capture`) fit in :data:`SET_ATTENTION_BYTES` and a quarter of the
    memory available (the shipped models on the 2000-image test split: about 150 MB)."""
    model = catalog.model_at(path, version)[0]
    work = Workload.of(model, batch=len(inputs.set_data(set_key)))
    return work is not None and work.capture() <= min(SET_ATTENTION_BYTES, available_memory() / 4)


@st.cache_resource(show_spinner=False, max_entries=256)  # a 2000-image set is 32 of them
def _set_record(path: str, version: int, set_key: str, spec: str, start: int) -> ForwardRecord:
    """The one forward of the model on images ``start … start + BATCH`` of a set, as it sees them (its
    own preprocessing), attention captured as it goes where the whole set's fits (:func:`_set_captures`):
    every page reads its logits and attention, the single-image pages too where it captured (a resource:
    it holds the shared model). Its labels are unknown (readers give theirs: ``explaining(labels=…)``),
    its target the prediction. ``ValueError`` when the forward would not fit in memory."""
    model, lock = catalog.model_at(path, version)
    data = inputs.set_data(set_key)
    stop = min(start + BATCH, len(data))
    prepared = prepare(model.config, data.images[start:stop])
    capture = _set_captures(path, version, set_key, spec)
    work = Workload.of(model, prepared.tensor)
    if work is not None:  # refused before anything is allocated, as every map and metric is
        check_estimate(Estimate(work.forward() + (work.capture() if capture else 0.0),
                                "one forward" + (" and every layer's q, k" if capture else "")),
                       work, subject="the forward of the set")
    forward = ForwardRecord(model, prepared.tensor, prepared=prepared, capture=capture, name="class")
    with lock:
        forward.logits  # runs it: the logits and, with capture, every layer's attention
    return forward


def set_rows(entry: ModelEntry, set_key: str, indices: Sequence[int]) -> ForwardRecord:
    """The :class:`~infsa_viz.forward.ForwardRecord` of the set's images at ``indices`` (in that order),
    read from the set's one forward (its batches of :data:`BATCH` images, :func:`_set_record`): no forward
    of its own (where the set's attention was not captured, reading
    :attr:`~infsa_viz.forward.ForwardRecord.attention` runs one on these images). Its labels are unknown,
    its target the prediction; its ``prepared`` is ``None`` (:func:`set_prepared` has each image's)."""
    batches: dict[int, list[int]] = {}
    for i in indices:
        batches.setdefault(int(i) - int(i) % BATCH, []).append(int(i))
    key = _set(set_key)
    joined = ForwardRecord.join([_set_record(entry.source, entry.version, *key, start).take([i - start for i in rows])
                                 for start, rows in batches.items()])
    order = [i for rows in batches.values() for i in rows]
    position = {i: k for k, i in enumerate(order)}
    return joined if order == list(indices) else joined.take([position[int(i)] for i in indices])


def set_prepared(entry: ModelEntry, set_key: str, index: int) -> tuple[Prepared, int]:
    """``(prepared batch, row)``: how the model sees image ``index`` of a set in its one forward."""
    record = _set_record(entry.source, entry.version, *_set(set_key), index - index % BATCH)
    return record.prepared, index % BATCH  # type: ignore[return-value]


@st.cache_data(show_spinner=False, max_entries=256)
def _chunk_probabilities(path: str, version: int, set_key: str, spec: str, start: int) -> np.ndarray:
    return _set_record(path, version, set_key, spec, start).probabilities.float().numpy()


def set_probabilities(entry: ModelEntry, set_key: str, stop: int | None = None) -> np.ndarray:
    """``(n, classes)`` float32: the model's probabilities on the first ``stop`` images of a set
    (default all), read from the set's one forward (:func:`_set_record`, :data:`BATCH` images a batch)."""
    n = len(inputs.set_data(set_key))
    stop = n if stop is None else min(stop, n)
    starts = range(0, stop, BATCH)
    bar = st.empty() if len(starts) > PROGRESS_AFTER_BATCHES else None
    key = _set(set_key)
    begun, chunks = time.monotonic(), []
    for done, start in enumerate(starts):
        if bar is not None and done:  # cached batches pass in a blink; a real model's show the time left
            spent = time.monotonic() - begun
            left = spent / done * (len(starts) - done)
            bar.progress(done / len(starts), text=f"{entry.name}: {min(done * BATCH, stop)} of {stop} images "
                                                  f"classified, about {_duration(left)} left")
        chunks.append(_chunk_probabilities(entry.source, entry.version, *key, start))
    if bar is not None:
        bar.empty()
    return np.concatenate(chunks)[:stop]


def _duration(seconds: float) -> str:
    """``seconds`` for people: ``"40 s"``, ``"3 min"``."""
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def misclassified(entry: ModelEntry, set_key: str) -> np.ndarray:
    """Indices of the set's images the model gets wrong, ascending (empty when the set's labels
    are not its classes)."""
    labels = inputs.set_labels(entry, set_key)
    if labels is None:
        return np.zeros(0, np.int64)
    return np.flatnonzero(set_probabilities(entry, set_key).argmax(-1) != labels)


def first_all_correct(entries: list[ModelEntry], set_key: str) -> int | None:
    """The first image of the set that every model belonging to it classifies correctly (read
    a batch at a time); ``None`` when no model belongs to the set or no image qualifies."""
    judged = [(e, labels) for e in entries if (labels := inputs.set_labels(e, set_key)) is not None]
    if not judged:
        return None
    key = _set(set_key)
    for start in range(0, len(judged[0][1]), BATCH):
        right = np.logical_and.reduce([_chunk_probabilities(e.source, e.version, *key, start).argmax(-1)
                                       == labels[start:start + BATCH] for e, labels in judged])
        if right.any():
            return start + int(np.argmax(right))
    return None


# -------------------------------------------------------------------------------------- maps
@dataclass(frozen=True, eq=False)
class MapView:
    """One model's map of one image and how to draw it (no figures: cheap to compute).

    ``display``, ``boxes`` and ``negative_boxes`` are in the model's input pixels; ``target`` is
    the class the map explains (class-explaining methods), ``validity`` the absorbing-chain
    record (:meth:`~infsa_viz.maps.Validity.for_image`) for maps that rely on it."""

    map: np.ndarray  # (h, w)
    options: dict[str, Any]
    metadata: dict[str, Any]
    target: int | None
    validity: dict[str, Any] | None
    display: np.ndarray
    boxes: np.ndarray
    negative_boxes: np.ndarray | None


@dataclass(frozen=True, eq=False)
class Explained:
    """A :class:`MapView` with the per-image figures and curves of the metrics the registry marks
    for single images (:func:`infsa_viz.metrics.registry.image_metrics`), and their protocols."""

    view: MapView
    record: ImageRecord
    protocols: dict[str, Any]


def _view(result: Any, target: int | None, validity: dict[str, Any] | None, prepared: Prepared,
          data: Any) -> MapView:
    negatives = None if data.negative_boxes is None else prepared.boxes(0, data.negative_boxes[0])
    return MapView(map=result.maps[0].numpy(), options=result.options,
                   metadata=json.loads(json.dumps(result.metadata, default=str)), target=target, validity=validity,
                   display=prepared.display[0], boxes=prepared.boxes(0, data.boxes[0]), negative_boxes=negatives)


@st.cache_data(show_spinner=False, max_entries=2048)
def _map_result(path: str, version: int, image_key: str, method: str, options_json: str, target: int | None,
                _image: ImageChoice) -> MapResult:
    """The one computation of a map (``target``: the class a class-explaining method explains)."""
    _, lock = catalog.model_at(path, version)
    forward = _record(path, version, _image, classes=target)  # its cached logits take the lock themselves
    with lock:
        return attribute(forward, method, **json.loads(options_json))


@st.cache_data(show_spinner=False, max_entries=2048)
def _map_view(path: str, version: int, image_key: str, method: str, options_json: str, target: int | None,
              _image: ImageChoice) -> MapView:
    result = _map_result(path, version, image_key, method, options_json, target, _image)
    return _view(result, None if result.target is None else int(result.target[0]),
                 None if result.validity is None else result.validity.for_image(0),
                 _prepared(path, version, image_key, _image), _image.data)


@st.cache_data(show_spinner=False, max_entries=2048)
def _explain(path: str, version: int, image_key: str, method: str, options_json: str, target: int | None,
             _image: ImageChoice, metrics: tuple[str, ...] = ()) -> Explained:
    model, lock = catalog.model_at(path, version)
    result = _map_result(path, version, image_key, method, options_json, target, _image)  # the drawn map, scored
    # a class-explaining map is scored for the class it explains; any other map for the image's label
    # (its prediction where the image has no label for this model), as the evaluation's default target
    forward = _record(path, version, _image, target="label", classes=target)
    protocol = EvalSettings(metrics=metrics, **({} if target is None else {"target": target}))
    with lock:
        records, result, protocols = score_images(
            model, _image.data, method, protocol=protocol, name=Path(catalog.path_of(path)).name,
            indices=None if _image.index is None else [_image.index], options=json.loads(options_json),
            record=forward, result=result)
    view = _view(result, records[0].target, records[0].validity, forward.prepared, _image.data)
    return Explained(view=view, record=records[0], protocols=protocols)


def _call(compute: Any, entry: ModelEntry, image: ImageChoice, method: str, options: dict[str, Any],
          target: targets.Target, *extra: Any) -> Any:
    image = inputs.for_model(image, entry)
    cls = class_index(entry, image, target) if METHODS[method].explains_class else None
    return compute(entry.source, entry.version, image.key, method, json.dumps(options, sort_keys=True), cls, image,
                   *extra)


def map_view(entry: ModelEntry, image: ImageChoice, method: str, options: dict[str, Any],
             target: targets.Target = targets.DEFAULT) -> MapView:
    """The map of ``method`` only (cached; see :func:`explain` for the figures)."""
    return _call(_map_view, entry, image, method, options, target)


def explain(entry: ModelEntry, image: ImageChoice, method: str, options: dict[str, Any],
            target: targets.Target = targets.DEFAULT) -> Explained:
    """The map of ``method`` and its figures (cached); ``target`` only for methods that explain a
    class. ``ValueError`` for bad options, a class the model lacks, or a model that does not load."""
    return _call(_explain, entry, image, method, options, target, tuple(image_metrics()))


@st.cache_data(show_spinner=False, max_entries=64)
def _set_views(path: str, version: int, set_key: str, spec: str, indices: tuple[int, ...], method: str,
               options_json: str, labelled: bool, _entry: ModelEntry) -> list[MapView]:
    _, lock = catalog.model_at(path, version)
    data = inputs.set_data(set_key)
    forward = set_rows(_entry, set_key, indices)  # the set's one forward, read
    with lock:
        result = attribute(forward, method, **json.loads(options_json))
    none = np.zeros((0, 4), np.int64)
    views = []
    for k, i in enumerate(indices):
        prepared, row = set_prepared(_entry, set_key, i)
        views.append(MapView(map=result.maps[k].numpy(), options=result.options, metadata={}, validity=None,
                             target=None if result.target is None else int(result.target[k]),
                             display=prepared.display[row], negative_boxes=None,
                             boxes=prepared.boxes(row, data.boxes[i]) if labelled else none))
    return views


def set_views(entry: ModelEntry, set_key: str, indices: list[int], method: str,
              options: dict[str, Any]) -> list[MapView]:
    """Maps of many images of a set in one batch, read from the set's one forward (:func:`set_rows`;
    class-explaining methods explain the prediction); the set's boxes only for a model that belongs to it."""
    return _set_views(entry.source, entry.version, *_set(set_key), tuple(indices), method,
                      json.dumps(options, sort_keys=True), inputs.belongs(entry, set_key), entry)


# --------------------------------------------------------------------------------- spectra
@st.cache_data(show_spinner=False, max_entries=512)
def _spectra(path: str, version: int, image_key: str, matrix: str, _image: ImageChoice) -> list[LayerSpectrum]:
    return layer_spectra(_record(path, version, _image).attention, matrix=matrix)


def spectra(entry: ModelEntry, image: ImageChoice, matrix: str) -> list[LayerSpectrum]:
    """Every layer × (head mean, heads) of the model on the image (cached)."""
    image = inputs.for_model(image, entry)
    return _spectra(entry.source, entry.version, image.key, matrix, image)


@st.cache_data(show_spinner=False, max_entries=64)
def _metrics_report(path: str, mtime: int) -> Any:
    return read_json(path)


def metrics_report(path: Path) -> Any:
    """A ``metrics/*.json`` report, re-read when the file changes (``ValueError`` if malformed)."""
    return _metrics_report(str(path), path.stat().st_mtime_ns)
