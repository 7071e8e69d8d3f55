"""The cue at other saliences, and the regions a map's cue share is read on.

The salience control after Clark, Oliveira, Wilming & Haufe (2026, arXiv 2602.09238: attributions
follow a feature's salience whatever the training regime) shows each test scene's cue at several
saliences (:data:`SALIENCE`): as generated (a 7 × 7 glyph at full intensity), *faint* (the same
glyph at intensity 96, above the faint photo background's 0..63), *large* (the glyph scaled 2× by
pixel repetition to 14 × 14, centred where it was and moved inside the canvas; it may overlap other
objects more than the generator allows: a salience probe, not a scene the generator draws) and
*absent* (removed: the scene the generator draws with the cue left out). Every other pixel of the
scene is kept.

The *cue region* is the cue's box (every pixel of the glyph's square, ink or not: a patch map cannot
resolve the glyph's strokes); with the cue absent, the box where it was drawn. The other objects
keep their visible pixels (:meth:`~infsa_viz.data.scenes.Scene.masks`) outside that box.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...data import Scene

__all__ = ["CUE", "SALIENCE", "Salience", "cue_regions", "salient_scene"]

#: The scene object the cue is.
CUE = "cue"


@dataclass(frozen=True)
class Salience:
    """One way of showing the cue: ``scale`` (pixel repetition), ``intensity`` (ink value, ``None``:
    as generated), ``present``."""

    name: str
    scale: int = 1
    intensity: int | None = None
    present: bool = True
    description: str = ""


#: The salience conditions of the control, the generated one first.
SALIENCE: dict[str, Salience] = {s.name: s for s in (
    Salience("as_generated", description="the test split as generated: a 7 x 7 glyph at intensity 255"),
    Salience("faint", intensity=96, description="the glyph at intensity 96 (the background photo reaches 63)"),
    Salience("large", scale=2, description="the glyph scaled 2x (14 x 14, pixel repetition), centred where it was"),
    Salience("absent", present=False, description="the cue removed (the scene the generator draws without it)"),
)}


def _cue_index(scene: Scene) -> int:
    if CUE not in scene.names:  # type: ignore[operator]
        raise ValueError(f"scene objects {scene.object_names}; expected a cued-digits scene with a {CUE!r} object")
    return scene.names.index(CUE)  # type: ignore[union-attr]


def salient_scene(scene: Scene, salience: Salience | str) -> tuple[Scene, np.ndarray]:
    """``scene`` with its cue shown as ``salience`` says, and the cue's box ``(4,)`` in that scene.

    Raises:
        ValueError: an unknown salience, a scene without a cue object, or one whose cue is absent.
    """
    if isinstance(salience, str):
        if salience not in SALIENCE:
            raise ValueError(f"salience={salience!r} is invalid; expected one of {list(SALIENCE)}")
        salience = SALIENCE[salience]
    c = _cue_index(scene)
    patch, box = scene.parts[c], scene.boxes[c]
    if patch.size == 0:
        raise ValueError("the scene's cue is absent; expected a scene that shows it (the cued test split does)")
    S = scene.background.shape[0]
    if salience.intensity is not None:
        patch = np.where(patch > 0, np.uint8(salience.intensity), np.uint8(0)).astype(np.uint8)
    if salience.scale > 1:
        patch = np.kron(patch, np.ones((salience.scale, salience.scale), np.uint8))
        h, w = patch.shape
        x0, y0, x1, y1 = (int(v) for v in box)
        nx = min(max(x0 + ((x1 - x0) - w) // 2, 0), S - w)
        ny = min(max(y0 + ((y1 - y0) - h) // 2, 0), S - h)
        box = np.array([nx, ny, nx + w, ny + h], dtype=np.int64)
    parts, boxes, labels = list(scene.parts), scene.boxes.copy(), scene.labels.copy()
    if salience.present:
        parts[c], boxes[c] = patch, box
    else:
        parts[c], boxes[c], labels[c] = np.zeros((0, 0), np.uint8), np.zeros(4, np.int64), -1
    changed = Scene(scene.background, scene.alternative_background, tuple(parts), boxes, labels, names=scene.names,
                    replacements=scene.replacements)
    return changed, np.asarray(box, dtype=np.int64).copy()


def cue_regions(scene: Scene, cue_box: np.ndarray) -> np.ndarray:
    """``(O, S, S) bool``: each object's visible pixels (:meth:`Scene.masks`), the cue's replaced by
    its whole box ``cue_box`` and every other object's cut outside it (the regions stay disjoint)."""
    regions = scene.masks().copy()
    c = _cue_index(scene)
    x0, y0, x1, y1 = (int(v) for v in cue_box)
    box = np.zeros(regions.shape[1:], dtype=bool)
    box[y0:y1, x0:x1] = True
    regions &= ~box[None]
    regions[c] = box
    return regions
