"""What the Intervention page computes: a scene with any set of its objects changed, a photo
with a box occluded, and each model's per-object evidence, from the library.

The changed image is the library's (:meth:`infsa_viz.data.Scene.intervene`: a digit removed, the
cued target swapped for another digit, the background swapped for its alternative crop); the
per-object evidence is :func:`infsa_viz.evaluation.interventions.object_importance` of the clean
scene, and a map's share and density on each object are :func:`infsa_viz.metrics.object_mass` /
:func:`~infsa_viz.metrics.object_density` on the object masks that function returns. Changed images
are :class:`inputs.ImageChoice` s like any other, so every cached map, probability and figure of
:mod:`compute` applies to them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import streamlit as st

import catalog
from catalog import ModelEntry
from inputs import ImageChoice
from infsa_viz.data import LabelledImages, Scene
from infsa_viz.evaluation.interventions import ObjectImportance, object_importance
from infsa_viz.metrics import object_density, object_mass

__all__ = ["FILLS", "Evidence", "changed", "object_evidence", "occluded", "scene_of", "shown_objects"]

#: How an occluded box is filled: the image's mean colour, black or white.
FILLS = ("mean colour", "black", "white")


def scene_of(image: ImageChoice) -> Scene | None:
    """The image's scene (benchmark images), or ``None`` (photos, uploads)."""
    scenes = image.data.scenes
    return None if scenes is None else scenes[0]


def shown_objects(scene: Scene) -> list[str]:
    """The scene's objects that are in the image (absent distractor slots and cue left out)."""
    return [name for name, present in zip(scene.object_names, scene.present) if present]


def rule(scene: Scene, name: str) -> str:
    """What the intervention on one object does, in two or three words."""
    if name == "background":
        return "swap"
    return "swap digit" if scene.replacements[scene.object_names.index(name)] is not None else "remove"


def _one(image: ImageChoice, pixels: np.ndarray, tag: str, *, label: int | None, boxes: np.ndarray,
         negatives: np.ndarray | None) -> ImageChoice:
    data = LabelledImages(images=[pixels], labels=np.array([-1 if label is None else label]), boxes=[boxes],
                          negative_boxes=None if negatives is None else [negatives], names=[f"{image.name}|{tag}"])
    return dataclasses.replace(image, base=f"{image.base}|{tag}", source=f"{image.source}, {tag}", data=data,
                               index=None, set_key=None)


def changed(image: ImageChoice, scene: Scene, objects: Sequence[str]) -> ImageChoice:
    """``image`` (as one model is given it: :func:`inputs.for_model`) with ``objects`` of its
    ``scene`` changed (:meth:`~infsa_viz.data.Scene.intervene`); its label is kept unless the
    target changed."""
    chosen = sorted(set(objects), key=scene.object_names.index)
    names = scene.object_names
    kept = [k for k in range(1, len(scene.parts)) if scene.present[k] and names[k] not in chosen]
    target_box = scene.boxes[0] if "target" not in chosen or scene.replacements[0] is None \
        else scene.replacements[0][1]
    boxes = np.zeros((0, 4), np.int64) if "target" in chosen and scene.replacements[0] is None else target_box[None]
    return _one(image, scene.intervene(chosen), "changed " + "+".join(chosen),
                label=None if "target" in chosen else image.label, boxes=boxes,
                negatives=scene.boxes[kept].reshape(-1, 4))


def occluded(image: ImageChoice, box: tuple[float, float, float, float], fill: str) -> ImageChoice:
    """``image`` with the box ``(x0, y0, x1, y1)`` (shares of its width and height) filled by
    ``fill`` (:data:`FILLS`)."""
    if fill not in FILLS:
        raise ValueError(f"fill={fill!r} is invalid; expected one of {list(FILLS)}")
    pixels = np.array(image.data.images[0], copy=True)
    h, w = pixels.shape[:2]
    x0, y0, x1, y1 = (round(v * n) for v, n in zip(box, (w, h, w, h)))
    value = {"black": 0, "white": 255}.get(fill)
    if value is None:
        value = pixels.reshape(-1, pixels.shape[-1]).mean(0).round().astype(np.uint8) if pixels.ndim == 3 \
            else np.uint8(round(float(pixels.mean())))
    pixels[y0:y1, x0:x1] = value
    tag = f"occluded {x0},{y0},{x1},{y1} {fill}"
    return _one(image, pixels, tag, label=image.label, boxes=np.asarray(image.data.boxes[0]).reshape(-1, 4),
                negatives=None)


@st.cache_data(show_spinner="Changing each object in turn…", max_entries=256)
def _importance(path: str, version: int, image_key: str, target: int, _scene: Scene,
                index: int | None) -> ObjectImportance:
    model, lock = catalog.model_at(path, version)
    with lock:
        return object_importance(model, [_scene], explained=[target], indices=None if index is None else [index])


@dataclass(frozen=True)
class Evidence:
    """One model's per-object evidence on a scene: ``importance`` (the library's record) and, for
    each map given, the share and density of its positive mass on each object ``(O,)``."""

    importance: ObjectImportance
    shares: tuple[np.ndarray, ...]
    densities: tuple[np.ndarray, ...]


def object_evidence(entry: ModelEntry, image: ImageChoice, scene: Scene, target: int,
             maps: Sequence[np.ndarray]) -> Evidence:
    """:func:`object_importance` of ``entry`` on ``image``'s ``scene`` explaining ``target``
    (cached by the image as it is given the model), with each map's :func:`object_mass` and
    :func:`object_density`."""
    found = _importance(entry.source, entry.version, image.key, int(target), scene, image.index)
    masks = found.masks  # (1, O, S, S) in the model's input
    with np.errstate(invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a map without positive mass: nan, shown as such
            shares = tuple(object_mass(m[None], masks)[0] for m in maps)
    return Evidence(found, shares, tuple(object_density(m[None], masks)[0] for m in maps))
