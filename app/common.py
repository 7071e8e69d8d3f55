"""Shared sidebar, caches and drawing of the app: a thin layer over ``infsa_viz``.

Everything shown is computed by the library: the test split (:func:`infsa_viz.data.test_split`),
each model's own preprocessing (:func:`infsa_viz.preprocess.prepare`), the maps and their
per-image figures (:func:`infsa_viz.evaluation.score_images`), the spectra
(:func:`infsa_viz.spectral.layer_spectra`) and the colours (:mod:`infsa_viz.overlay`).

Caching: ``st.cache_resource`` holds the loaded models (one lock each, since attention capture
hooks into the shared module); ``st.cache_data`` holds what is derived from a model and an image,
keyed by the model path and weights' mtime, the image's identity (``test:<i>`` or the SHA-256 of
the uploaded bytes), the method, its options and its target.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st
import torch

from infsa_viz import VARIANTS
from infsa_viz.capture import capture_attention
from infsa_viz.data import TEST_SIZE, LabelledImages, test_split
from infsa_viz.evaluation import EvalProtocol, ImageRecord, score_images
from infsa_viz.images import MAX_IMAGE_BYTES, decode_image
from infsa_viz.io import read_json
from infsa_viz.maps import METHODS, selector_options
from infsa_viz.metrics import BoxCurve, box_curves
from infsa_viz.overlay import COLORMAPS, SCALES, ColourScale, colour_scale, overlay
from infsa_viz.preprocess import prepare, preprocess
from infsa_viz.spectral import LayerSpectrum, layer_spectra
from infsa_viz.train import predict
from infsa_viz.vit import CONFIG_FILE, WEIGHTS_FILE, load_model

ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = ROOT / "models"
METRICS_DIR = ROOT / "metrics"
UPLOAD_TYPES = ["png", "jpg", "jpeg", "bmp"]
DISPLAY_PX = 288  # overlays are zoomed (nearest) to about this side: 48 px inputs are drawn 6x

# One image through a small ViT is a few milliseconds of work: intra-op threads only add
# synchronisation, and on a busy machine (or with several sessions, each in its own thread) they
# oversubscribe the cores and make every switch many times slower. OMP_NUM_THREADS overrides.
if "OMP_NUM_THREADS" not in os.environ:
    torch.set_num_threads(1)


# ------------------------------------------------------------------------ models and images
@dataclass(frozen=True)
class ModelEntry:
    """A model directory: ``path`` (absolute), ``name``, ``variant`` (its config's attention) and
    ``version`` (the weights' mtime in ns, so a retrained model reloads)."""

    path: str
    name: str
    variant: str
    version: int

    @property
    def label(self) -> str:
        return f"{self.variant} · {self.name}"


def model_entry(directory: str | Path) -> ModelEntry:
    """Describe a model directory; ``ValueError`` if it, its config or its weights are missing."""
    path = Path(directory).expanduser()
    if not path.is_dir():
        raise ValueError(f"model directory {str(directory)!r} does not exist")
    weights = path / WEIGHTS_FILE
    if not (path / CONFIG_FILE).is_file() or not weights.is_file():
        raise ValueError(f"{str(directory)!r} is not a model directory: expected {CONFIG_FILE} and {WEIGHTS_FILE}")
    config = read_json(path / CONFIG_FILE)
    variant = config.get("attention", "unknown") if isinstance(config, dict) else "unknown"
    return ModelEntry(str(path.resolve()), path.name, str(variant), weights.stat().st_mtime_ns)


def discover_models(root: str | Path) -> list[ModelEntry]:
    """Model directories directly under ``root``, ordered as :data:`infsa_viz.VARIANTS`, then by
    name; folders without a config or whose weights are not written yet are skipped."""
    root = Path(root)
    entries = []
    for sub in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            entries.append(model_entry(sub))
        except ValueError:
            continue
    order = {v: i for i, v in enumerate(VARIANTS)}
    return sorted(entries, key=lambda e: (order.get(e.variant, len(order)), e.name))


@dataclass(frozen=True, eq=False)
class ImageChoice:
    """One image to explain: ``key`` (cache identity), ``source`` (for people), ``data`` (one
    image with its label, ``-1`` if unknown, and boxes in source pixels), ``index`` in the split."""

    key: str
    source: str
    data: LabelledImages
    index: int | None = None

    @property
    def label(self) -> int | None:
        label = int(self.data.labels[0])
        return None if label < 0 else label


def test_image(index: int) -> ImageChoice:
    """Test image ``index``: the same pixels whichever page, model or command asks."""
    return ImageChoice(f"test:{index}", f"test image #{index}", test_split().subset([index]), index)


@st.cache_data(show_spinner="Decoding the image…", max_entries=8)
def upload_image(data: bytes, name: str) -> ImageChoice:
    """An uploaded file (any size, gray/RGB/RGBA); ``ValueError`` if it is not a readable image."""
    image = decode_image(data, name=name)
    one = LabelledImages(images=[image], labels=np.array([-1]), boxes=[np.zeros((0, 4), np.int64)], names=[name])
    return ImageChoice(f"upload:{hashlib.sha256(data).hexdigest()}", f"upload {name!r}", one)


# ----------------------------------------------------------------------------------- caches
@st.cache_resource(show_spinner="Loading model…", max_entries=16)
def get_model(path: str, version: int) -> tuple[torch.nn.Module, threading.Lock]:
    """The model at ``path`` (``version``: weights' mtime, so a retrained model reloads)."""
    return load_model(path), threading.Lock()


@st.cache_data(show_spinner="Classifying the test split…", max_entries=16)
def misclassified(path: str, version: int) -> np.ndarray:
    """Indices of the test images the model gets wrong, ascending."""
    model, lock = get_model(path, version)
    split = test_split()
    with lock:
        predicted = predict(model, preprocess(model, split.images)).argmax(-1).numpy()
    return np.flatnonzero(predicted != split.labels)


@dataclass(frozen=True, eq=False)
class Explained:
    """One model's map of one image: the evaluation record, the map, what it is, and how to draw it.

    ``display``, ``boxes`` and ``negative_boxes`` are in the model's input pixels."""

    record: ImageRecord
    map: np.ndarray  # (h, w)
    options: dict[str, Any]
    metadata: dict[str, Any]
    fractions: np.ndarray  # (K + 1,) x of record.morf / record.lerf
    display: np.ndarray
    boxes: np.ndarray
    negative_boxes: np.ndarray | None
    box_curve: BoxCurve | None


@st.cache_data(show_spinner=False, max_entries=2048)
def _explain(path: str, version: int, image_key: str, method: str, options_json: str, target_json: str,
             _image: ImageChoice) -> Explained:
    model, lock = get_model(path, version)
    target = json.loads(target_json)
    protocol = EvalProtocol() if target is None else EvalProtocol(target=target)
    indices = None if _image.index is None else [_image.index]
    data = _image.data
    prepared = prepare(model, data.images)  # once: for the scores and for the overlay
    with lock:
        records, result, protocols = score_images(model, data, method, protocol=protocol, name=Path(path).name,
                                                  indices=indices, options=json.loads(options_json),
                                                  prepared=prepared)
    boxes = prepared.boxes(0, data.boxes[0])
    negatives = None if data.negative_boxes is None else prepared.boxes(0, data.negative_boxes[0])
    curve = box_curves(result.maps, [boxes], image_size=int(prepared.tensor.shape[-1]))[0]
    return Explained(record=records[0], map=result.maps[0].numpy(), options=result.options,
                     metadata=json.loads(json.dumps(result.metadata, default=str)), fractions=protocols["steps"][0],
                     display=prepared.display[0], boxes=boxes, negative_boxes=negatives, box_curve=curve)


def explain(entry: ModelEntry, image: ImageChoice, method: str, options: dict[str, Any],
            target: str | int | None = None) -> Explained:
    """The map of ``method`` and its figures (cached); ``target`` only for methods that explain a
    class (``"predicted"``, ``"label"`` or a class index). ``ValueError`` for bad options."""
    target = target if METHODS[method].explains_class else None
    return _explain(entry.path, entry.version, image.key, method, json.dumps(options, sort_keys=True),
                    json.dumps(target), image)


def explain_models(sel: Selection, method: str, options: dict[str, Any]) -> list[tuple[ModelEntry, Explained | str]]:
    """:func:`explain` for every selected model: its result, or the error message."""
    out: list[tuple[ModelEntry, Explained | str]] = []
    for entry in sel.models:
        try:
            out.append((entry, explain(entry, sel.image, method, options, sel.target)))
        except ValueError as err:
            out.append((entry, str(err)))
    return out


@st.cache_data(show_spinner=False, max_entries=512)
def _spectra(path: str, version: int, image_key: str, matrix: str, _image: ImageChoice) -> list[LayerSpectrum]:
    model, lock = get_model(path, version)
    x = preprocess(model, _image.data.images)
    with lock:
        _, records = capture_attention(model, x)
    return layer_spectra(records, matrix=matrix)


def spectra(entry: ModelEntry, image: ImageChoice, matrix: str) -> list[LayerSpectrum]:
    """Every layer × (head mean, heads) of the model on the image (cached)."""
    return _spectra(entry.path, entry.version, image.key, matrix, image)


@st.cache_data(show_spinner=False, max_entries=64)
def _metrics_report(path: str, mtime: int) -> Any:
    return read_json(path)


def metrics_report(path: Path) -> Any:
    """A ``metrics/*.json`` report, re-read when the file changes (``ValueError`` if malformed)."""
    return _metrics_report(str(path), path.stat().st_mtime_ns)


# ---------------------------------------------------------------------------------- drawing
def draw(sel: Selection, results: list[tuple[ModelEntry, Explained | str]]
         ) -> tuple[dict[str, np.ndarray], ColourScale | None]:
    """Overlays (by model path, in order) of the maps drawn together, on one
    :func:`~infsa_viz.overlay.colour_scale` of exactly those maps; errors are left out."""
    shown = [(entry, e) for entry, e in results if not isinstance(e, str)]
    if not shown:
        return {}, None
    scale = colour_scale([e.map for _, e in shown], sel.scale, colormap=sel.colormap)
    tiles = {entry.path: overlay(e.display, e.map, scale, i, alpha=sel.alpha,
                                 boxes=e.boxes if sel.show_boxes else None,
                                 distractor_boxes=e.negative_boxes if sel.show_boxes else None,
                                 zoom=max(1, DISPLAY_PX // e.display.shape[0]))
             for i, (entry, e) in enumerate(shown)}
    return tiles, scale


def scale_caption(scale: ColourScale) -> str:
    """What the colours of a set of overlays mean."""
    if scale.common_limits is None:
        return "Each map stretched to its own range (per-map colour scale): compare shapes, not values."
    lo, hi = scale.common_limits
    return f"One colour scale for all maps ({scale.unit}): {lo:.4g} (dark) to {hi:.4g} (bright)."


def validity_line(validity: dict[str, Any] | None) -> str | None:
    """One markdown line on where the absorbing-chain reading of a map's graph holds (``None`` for
    maps that do not rely on it); orange where it fails on some row."""
    if validity is None:
        return None
    share = float(np.mean(validity["row_share"]))
    percent = f"{math.floor(share * 1000) / 10:g}"  # never rounds a failing share up to 100
    layers = validity["layers"]
    where = f"layer {layers[0]}" if len(layers) == 1 else f"{len(layers)} layers"
    text = (f"absorbing-chain reading holds on {percent} % of rows ({where}; "
            f"max γ·Σ_j A_ij = {max(validity['max_row_mass']):.2f})")
    return f":green[{text}]" if validity["holds"] else f":orange[{text}]"


def _fmt(value: Any, spec: str) -> str:
    return "n/a" if value is None or not math.isfinite(value) else format(value, spec)


def badges(record: ImageRecord) -> str:
    """One markdown line of a map's per-image figures (``n/a`` where undefined)."""
    hit = record.pointing_hit
    point = "n/a" if not math.isfinite(hit) else (":green[hit]" if hit else ":red[miss]")
    return (f"MoRF-AOC **{_fmt(record.morf_aoc, '.1f')}** · LeRF-AUC {_fmt(record.lerf_auc, '.1f')} · "
            f"pointing {point} · box ROC-AUC **{_fmt(record.box_roc_auc, '.3f')}** · "
            f"PR-AUC {_fmt(record.box_pr_auc, '.3f')}")


def target_label(target: str | int) -> str:
    """What a class-explaining map explains, in words."""
    return {"predicted": "the prediction", "label": "the label"}.get(str(target), f"class {target}")


# ---------------------------------------------------------------------------------- sidebar
_SELECTION = "_selection"


@dataclass(frozen=True, eq=False)
class Selection:
    """What the sidebar selects: models, image (or an error), method with options and target, display."""

    models: list[ModelEntry]
    image: ImageChoice | None
    error: str | None
    method: str
    options: dict[str, Any]
    target: str | int
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


def _model_choices() -> list[ModelEntry]:
    found = discover_models(MODELS_DIR)
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
            entry = model_entry(extra.strip())
            get_model(entry.path, entry.version)
        except Exception as err:  # noqa: BLE001  # a typed path: any unreadable model is the user's to fix
            st.sidebar.error(f"Cannot load {extra.strip()!r}: {err}")
        else:
            if entry.path not in {e.path for e in entries}:
                entries.append(entry)
    return entries


def _image_choice(models: list[ModelEntry]) -> tuple[ImageChoice | None, str | None]:
    sb = st.sidebar
    source = sb.radio("Image", ["Test split", "Upload"], key="image_source", horizontal=True)
    if source == "Upload":
        upload = sb.file_uploader(f"PNG or JPEG (up to {MAX_IMAGE_BYTES // 2**20} MB)", type=UPLOAD_TYPES,
                                  key="upload")
        if upload is None:
            return None, None
        try:
            return upload_image(upload.getvalue(), upload.name), None
        except ValueError as err:
            return None, f"Cannot use this file: {err}"
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
        index = int(sb.number_input(f"Test image (of {TEST_SIZE})", 0, TEST_SIZE - 1, key="image_index"))
        sb.button("Random", key="random_image", on_click=_random_index, args=("image_index", TEST_SIZE))
    image = test_image(index)
    sb.caption(f"{image.source}: label {image.label}; target box green, distractors red")
    return image, None


def _method_choice(models: list[ModelEntry], image: ImageChoice | None) -> tuple[str, dict[str, Any], str | int,
                                                                                  int, int | str]:
    sb = st.sidebar
    method = sb.selectbox("Method", list(METHODS), key="method", format_func=lambda m: f"{m} ({METHODS[m].family})",
                          help="\n".join(f"- **{m}**: {s.description}" for m, s in METHODS.items()))
    spec = METHODS[method]
    configs = [get_model(e.path, e.version)[0].config for e in models]
    depth = max((c.depth for c in configs), default=1)
    heads = min((c.num_heads for c in configs), default=1)
    classes = min((c.num_classes for c in configs), default=1)

    def used_by(option: str) -> str:
        return (f"Used by {method} and the Spectral page" if option in spec.defaults else
                f"Used by the Spectral page only ({method} takes no {option})")

    layer = sb.selectbox("Layer", [-1, *range(depth)], key="layer", format_func=lambda v: "last" if v == -1 else str(v),
                         help=used_by("layer"))
    head = sb.selectbox("Head", ["mean", *range(heads)], key="head",
                        help=used_by("head") + "; 'mean' fuses the heads as the method does by default")
    targets: list[str | int] = ["predicted", *(["label"] if image is not None and image.label is not None else []),
                                *range(classes)]
    if st.session_state.get("target", "predicted") not in targets:
        st.session_state["target"] = "predicted"
    target = sb.selectbox("Explain", targets, key="target", format_func=target_label, disabled=not spec.explains_class,
                          help="The class a gradient method explains" + ("" if spec.explains_class else
                                                                         f" ({method} explains no class)"))
    return method, selector_options(method, layer=layer, head=head, strict=False), target, int(layer), head


def sidebar() -> Selection:
    """Render the shared sidebar and remember its :class:`Selection` for the page of this run.

    Called by the entry point, so the widgets' state survives page switches.
    """
    models = _model_choices()
    image, error = _image_choice(models)
    method, options, target, layer, head = _method_choice(models, image)
    with st.sidebar.expander("Display"):
        colormap = st.selectbox("Colormap", COLORMAPS, key="colormap")
        alpha = st.slider("Map opacity", 0.0, 1.0, 0.5, 0.05, key="alpha")
        scale = st.radio("Colour scale", SCALES, key="scale", horizontal=True,
                         help="shared: one scale after dividing each map by its mass; raw: one scale on raw "
                              "values; per-map: each map stretched to its own range")
        show_boxes = st.checkbox("Draw boxes", value=True, key="show_boxes")
    sel = Selection(models=models, image=image, error=error, method=method, options=options, target=target,
                    layer=layer, head=head, colormap=colormap, alpha=float(alpha), scale=scale, show_boxes=show_boxes)
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
    if sel.image is None:
        st.info("Upload an image in the sidebar (PNG or JPEG), or switch to the test split.")
        st.stop()
