"""The images the app explains and the checks on how each model sees them.

Image sets: the test split of each benchmark a selected model was trained on (its card's
``data.name``), folders in any registered layout (:data:`infsa_viz.data.LAYOUTS`) given with
``streamlit run app -- --data folder:NAME=PATH`` (links, file names and exports say ``NAME`` and
paths under the folder, never the server's path) or :data:`DATA_ENV`, and uploads. A set's labels are scored only against the models that *belong*
to it (trained on that benchmark, or naming the folder's classes): every other model sees the
same pixels unlabelled, so no digit label is ever scored against a photo model.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

import catalog
from access import unique_name
from catalog import ModelEntry
from infsa_viz.data import BENCHMARKS, LabelledImages, data_source
from infsa_viz.data.layouts import FOLDER_PREFIX
from infsa_viz.data.splits import DEFAULT_BENCHMARK
from infsa_viz.images import decode_image

#: Environment variable naming image folders (``os.pathsep``-separated), like ``--data folder:PATH``.
DATA_ENV = "INFSA_VIZ_DATA"
#: Images read from a folder (the first ones, in its sorted order).
FOLDER_IMAGES = 500
UPLOAD_TYPES = ["png", "jpg", "jpeg"]


def benchmark_classes() -> dict[str, tuple[str, ...]]:
    """The classes of each registered benchmark's labels, as its registry entry declares them."""
    return {name: benchmark.classes for name, benchmark in BENCHMARKS.items()}


# ------------------------------------------------------------------------------ image sets
_FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")


def _folder_name(text: str) -> str:
    """``text`` made a folder's short name (letters, digits, ``.``, ``_``, ``-``; at most 40)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:40]
    return name or "images"


def data_folders(argv: list[str] | None = None, environ: dict[str, str] | None = None) -> dict[str, Path]:
    """The image folders the server was started with, by short name: ``-- --data folder:NAME=PATH``
    (or ``folder:PATH``, named by the folder's own name; ``-2``, ``-3`` … where two share one) and
    :data:`DATA_ENV`. Links, file names and exports name a folder by this name only, so a link
    reopens on a colleague's server that gives its copy the same name."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--data", nargs="*", default=[])
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    env = (os.environ if environ is None else environ).get(DATA_ENV, "")
    out: dict[str, Path] = {}
    for spec in [*known.data, *env.split(os.pathsep)]:
        spec = spec.strip()
        if not spec or spec in BENCHMARKS:
            continue
        body = spec.removeprefix(FOLDER_PREFIX)
        name, eq, rest = body.partition("=")
        if eq and _FOLDER_NAME.fullmatch(name):
            path, base = Path(rest).expanduser().resolve(), name
        else:
            path = Path(body).expanduser().resolve()
            base = _folder_name(path.name)
        if path in out.values():
            continue
        out[unique_name(base, out)] = path
    return out


def data_specs(argv: list[str] | None = None, environ: dict[str, str] | None = None) -> list[str]:
    """Image sets the user added: benchmarks named with ``--data`` or :data:`DATA_ENV`, and each
    folder of :func:`data_folders` as ``folder:NAME``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--data", nargs="*", default=[])
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    env = (os.environ if environ is None else environ).get(DATA_ENV, "")
    benchmarks = [s.strip() for s in [*known.data, *env.split(os.pathsep)] if s.strip() in BENCHMARKS]
    folders = [FOLDER_PREFIX + name for name in data_folders(argv, environ)]
    return list(dict.fromkeys([*benchmarks, *folders]))


def folder_path(key: str) -> Path:
    """The folder a set key ``folder:NAME`` names on this server; ``ValueError`` for a name it was not
    started with."""
    name = key.removeprefix(FOLDER_PREFIX)
    folders = data_folders()
    if name not in folders:
        raise ValueError(f"no image folder named {name!r} on this server (folders are named when it starts: "
                         f"-- --data folder:NAME=PATH); it has {', '.join(folders) or 'none'}")
    return folders[name]


def image_sets(models: list[ModelEntry], specs: list[str]) -> list[str]:
    """Keys of the image sets to offer: the benchmarks the models were trained on (the default
    benchmark when none was), then ``specs``."""
    trained = {catalog.trained_on(e.path, e.version) for e in models}
    benchmarks = [b for b in BENCHMARKS if b in trained] or [DEFAULT_BENCHMARK]
    return list(dict.fromkeys([*benchmarks, *specs]))


def _is_folder(key: str) -> bool:
    """Whether a set key names a folder this server was started with (``folder:NAME``)."""
    return key.startswith(FOLDER_PREFIX)


def set_title(key: str) -> str:
    """A set's name for people."""
    return f"folder {key.removeprefix(FOLDER_PREFIX)}" if _is_folder(key) else f"{key} test split"


@dataclass(frozen=True, eq=False)
class _SetData:
    """A set read once: its images (``None`` with ``error`` when they cannot be read), their class names,
    and whether they are labelled by a model's class names (a folder) or by classes of their own (a
    benchmark: only the models trained on it are scored against them)."""

    data: LabelledImages | None
    classes: tuple[str, ...]
    error: str | None
    model_labels: bool
    objects: str | None = None


@st.cache_resource(show_spinner="Reading the images…", max_entries=8)
def _set_data(key: str, spec: str) -> _SetData:
    try:
        source = data_source(spec)  # the library's one resolver of both kinds
        opened = source.open()
        data = opened.labelled(None if source.size else FOLDER_IMAGES)  # a generated split whole (cached)
        classes = tuple(opened.classes)
    except (ValueError, OSError) as err:  # the reason, with the folder named as links name it
        root = spec.removeprefix(FOLDER_PREFIX)
        return _SetData(None, (), str(err).splitlines()[0].replace(root, set_title(key)), True, None)
    if source.root is not None:  # exports say where an image is in its folder, never the server's path
        data = dataclasses.replace(data, names=[_relative(name, source.root) for name in data.names])
    return _SetData(data, classes, None, source.model_labels, source.objects)


def _relative(name: str, root: Path) -> str:
    try:
        return Path(name).resolve().relative_to(root).as_posix()
    except ValueError:
        return Path(name).name


def set_spec(key: str) -> str:
    """The library's data spec of a set key: a benchmark's name, or ``folder:PATH`` on this server. Caches
    of a set's results key on it beside the set key: one short name may name another folder on the next
    server, or in the next test."""
    return FOLDER_PREFIX + str(folder_path(key)) if _is_folder(key) else key


def set_data(key: str) -> LabelledImages:
    """The images of a set (read once per server; a folder's image names relative to it);
    ``ValueError`` when a folder cannot be read or is not one this server was started with."""
    found = _set_data(key, set_spec(key))
    if found.data is None:
        raise ValueError(f"{set_title(key)}: {found.error}")
    return found.data


def set_classes(key: str) -> tuple[str, ...]:
    """The class names of a set's labels."""
    return _set_data(key, set_spec(key)).classes


def set_objects(key: str) -> str | None:
    """What a set's images carry beyond their labels, as its data source declares it: ``"scenes"`` (a target
    and distractors, each with a box), ``"boxes"`` (target boxes) or ``None``."""
    return _set_data(key, set_spec(key)).objects


def own_labels(key: str) -> bool:
    """Whether a set's labels are classes of its own (a benchmark: they speak of the models trained on
    it), not a model's class names (a folder: they speak of every model naming its classes)."""
    return not _set_data(key, set_spec(key)).model_labels


def class_names(entry: ModelEntry) -> tuple[str, ...]:
    """A model's class names (:func:`catalog.class_names`; a model without names of its own is
    named by the benchmark it was trained on)."""
    return catalog.class_names(entry, benchmark_classes())


def _folder_classes(entry: ModelEntry, key: str) -> tuple[np.ndarray | None, str | None]:
    """``(model class of each folder label, None)`` when the model's class names contain the
    folder's classes (by name or index, as ``infsa-viz evaluate`` maps them:
    :func:`infsa_viz.data.folder.folder_labels`), else ``(None, why)``."""
    from infsa_viz.data.folder import folder_labels

    folders = set_classes(key)
    names = class_names(entry)
    try:
        mapping, _ = folder_labels(list(folders), classes=list(names), num_classes=len(names))
    except ValueError:
        missing = [f for f in folders if f not in names]
        return None, f"its classes lack {', '.join(missing[:3])}{' …' if len(missing) > 3 else ''}"
    return np.array([mapping[f] for f in folders], dtype=np.int64), None


def set_labels(entry: ModelEntry, key: str | None) -> np.ndarray | None:
    """The set's labels as classes of this model (``(n,) int64``), or ``None`` when they are not
    its classes: a benchmark it was not trained on, a folder whose classes it does not name."""
    if key is None or catalog.load_error(entry) is not None:
        return None
    if own_labels(key):
        return set_data(key).labels if catalog.trained_on(entry.path, entry.version) == key else None
    classes, _ = _folder_classes(entry, key)
    return None if classes is None else classes[set_data(key).labels]


def belongs(entry: ModelEntry, key: str | None) -> bool:
    """Whether a set's labels are classes of this model: it was trained on the benchmark, or its
    class names contain the folder's classes (each folder mapped to its class by name)."""
    return set_labels(entry, key) is not None


def mismatch(entry: ModelEntry, key: str) -> str | None:
    """Why a folder's labels are not scored for this model, in a few words (``None``: they are,
    or the set is a benchmark)."""
    if own_labels(key) or catalog.load_error(entry) is not None:
        return None
    return _folder_classes(entry, key)[1]


# ---------------------------------------------------------------------------------- images
@dataclass(frozen=True, eq=False)
class ImageChoice:
    """One image to explain.

    ``base`` (identity: ``SET:i`` or ``upload:<sha256>``), ``source`` (for people), ``data``
    (one image with its label, ``-1`` if unknown, and boxes in source pixels), ``index`` in its
    set, ``set_key``, ``name`` (what the URL records: the index or the upload's file name),
    ``fit`` (``None``: the model's own preprocessing; ``"pad"``: letterboxed) and ``labelled``
    (``False``: the same pixels shown to a model the labels do not speak of)."""

    base: str
    source: str
    data: LabelledImages
    index: int | None = None
    set_key: str | None = None
    name: str = ""
    fit: str | None = None
    labelled: bool = True

    @property
    def key(self) -> str:
        """The cache identity: pixels, resize and the label used (if any)."""
        used = f"label {int(self.data.labels[0])}" if self.labelled else "unlabelled"
        return f"{self.base}|{self.fit or 'model'}|{used}"

    @property
    def label(self) -> int | None:
        label = int(self.data.labels[0])
        return None if label < 0 or not self.labelled else label

    def fitted(self, fit: str | None) -> "ImageChoice":
        """The same image resized by ``fit``."""
        return dataclasses.replace(self, fit=fit)

    def relabelled(self, label: int) -> "ImageChoice":
        """The same image with its label as class ``label`` of a model (a folder's class mapped by name)."""
        data = self.data
        one = LabelledImages(images=data.images, labels=np.array([label]), boxes=data.boxes,
                             negative_boxes=data.negative_boxes, names=list(data.names), scenes=data.scenes)
        return dataclasses.replace(self, data=one)

    def unlabelled(self) -> "ImageChoice":
        """The same pixels without label and boxes (for a model the set's classes are not)."""
        data = self.data
        one = LabelledImages(images=data.images, labels=np.array([-1]), boxes=[np.zeros((0, 4), np.int64)],
                             names=list(data.names))
        return dataclasses.replace(self, data=one, labelled=False)


def set_image(key: str, index: int) -> ImageChoice:
    """Image ``index`` of set ``key``: the same pixels whichever page, model or command asks."""
    data = set_data(key)
    what = f"image #{index + 1} ({data.names[index]})" if _is_folder(key) else f"test image #{index + 1}"
    return ImageChoice(f"{key}:{index}", what, data.subset([index]), index, key, str(index))


@st.cache_data(show_spinner="Decoding the image…", max_entries=8)
def upload_image(data: bytes, name: str) -> ImageChoice:
    """An uploaded file (any size, gray/RGB/RGBA); ``ValueError`` if it is not a readable image."""
    image = decode_image(data, name=name)
    one = LabelledImages(images=[image], labels=np.array([-1]), boxes=[np.zeros((0, 4), np.int64)], names=[name])
    return ImageChoice(f"upload:{hashlib.sha256(data).hexdigest()}", f"upload {name!r}", one, name=name)


def for_model(image: ImageChoice, entry: ModelEntry) -> ImageChoice:
    """The image as it is given to ``entry``: unlabelled unless the model belongs to its set, and
    with the model's own resize where it cannot take a letterbox (see :func:`fit_note`)."""
    if image.labelled and image.set_key is not None:
        labels = set_labels(entry, image.set_key)
        if labels is None:
            image = image.unlabelled()
        elif image.index is not None and int(labels[image.index]) != int(image.data.labels[0]):
            image = image.relabelled(int(labels[image.index]))
    if image.fit is not None and fit_note(entry, image) is not None:
        image = image.fitted(None)
    return image


def fit_note(entry: ModelEntry, image: ImageChoice) -> str | None:
    """Why a letterbox does not apply to this model, in plain words (``None`` when it does)."""
    if image.fit != "pad" or catalog.load_error(entry) is not None:
        return None
    how = catalog.get_model(entry)[0].config.preprocessing
    if how.crop_fraction == 1:
        return None
    return (f"{entry.name} crops the centre {how.crop_fraction:.0%} of its resized input, as it was trained; "
            "letterboxing would show it a framing it never saw, so it gets its own preprocessing")


# ----------------------------------------------------------------------------- input checks
def input_config(model: Any, image: ImageChoice) -> Any:
    """The model's config, its preprocessing's resize replaced by the image's ``fit`` if any."""
    config = model.config
    if image.fit is None or image.fit == config.preprocessing.resize:
        return config
    return dataclasses.replace(config, preprocessing=dataclasses.replace(config.preprocessing, resize=image.fit))


def input_summary(model: Any, image: ImageChoice) -> str:
    """How the image became this model's input, in one line: source size and mode, resize policy,
    the model's side and channels."""
    config = input_config(model, image)
    how = config.preprocessing
    source = image.data.images[0]
    h, w = source.shape[:2]
    mode = "gray" if source.ndim == 2 else "RGB"
    side = config.img_size
    crop = "" if how.crop_fraction == 1 else f", centre {how.crop_fraction:.1%} kept"
    policy = {"stretch": "stretched to a square (aspect ratio not kept)",
              "center_crop": "shorter side resized, centre square cropped",
              "pad": "longer side resized, padded to a square (letterbox)"}.get(how.resize, how.resize)
    channels = "gray" if config.in_chans == 1 else "RGB"
    own = "" if how.resize == model.config.preprocessing.resize else \
        f" (the model's own is {model.config.preprocessing.resize}; chosen in the sidebar)"
    return (f"{w}×{h} {mode} → {side}×{side} {channels}: {policy}{crop}{own}; then (pixel/255 − "
            f"{[round(m, 4) for m in how.mean]}) / {[round(s, 4) for s in how.std]}")


def input_warnings(model: Any, image: ImageChoice, x: Any) -> list[str]:
    """Ways the image is unlike the model's training data: aspect ratio changed by a stretch,
    colour dropped, much larger than the model's side, or normalised intensity statistics of
    ``x`` (the model input) out of range (mean beyond ±1 or standard deviation outside [1/3, 3])."""
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
    mean, std = float(x.mean()), float(x.std())
    if abs(mean) > 1 or not 1 / 3 <= std <= 3:
        out.append(f"intensity statistics unlike the training data: normalised mean {mean:.2f} (training ≈ 0), "
                   f"std {std:.2f} (training ≈ 1)")
    return out
