"""Shared sidebar and caches of the app. Computations live in ``infsa_viz`` (mostly
``infsa_viz.app_support``); this module only wires widgets to cached calls of those functions.

Caching: ``st.cache_resource`` holds the loaded models (one lock each, since attention capture
hooks into the shared module); ``st.cache_data`` holds everything derived from a model and an
image, keyed by the model path and weights' mtime, the image's identity (test index or SHA-256 of
the uploaded bytes), the method and its options.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import numpy as np
import streamlit as st
import torch

from infsa_viz import app_support as support
from infsa_viz.images import MAX_IMAGE_BYTES, prepare_image
from infsa_viz.io import read_json
from infsa_viz.maps import METHODS, explain_with_metadata
from infsa_viz.overlay import COLORMAPS, Scale
from infsa_viz.vit import load_model

ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = ROOT / "models"
METRICS_DIR = ROOT / "metrics"
SCALES: tuple[str, ...] = get_args(Scale)  # ("shared", "raw", "per-map")
UPLOAD_TYPES = ["png", "jpg", "jpeg", "bmp"]
DISPLAY_SCALE = 6  # 48 px inputs are drawn at 288 px

# One image through a small ViT is a few milliseconds of work: intra-op threads only add
# synchronisation, and on a busy machine (or with several sessions, each in its own thread) they
# oversubscribe the cores and make every switch many times slower. OMP_NUM_THREADS overrides.
if "OMP_NUM_THREADS" not in os.environ:
    torch.set_num_threads(1)


# ------------------------------------------------------------------------------------- caches
@st.cache_resource(show_spinner="Loading model…", max_entries=16)
def get_model(path: str, version: int) -> tuple[torch.nn.Module, threading.Lock]:
    """The model at ``path`` (``version``: weights' mtime, so a retrained model reloads)."""
    return load_model(path), threading.Lock()


@st.cache_data(show_spinner="Decoding the image…", max_entries=8)
def decoded_upload(data: bytes, name: str) -> support.ImageSample:
    return support.upload_sample(data, name)


@st.cache_data(show_spinner=False, max_entries=4096)
def dataset_sample(index: int) -> support.ImageSample:
    return support.dataset_sample(index)


@st.cache_data(show_spinner="Classifying the test split…", max_entries=16)
def misclassified(path: str, version: int) -> np.ndarray:
    model, lock = get_model(path, version)
    split = support.test_split()
    with lock:
        predicted = support.predict_split(model, split.images)
    return support.misclassified_indices(predicted, split.labels)


@st.cache_data(show_spinner=False, max_entries=512)
def model_input(image_key: str, _image: np.ndarray, in_chans: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(x (1, C, S, S) float32, shown uint8)`` of the image for a model's input format."""
    x, shown = prepare_image(_image, in_chans=in_chans, size=size)
    return x.numpy(), shown


@dataclass(frozen=True, eq=False)
class ModelView:
    """One model on the current image: its input, what it predicts, the boxes at its input size."""

    entry: support.ModelEntry
    x: torch.Tensor
    shown: np.ndarray
    probs: np.ndarray
    boxes: np.ndarray | None
    distractor_boxes: np.ndarray | None

    @property
    def predicted(self) -> int:
        return int(self.probs.argmax())

    @property
    def size(self) -> int:
        return int(self.x.shape[-1])


@st.cache_data(show_spinner=False, max_entries=1024)
def _probabilities(path: str, version: int, image_key: str, in_chans: int, size: int, _x: np.ndarray) -> np.ndarray:
    model, lock = get_model(path, version)
    with lock:
        return support.class_probabilities(model, torch.from_numpy(_x))


def model_view(entry: support.ModelEntry, sample: support.ImageSample) -> ModelView:
    model, _ = get_model(entry.path, entry.version)
    size, in_chans = model.config.img_size, model.config.in_chans
    x, shown = model_input(sample.key, sample.image, in_chans, size)
    probs = _probabilities(entry.path, entry.version, sample.key, in_chans, size, x)
    return ModelView(entry=entry, x=torch.from_numpy(x), shown=shown, probs=probs,
                     boxes=support.scale_boxes(sample.boxes, sample.image.shape, size),
                     distractor_boxes=support.scale_boxes(sample.distractor_boxes, sample.image.shape, size))


@st.cache_data(show_spinner=False, max_entries=2048)
def _token_map(path: str, version: int, image_key: str, size: int, method: str, options_json: str,
               _x: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
    model, lock = get_model(path, version)
    with lock:
        result = explain_with_metadata(model, torch.from_numpy(_x), method, **json.loads(options_json))
    meta = json.loads(json.dumps(result.metadata, default=str))
    return result.map[0].numpy(), meta


def token_map(view: ModelView, image_key: str, method: str, options: dict[str, Any]) -> tuple[np.ndarray, dict]:
    """The ``(h, w)`` map of ``method`` for this model and image, and its metadata (cached)."""
    return _token_map(view.entry.path, view.entry.version, image_key, view.size, method,
                      json.dumps(options, sort_keys=True), view.x.numpy())


@st.cache_data(show_spinner=False, max_entries=1024)
def _figures(path: str, version: int, image_key: str, size: int, method: str, options_json: str, target: int,
             _x: np.ndarray, _map: np.ndarray, _boxes: Any, _distractors: Any) -> dict[str, Any]:
    model, lock = get_model(path, version)
    with lock:
        out = support.perturbation_figures(model, torch.from_numpy(_x), _map, target)
    out.update(support.localisation_figures(_map, _boxes, _distractors, image_size=size))
    return out


def figures(view: ModelView, sample: support.ImageSample, method: str, options: dict[str, Any],
            token: np.ndarray) -> dict[str, Any]:
    """Per-image figures and curves of a map (cached): the ground-truth class is scored when
    known, else the model's prediction."""
    target = sample.label if sample.label is not None else view.predicted
    return _figures(view.entry.path, view.entry.version, sample.key, view.size, method,
                    json.dumps(options, sort_keys=True), int(target), view.x.numpy(), token,
                    view.boxes, view.distractor_boxes)


@st.cache_data(show_spinner=False, max_entries=1024)
def _box_curves(image_key: str, size: int, method: str, options_json: str, path: str, version: int,
                _map: np.ndarray, _boxes: Any) -> dict[str, Any] | None:
    return support.box_curves(_map, _boxes, image_size=size)


def box_curves(view: ModelView, sample: support.ImageSample, method: str, options: dict[str, Any],
               token: np.ndarray) -> dict[str, Any] | None:
    """ROC / PR curves of a map against the target box (cached); ``None`` without a box."""
    return _box_curves(sample.key, view.size, method, json.dumps(options, sort_keys=True), view.entry.path,
                       view.entry.version, token, view.boxes)


@st.cache_data(show_spinner=False, max_entries=512)
def _spectra(path: str, version: int, image_key: str, size: int, matrix: str,
             _x: np.ndarray) -> list[support.LayerSpectrum]:
    model, lock = get_model(path, version)
    with lock:
        return support.spectral_summary(model, torch.from_numpy(_x), matrix=matrix)


def spectra(view: ModelView, image_key: str, matrix: str) -> list[support.LayerSpectrum]:
    return _spectra(view.entry.path, view.entry.version, image_key, view.size, matrix, view.x.numpy())


@st.cache_data(show_spinner=False, max_entries=64)
def _metrics_report(path: str, mtime: int) -> Any:
    return read_json(path)


def metrics_report(path: Path) -> Any:
    """A ``metrics/*.json`` report, re-read when the file changes (``ValueError`` if malformed)."""
    return _metrics_report(str(path), path.stat().st_mtime_ns)


# ------------------------------------------------------------------------------------ sidebar
_SELECTION = "_selection"


@dataclass(frozen=True, eq=False)
class Selection:
    """What the sidebar selects: models, image (or an error), method with options, display."""

    models: list[support.ModelEntry]
    sample: support.ImageSample | None
    error: str | None
    method: str
    options: dict[str, Any]
    layer: int
    head: int | str
    colormap: str
    alpha: float
    scale: str
    show_boxes: bool


def _random_index(key: str, count: int) -> None:
    st.session_state[key] = int(np.random.default_rng().integers(count)) if count else 0


def _clamp(key: str, count: int) -> None:
    if st.session_state.get(key, 0) > max(count - 1, 0):
        st.session_state[key] = 0


def _model_choices() -> list[support.ModelEntry]:
    found = support.discover_models(MODELS_DIR)
    by_path = {e.path: e for e in found}
    chosen = st.sidebar.multiselect(
        "Models", list(by_path), default=list(by_path), key="models",
        format_func=lambda p: by_path[p].label if p in by_path else p,
        help=f"Model directories found under {MODELS_DIR}",
    )
    if not found:
        st.sidebar.info(f"No trained model found under `{MODELS_DIR}`: train one with `infsa-viz train`, "
                        "or enter a model directory below.")
    entries = [by_path[p] for p in chosen if p in by_path]
    extra = st.sidebar.text_input("Another model directory", key="extra_model", placeholder="/path/to/model")
    if extra.strip():
        try:
            entry = support.model_entry(extra.strip())
            get_model(entry.path, entry.version)
        except Exception as err:  # noqa: BLE001  # a typed path: any unreadable model is the user's to fix
            st.sidebar.error(f"Cannot load {extra.strip()!r}: {err}")
        else:
            if entry.path not in {e.path for e in entries}:
                entries.append(entry)
    return entries


def _image_choice(models: list[support.ModelEntry]) -> tuple[support.ImageSample | None, str | None]:
    sb = st.sidebar
    source = sb.radio("Image", ["Test split", "Upload"], key="image_source", horizontal=True)
    if source == "Upload":
        upload = sb.file_uploader(f"PNG or JPEG (up to {MAX_IMAGE_BYTES // 2**20} MB)", type=UPLOAD_TYPES,
                                  key="upload")
        if upload is None:
            return None, None
        try:
            return decoded_upload(upload.getvalue(), upload.name), None
        except ValueError as err:
            return None, f"Cannot use this file: {err}"
    count = support.TEST_SPLIT_SIZE
    only_wrong = sb.checkbox("Only misclassified", key="only_wrong", disabled=not models)
    if only_wrong and models:
        by_path = {e.path: e for e in models}
        path = sb.selectbox("…by model", list(by_path), key="wrong_model", format_func=lambda p: by_path[p].label)
        entry = by_path[path]
        wrong = misclassified(entry.path, entry.version)
        if not len(wrong):
            return None, f"{entry.label} classifies every test image correctly."
        _clamp("wrong_pos", len(wrong))
        position = sb.number_input(f"Misclassified image (of {len(wrong)})", 0, len(wrong) - 1, key="wrong_pos")
        sb.button("Random", key="random_image", on_click=_random_index, args=("wrong_pos", len(wrong)))
        index = int(wrong[int(position)])
    else:
        index = int(sb.number_input(f"Test image (of {count})", 0, count - 1, key="image_index"))
        sb.button("Random", key="random_image", on_click=_random_index, args=("image_index", count))
    sample = dataset_sample(index)
    sb.caption(f"{sample.source}: label {sample.label}; target box green, distractors red")
    return sample, None


def _method_choice(models: list[support.ModelEntry]) -> tuple[str, dict[str, Any], int, int | str]:
    sb = st.sidebar
    names = list(METHODS)
    method = sb.selectbox("Method", names, key="method", format_func=lambda m: f"{m} ({METHODS[m].family})",
                          help="\n".join(f"- **{m}**: {s.description}" for m, s in METHODS.items()))
    configs = [get_model(e.path, e.version)[0].config for e in models]
    depth = max((c.depth for c in configs), default=1)
    heads = min((c.num_heads for c in configs), default=1)
    scope = "this method and the Spectral page" if METHODS[method].layer_options else (
        f"the Spectral page only ({method} reads every layer)")
    layer = sb.selectbox("Layer", [-1, *range(depth)], key="layer", format_func=lambda v: "last" if v == -1 else str(v),
                         help=f"Used by {scope}")
    head = sb.selectbox("Head", ["mean", *range(heads)], key="head",
                        help=f"Used by {scope}; 'mean' fuses the heads as the method does by default")
    return method, support.map_options(method, layer=layer, head=head), int(layer), head


def sidebar() -> Selection:
    """Render the shared sidebar and remember its :class:`Selection` for the page of this run.

    Called by the entry point, so the widgets' state survives page switches.
    """
    models = _model_choices()
    sample, error = _image_choice(models)
    method, options, layer, head = _method_choice(models)
    with st.sidebar.expander("Display"):
        colormap = st.selectbox("Colormap", COLORMAPS, key="colormap")
        alpha = st.slider("Map opacity", 0.0, 1.0, 0.5, 0.05, key="alpha")
        scale = st.radio("Colour scale", SCALES, key="scale", horizontal=True,
                         help="shared: one scale after dividing each map by its mass; raw: one scale on raw "
                              "values; per-map: each map stretched to its own range")
        show_boxes = st.checkbox("Draw boxes", value=True, key="show_boxes")
    sel = Selection(models=models, sample=sample, error=error, method=method, options=options, layer=layer,
                    head=head, colormap=colormap, alpha=float(alpha), scale=scale, show_boxes=show_boxes)
    st.session_state[_SELECTION] = sel
    return sel


def selection() -> Selection:
    """The sidebar's choices of this run (the entry point renders the sidebar before the page)."""
    sel = st.session_state.get(_SELECTION)
    if sel is None:
        raise RuntimeError("no sidebar selection: run the app through app/streamlit_app.py")
    return sel


def require_inputs(sel: Selection) -> None:
    """Stop the page with a clear message when there is no model or no usable image."""
    if sel.error:
        st.error(sel.error)
        st.stop()
    if not sel.models:
        st.info("Select at least one model in the sidebar.")
        st.stop()
    if sel.sample is None:
        st.info("Upload an image in the sidebar (PNG or JPEG), or switch to the test split.")
        st.stop()


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def badges(fig: dict[str, Any]) -> str:
    """One markdown line of a map's per-image figures (``n/a`` where undefined)."""
    hit = fig.get("pointing_hit")
    point = "n/a" if hit is None else (":green[hit]" if hit else ":red[miss]")
    return (f"MoRF-AOC **{_fmt(fig['morf_aoc'], '.1f')}** · LeRF-AUC {_fmt(fig['lerf_auc'], '.1f')} · "
            f"pointing {point} · box ROC-AUC **{_fmt(fig['box_roc_auc'], '.3f')}** · "
            f"PR-AUC {_fmt(fig['box_pr_auc'], '.3f')}")
