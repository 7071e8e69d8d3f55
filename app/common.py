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

import argparse
import dataclasses
import hashlib
import json
import math
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st
import torch

from infsa_viz import VARIANTS
from infsa_viz.capture import capture_attention
from infsa_viz.data import LabelledImages, test_split
from infsa_viz.evaluation import EvalProtocol, ImageRecord, score_images
from infsa_viz.images import decode_image
from infsa_viz.io import read_json
from infsa_viz.maps import METHODS, attribute
from infsa_viz.metrics import BoxCurve, box_curves
from infsa_viz.overlay import ColourScale, colour_scale, overlay, with_colorbar
from infsa_viz.preprocess import Prepared, prepare, preprocess
from infsa_viz.spectral import LayerSpectrum, layer_spectra
from infsa_viz.train import predict
from infsa_viz import load_model
from infsa_viz.vit import CONFIG_FILE, WEIGHTS_FILE

ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = ROOT / "models"
METRICS_DIR = ROOT / "metrics"
#: Environment variable naming more model folders (``os.pathsep``-separated), like ``--models``.
MODELS_ENV = "INFSA_VIZ_MODELS"
UPLOAD_TYPES = ["png", "jpg", "jpeg"]
DISPLAY_PX = 288  # overlays are zoomed (nearest) to about this side: 48 px inputs are drawn 6x
#: The classes of the cluttered-digits benchmark the shipped models are trained on (a model's
#: ``card.json`` may name its own as ``class_names``).
DIGIT_NAMES = tuple(f"digit {i}" for i in range(10))
#: Which way each per-image figure is better, shown beside it.
BETTER = {"morf_aoc": "higher", "lerf_auc": "higher", "aopc": "higher", "box_roc_auc": "higher",
          "box_pr_auc": "higher", "pointing_hit": "higher", "probability": "higher"}

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


def user_model(directory: str | Path) -> ModelEntry:
    """Describe a model directory the user named, in any format :func:`infsa_viz.load_model`
    may read: its variant from a ``config.json`` when there is one (else ``"?"``), its version
    the newest file's mtime. Whether it loads is found out when it is used (:func:`get_model`)."""
    path = Path(directory).expanduser()
    if not path.is_dir():
        raise ValueError(f"model directory {str(directory)!r} does not exist")
    files = [f for f in path.iterdir() if f.is_file()]
    if not files:
        raise ValueError(f"{str(directory)!r} is an empty directory, not a model")
    variant = "?"
    if (path / CONFIG_FILE).is_file():
        try:
            config = read_json(path / CONFIG_FILE)
            if isinstance(config, dict):  # ours name the variant; transformers ViT/DeiT are softmax
                variant = str(config.get("attention", "softmax" if "model_type" in config else "?"))
        except ValueError:
            pass
    return ModelEntry(str(path.resolve()), path.name, variant, max(f.stat().st_mtime_ns for f in files))


def model_roots(argv: list[str] | None = None, environ: dict[str, str] | None = None) -> list[Path]:
    """Folders the user added: ``streamlit run app -- --models DIR …`` and :data:`MODELS_ENV`."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--models", nargs="*", default=[])
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    env = (os.environ if environ is None else environ).get(MODELS_ENV, "")
    return [Path(p).expanduser() for p in [*known.models, *env.split(os.pathsep)] if p.strip()]


def find_models(roots: list[Path]) -> tuple[list[ModelEntry], list[str]]:
    """The shipped models and every model under ``roots`` (a root may itself be a model), with a
    one-line problem per root that holds none."""
    entries, problems = discover_models(MODELS_DIR), []
    for root in roots:
        if not root.is_dir():
            problems.append(f"{root}: not a directory")
            continue
        subs = [root] if any(f.is_file() for f in root.iterdir()) else sorted(d for d in root.iterdir() if d.is_dir())
        found = []
        for sub in subs:
            try:
                found.append(user_model(sub))
            except ValueError as err:
                problems.append(str(err))
        if not found:
            problems.append(f"{root}: no model directory inside")
        entries += [e for e in found if e.path not in {x.path for x in entries}]
    return entries, problems


def class_name(entry: ModelEntry | None, index: int) -> str:
    """The name of class ``index`` of a model: its card's ``class_names``, else a digit of the
    cluttered-digits benchmark (10 classes), else ``class i``."""
    names = _class_names(entry.path, entry.version) if entry is not None else DIGIT_NAMES
    return names[index] if 0 <= index < len(names) else f"class {index}"


@st.cache_data(show_spinner=False, max_entries=64)
def _class_names(path: str, version: int) -> tuple[str, ...]:
    card = Path(path) / "card.json"
    try:
        names = read_json(card).get("class_names") if card.is_file() else None
    except (ValueError, AttributeError):
        names = None
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        return tuple(names)
    try:
        config = read_json(Path(path) / CONFIG_FILE)
        classes = int(config.get("num_classes", 10))
    except (ValueError, AttributeError, TypeError, OSError):
        classes = 10
    return DIGIT_NAMES if classes == 10 else tuple(f"class {i}" for i in range(classes))


@dataclass(frozen=True, eq=False)
class ImageChoice:
    """One image to explain: ``key`` (cache identity), ``source`` (for people), ``data`` (one
    image with its label, ``-1`` if unknown, and boxes in source pixels), ``index`` in the split,
    ``fit``: how it is resized to each model (``None``: the model's own preprocessing; ``"pad"``:
    letterboxed, aspect kept, the default for uploads)."""

    key: str
    source: str
    data: LabelledImages
    index: int | None = None
    fit: str | None = None

    def fitted(self, fit: str | None) -> "ImageChoice":
        """The same image resized by ``fit`` (part of the cache key)."""
        return dataclasses.replace(self, key=f"{self.key.split('|')[0]}|{fit or 'model'}", fit=fit)

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
def _load(path: str, version: int) -> tuple[torch.nn.Module | None, threading.Lock, str | None]:
    try:
        return load_model(path), threading.Lock(), None
    except Exception as err:  # noqa: BLE001  # any model the user adds: its problem is shown, the app goes on
        line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return None, threading.Lock(), f"{type(err).__name__}: {line}"


def get_model(path: str, version: int) -> tuple[torch.nn.Module, threading.Lock]:
    """The model at ``path`` (``version``: weights' mtime, so a retrained model reloads);
    ``ValueError`` with a one-line reason when it does not load."""
    model, lock, error = _load(path, version)
    if model is None:
        raise ValueError(f"cannot load the model: {error}")
    return model, lock


def load_error(entry: ModelEntry) -> str | None:
    """Why ``entry`` does not load, in one line, or ``None``."""
    return _load(entry.path, entry.version)[2]


@st.cache_data(show_spinner="Classifying the test split…", max_entries=16)
def test_probabilities(path: str, version: int) -> np.ndarray:
    """``(TEST_SIZE, classes)`` float32: the model's class probabilities on the whole test split,
    computed once per model (so "only misclassified" and sorting the gallery are instant)."""
    model, lock = get_model(path, version)
    split = test_split()
    with lock:
        logits = predict(model, preprocess(model, split.images))
    return torch.softmax(logits.double(), -1).float().numpy()


def misclassified(path: str, version: int) -> np.ndarray:
    """Indices of the test images the model gets wrong, ascending."""
    return np.flatnonzero(test_probabilities(path, version).argmax(-1) != test_split().labels)


@st.cache_data(show_spinner=False, max_entries=256)
def _logits(path: str, version: int, image_key: str, _image: ImageChoice) -> np.ndarray:
    model, lock = get_model(path, version)
    x = _prepared(path, version, image_key, _image).tensor
    with lock, torch.no_grad():
        return model.eval()(x)[0].numpy()


def logits(entry: ModelEntry, image: ImageChoice) -> np.ndarray:
    """``(classes,)``: the model's logits on the image, as it sees it (cached)."""
    return _logits(entry.path, entry.version, image.key, image)


def probabilities(entry: ModelEntry, image: ImageChoice) -> np.ndarray:
    """``(classes,)``: the model's softmax probabilities on the image (cached)."""
    z = logits(entry, image).astype(np.float64)
    e = np.exp(z - z.max())
    return e / e.sum()


@st.cache_data(show_spinner=False, max_entries=64)
def _prepared(path: str, version: int, image_key: str, _image: ImageChoice) -> Prepared:
    return prepare(input_config(get_model(path, version)[0], _image), _image.data.images)


def input_config(model: torch.nn.Module, image: ImageChoice) -> Any:
    """The model's config, its preprocessing's resize replaced by the image's ``fit`` if any."""
    config = model.config
    if image.fit is None or image.fit == config.preprocessing.resize:
        return config
    return dataclasses.replace(config, preprocessing=dataclasses.replace(config.preprocessing, resize=image.fit))


def model_input(entry: ModelEntry, image: ImageChoice) -> Prepared:
    """The image as this model sees it (its own preprocessing; cached)."""
    return _prepared(entry.path, entry.version, image.key, image)


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
    """A :class:`MapView` with every per-image figure the evaluation computes for it."""

    view: MapView
    record: ImageRecord
    fractions: np.ndarray  # (K + 1,) x of record.morf / record.lerf
    box_curve: BoxCurve | None


def _boxes(prepared: Prepared, data: LabelledImages) -> tuple[np.ndarray, np.ndarray | None]:
    boxes = prepared.boxes(0, data.boxes[0])
    return boxes, None if data.negative_boxes is None else prepared.boxes(0, data.negative_boxes[0])


@st.cache_data(show_spinner=False, max_entries=2048)
def _map_view(path: str, version: int, image_key: str, method: str, options_json: str, target: int | None,
              _image: ImageChoice) -> MapView:
    model, lock = get_model(path, version)
    prepared = _prepared(path, version, image_key, _image)
    with lock:
        result = attribute(model, prepared.tensor, method, target=target, **json.loads(options_json))
    boxes, negatives = _boxes(prepared, _image.data)
    return MapView(map=result.maps[0].numpy(), options=result.options,
                   metadata=json.loads(json.dumps(result.metadata, default=str)),
                   target=None if result.target is None else int(result.target[0]),
                   validity=None if result.validity is None else result.validity.for_image(0),
                   display=prepared.display[0], boxes=boxes, negative_boxes=negatives)


@st.cache_data(show_spinner=False, max_entries=2048)
def _explain(path: str, version: int, image_key: str, method: str, options_json: str, target: int | None,
             _image: ImageChoice) -> Explained:
    model, lock = get_model(path, version)
    protocol = EvalProtocol() if target is None else EvalProtocol(target=target)
    indices = None if _image.index is None else [_image.index]
    data = _image.data
    prepared = _prepared(path, version, image_key, _image)  # once: for the scores and for the overlay
    with lock:
        records, result, protocols = score_images(model, data, method, protocol=protocol, name=Path(path).name,
                                                  indices=indices, options=json.loads(options_json),
                                                  prepared=prepared)
    boxes, negatives = _boxes(prepared, data)
    curve = box_curves(result.maps, [boxes], image_size=int(prepared.tensor.shape[-1]))[0]
    view = MapView(map=result.maps[0].numpy(), options=result.options,
                   metadata=json.loads(json.dumps(result.metadata, default=str)), target=records[0].target,
                   validity=records[0].validity, display=prepared.display[0], boxes=boxes, negative_boxes=negatives)
    return Explained(view=view, record=records[0], fractions=protocols["steps"][0], box_curve=curve)


def class_target(entry: ModelEntry, image: ImageChoice, target: str | int) -> int:
    """The class index a target choice names for this model and image: ``"predicted"`` (the
    model's prediction), ``"label"`` (the true label; the prediction for an upload), ``"top k"``
    (the k-th most probable class) or a class index."""
    probs = probabilities(entry, image)
    if target == "label" and image.label is not None:
        return int(image.label)
    if isinstance(target, str) and target.startswith("top "):
        order = np.argsort(-probs, kind="stable")
        return int(order[min(int(target.split()[1]), len(order)) - 1])
    if isinstance(target, int):
        return target
    return int(probs.argmax())


def map_view(entry: ModelEntry, image: ImageChoice, method: str, options: dict[str, Any],
             target: str | int | None = None) -> MapView:
    """The map of ``method`` only (cached; see :func:`explain` for the figures)."""
    cls = class_target(entry, image, target) if METHODS[method].explains_class else None
    return _map_view(entry.path, entry.version, image.key, method, json.dumps(options, sort_keys=True), cls, image)


def explain(entry: ModelEntry, image: ImageChoice, method: str, options: dict[str, Any],
            target: str | int | None = None) -> Explained:
    """The map of ``method`` and its figures (cached); ``target`` only for methods that explain a
    class (see :func:`class_target`). ``ValueError`` for bad options or a model that does not load."""
    cls = class_target(entry, image, target) if METHODS[method].explains_class else None
    return _explain(entry.path, entry.version, image.key, method, json.dumps(options, sort_keys=True), cls, image)


@st.cache_data(show_spinner=False, max_entries=512)
def _spectra(path: str, version: int, image_key: str, matrix: str, _image: ImageChoice) -> list[LayerSpectrum]:
    model, lock = get_model(path, version)
    x = _prepared(path, version, image_key, _image).tensor
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
@dataclass(frozen=True)
class Display:
    """How maps are drawn: colormap (sequential; signed maps use a diverging one), opacity,
    scale mode, clipping percentile (``None``: the extremes) and whether boxes are drawn."""

    colormap: str = "inferno"
    alpha: float = 0.5
    scale: str = "shared"
    clip: float | None = 99.0
    show_boxes: bool = True


def draw(display: Display, method: str, results: list[tuple[ModelEntry, MapView | str]]
         ) -> tuple[dict[str, np.ndarray], ColourScale | None]:
    """Overlays (by model path, in order) of ``method``'s maps drawn together, each with its colour
    bar underneath, on one :func:`~infsa_viz.overlay.colour_scale` of exactly those maps (diverging,
    centred at 0, for a signed method); errors are left out."""
    shown = [(entry, e) for entry, e in results if not isinstance(e, str)]
    if not shown:
        return {}, None
    signed = METHODS[method].signed
    scale = colour_scale([e.map for _, e in shown], display.scale, colormap=None if signed else display.colormap,
                         signed=signed, clip=display.clip)
    tiles = {}
    for i, (entry, e) in enumerate(shown):
        tile = overlay(e.display, e.map, scale, i, alpha=display.alpha,
                       boxes=e.boxes if display.show_boxes else None,
                       distractor_boxes=e.negative_boxes if display.show_boxes else None,
                       zoom=max(1, DISPLAY_PX // e.display.shape[0]))
        tiles[entry.path] = with_colorbar(tile, scale, i, label=short_unit(scale))
    return tiles, scale


def short_unit(scale: ColourScale) -> str:
    """The colour bar's one line: unit and clipping, short enough for a 288 px bar."""
    unit = {"shared": "share of map mass", "raw": "map value", "per-map": "map value"}[scale.mode]
    clip = "" if scale.clip is None else f", clipped at p{scale.clip:g}"
    return unit + clip


def scale_caption(scale: ColourScale) -> str:
    """What the colours of a set of overlays mean, in one line."""
    kind = "diverging, white = 0, red > 0, blue < 0" if scale.signed else "sequential, dark = low"
    if scale.common_limits is None:
        return (f"Each map stretched to its own range ({kind}; {scale.clipping}): compare shapes, not values.")
    lo, hi = scale.common_limits
    why = {"shared": "each map divided by its mass Σ|m| first, so methods with different units compare",
           "raw": "raw values, comparable only within one method"}[scale.mode]
    return (f"One colour scale for all maps ({scale.unit}): {lo:.4g} to {hi:.4g}, {kind}; {why}; "
            f"{scale.clipping}.")


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
    """One markdown line of a map's per-image figures (``n/a`` where undefined), each with the
    direction that is better (all of them: higher).

    MoRF/LeRF are shown only where the model predicts the class they track (``scored``), as the
    evaluation scores them only on correctly classified images: from a class of tiny probability,
    removing patches can multiply it and the AOC, normalised by that probability, means nothing
    (e.g. −760 %)."""
    hit = record.pointing_hit
    point = "n/a" if not math.isfinite(hit) else (":green[hit]" if hit else ":red[miss]")
    predicted = getattr(record, "predicted", record.scored)
    if predicted != record.scored:
        curves = (f"MoRF-AOC / LeRF-AUC n/a (the model predicts class {predicted}, not the scored class "
                  f"{record.scored}) · ")
    else:
        curves = f"MoRF-AOC **{_fmt(record.morf_aoc, '.1f')}** · LeRF-AUC {_fmt(record.lerf_auc, '.1f')} · "
    return (curves +
            f"pointing {point} · box ROC-AUC **{_fmt(record.box_roc_auc, '.3f')}** · "
            f"PR-AUC {_fmt(record.box_pr_auc, '.3f')} (all: higher is better)")


def target_label(target: str | int, entry: ModelEntry | None = None) -> str:
    """What a class-explaining map explains, in words."""
    if isinstance(target, str):
        if target.startswith("top "):
            rank = int(target.split()[1])
            return f"the {rank}{'nd' if rank == 2 else 'rd' if rank == 3 else 'th'}-most-probable class"
        return {"predicted": "the prediction", "label": "the true label"}.get(target, target)
    return class_name(entry, int(target))


def prediction_line(entry: ModelEntry, image: ImageChoice) -> str:
    """"predicts digit 3 (p = 0.912)" with the verdict against the label when there is one."""
    probs = probabilities(entry, image)
    predicted = int(probs.argmax())
    line = f"predicts **{class_name(entry, predicted)}** (p = {probs[predicted]:.3f})"
    if image.label is None:
        return line
    if predicted == image.label:
        return line + " :green[correct]"
    return line + f" :red[wrong: the image shows {class_name(entry, image.label)}]"


# ------------------------------------------------------------------------------ model input
def input_summary(entry: ModelEntry, image: ImageChoice) -> str:
    """How the image became this model's input, in one line: source size and mode, resize policy,
    the model's side and channels."""
    model = get_model(entry.path, entry.version)[0]
    config = input_config(model, image)
    how = config.preprocessing
    source = image.data.images[0]
    h, w = source.shape[:2]
    mode = "gray" if source.ndim == 2 else "RGB"
    side = config.img_size
    policy = {"stretch": "stretched to a square (aspect ratio not kept)",
              "center_crop": "shorter side resized, centre square cropped",
              "pad": "longer side resized, padded to a square (letterbox)"}.get(how.resize, how.resize)
    channels = "gray" if config.in_chans == 1 else "RGB"
    own = "" if how.resize == model.config.preprocessing.resize else \
        f" (the model's own is {model.config.preprocessing.resize}; chosen in the sidebar)"
    return (f"{w}×{h} {mode} → {side}×{side} {channels}: {policy}{own}; then (pixel/255 − {list(how.mean)}) / "
            f"{list(how.std)}")


def input_warnings(entry: ModelEntry, image: ImageChoice) -> list[str]:
    """Ways the image is unlike the model's training data: aspect ratio changed by a stretch,
    colour dropped, much larger/smaller than the model's side, or normalised intensity statistics
    out of range (mean beyond ±1 or standard deviation outside [0.33, 3] of the training data's)."""
    model = get_model(entry.path, entry.version)[0]
    config = input_config(model, image)
    source = image.data.images[0]
    h, w = source.shape[:2]
    out = []
    if config.preprocessing.resize == "stretch" and max(h, w) > 1.1 * min(h, w):
        out.append(f"aspect ratio {w / h:.2f} is stretched to 1 (shapes are distorted)")
    if source.ndim == 3 and config.in_chans == 1:
        rgb = source[..., :3].astype(np.float32)
        if float(np.abs(rgb - rgb.mean(-1, keepdims=True)).mean()) > 8:
            out.append("a colour image: the model sees gray only")
    if max(h, w) > 4 * config.img_size:
        out.append(f"{max(h, w)} px is shrunk {max(h, w) / config.img_size:.0f}× to {config.img_size} px: small "
                   "details vanish")
    x = model_input(entry, image).tensor
    mean, std = float(x.mean()), float(x.std())
    if abs(mean) > 1 or not 1 / 3 <= std <= 3:
        out.append(f"intensity statistics unlike the training data: normalised mean {mean:.2f} (training ≈ 0), "
                   f"std {std:.2f} (training ≈ 1)")
    return out
