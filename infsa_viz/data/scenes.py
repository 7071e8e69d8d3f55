"""Scenes: a cluttered-digits image as named objects that can be removed or swapped in distribution.

A :class:`Scene` holds what the generator composited: the background (a photo crop or black), and
each digit's rendered patch at its box, the target first. The image is the max-composite
``canvas = background; canvas[box_k] = max(canvas[box_k], patch_k)`` for every digit ``k``, so
the scene re-renders

* without any subset of digits: the removed digits' pixels become what is under them (the
  background and any other digit), exactly the image the generator would have made had it never
  drawn them (max is order-free, so removing digit ``k`` is compositing the others);
* with the background swapped for its *alternative crop*: the other scikit-learn sample photo
  (``china.jpg`` ↔ ``flower.jpg``) at the same downscale and the same relative offset, a crop the
  generator draws with positive probability, so the swapped image is one the training
  distribution contains. A black background (``background="none"``) has a black alternative: its
  swap changes nothing.

Objects are indexed ``0 .. D`` with ``D = 1 + K`` digits: ``0`` is the target, ``1 .. K`` the
distractors, ``D`` the background; :func:`object_names` names them.

**Visible pixels** (:meth:`Scene.masks`). A digit's visible pixels are the pixels whose value
changes when that digit alone is removed: where its rendered value is strictly above the
background's and every other digit's (so it is nonzero and wins the max-composite alone). The
background's visible pixels are where the composite takes the background's value: no digit is
above it there (a digit equal to the background does not hide it). The masks are disjoint; a pixel
where two or more digits tie above the background belongs to no object (removing either leaves
it unchanged). Masks are in source pixels; :meth:`~infsa_viz.preprocess.Prepared.masks` maps them
to a model's input.

Removing the target leaves an image whose largest digit is a distractor, a layout the generator
never draws (its targets are larger): the intervention is in distribution pixel by pixel, not in
the label's sense. This is the usual price of part removal (Hesse et al., FunnyBirds, ICCV 2023).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

__all__ = ["Scene", "object_names"]


def object_names(num_distractors: int) -> tuple[str, ...]:
    """Names of a scene's objects in index order: ``target``, ``distractor_1`` …, ``background``."""
    return ("target", *(f"distractor_{k}" for k in range(1, num_distractors + 1)), "background")


@dataclass(frozen=True, eq=False)
class Scene:
    """One cluttered-digits image as objects (see the module doc for the composite and the masks).

    Attributes:
        background: ``(S, S) uint8`` what lies under the digits (read-only; may be a view of a
            cached photo).
        alternative_background: ``(S, S) uint8`` the background's in-distribution replacement.
        digits: ``D`` tight ``uint8`` patches, the target first; patch ``k`` has the shape of box ``k``.
        boxes: ``(D, 4) int64`` ``(x0, y0, x1, y1)``, ``x1``/``y1`` exclusive.
        labels: ``(D,) int64`` each digit's class.
    """

    background: np.ndarray
    alternative_background: np.ndarray
    digits: tuple[np.ndarray, ...]
    boxes: np.ndarray
    labels: np.ndarray

    def __post_init__(self) -> None:
        shape = self.background.shape
        if self.background.ndim != 2 or self.alternative_background.shape != shape:
            raise ValueError(f"background has shape {shape} and alternative_background "
                             f"{self.alternative_background.shape}; expected two equal (S, S) arrays")
        if len(self.digits) == 0 or self.boxes.shape != (len(self.digits), 4) or self.labels.shape != (len(self.digits),):
            raise ValueError(f"{len(self.digits)} digits, boxes {self.boxes.shape}, labels {self.labels.shape}; "
                             "expected D >= 1 digits with (D, 4) boxes and (D,) labels")
        for k, (patch, (x0, y0, x1, y1)) in enumerate(zip(self.digits, self.boxes, strict=True)):
            if patch.shape != (y1 - y0, x1 - x0) or x0 < 0 or y0 < 0 or y1 > shape[0] or x1 > shape[1]:
                raise ValueError(f"digit {k} has patch {patch.shape} at box {self.boxes[k].tolist()}; expected "
                                 f"the box's shape inside the {shape} canvas")

    @property
    def num_objects(self) -> int:
        """``D + 1``: the digits and the background."""
        return len(self.digits) + 1

    @property
    def object_names(self) -> tuple[str, ...]:
        return object_names(len(self.digits) - 1)

    def _index(self, obj: int | str) -> int:
        names = self.object_names
        if isinstance(obj, str) and obj in names:
            return names.index(obj)
        if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool) and 0 <= obj < len(names):
            return int(obj)
        raise ValueError(f"object {obj!r} is invalid; expected an index 0..{len(names) - 1} or one of {list(names)}")

    def render(self, *, remove: Collection[int | str] = (), swap_background: bool = False) -> np.ndarray:
        """The image with the digits in ``remove`` left out, on the original or alternative background.

        Args:
            remove: digits to leave out, by index or name (default none: the published image).
            swap_background: use :attr:`alternative_background` (default False).

        Returns:
            ``(S, S) uint8``, a new array.

        Raises:
            ValueError: an unknown object, or the background in ``remove`` (it is swapped, not removed).
        """
        removed = {self._index(obj) for obj in remove}
        if len(self.digits) in removed:
            raise ValueError("remove names the background; expected digits only (swap it with swap_background=True)")
        canvas = (self.alternative_background if swap_background else self.background).copy()
        for k, (patch, (x0, y0, x1, y1)) in enumerate(zip(self.digits, self.boxes, strict=True)):
            if k not in removed:
                region = canvas[y0:y1, x0:x1]
                np.maximum(region, patch, out=region)
        return canvas

    def intervene(self, objects: Collection[int | str]) -> np.ndarray:
        """The image with every object in ``objects`` changed by its in-distribution intervention
        (a digit removed, the background swapped for its alternative crop), the others kept.

        Args:
            objects: objects by index or name (empty: the published image).

        Returns:
            ``(S, S) uint8``, a new array.
        """
        changed = {self._index(obj) for obj in objects}
        background = len(self.digits)
        return self.render(remove=changed - {background}, swap_background=background in changed)

    def interventions(self) -> np.ndarray:
        """``(D + 1, S, S) uint8``: image ``k`` with object ``k`` alone changed (:meth:`intervene`)."""
        return np.stack([self.intervene((k,)) for k in range(self.num_objects)])

    def layers(self) -> np.ndarray:
        """``(D + 1, S, S) uint8``: each digit alone on a black canvas, then the background."""
        out = np.zeros((self.num_objects, *self.background.shape), dtype=np.uint8)
        for k, (patch, (x0, y0, x1, y1)) in enumerate(zip(self.digits, self.boxes, strict=True)):
            out[k, y0:y1, x0:x1] = patch
        out[-1] = self.background
        return out

    def masks(self) -> np.ndarray:
        """``(D + 1, S, S) bool`` visible pixels of each object, in object order (module doc).

        Example:
            >>> scene = generate_scenes(1, split="test", seed=0)[0]
            >>> bool((scene.masks()[0] == (scene.render() != scene.render(remove=["target"]))).all())
            True
        """
        layers = self.layers()  # (D + 1, S, S), background last
        top = layers.max(axis=0)  # (S, S)
        owner = layers.argmax(axis=0)  # first index at the maximum
        ranked = np.sort(layers, axis=0)
        alone = ranked[-1] > ranked[-2]  # one object strictly above all others
        out = (owner[None] == np.arange(len(self.digits))[:, None, None]) & alone[None]  # (D, S, S)
        return np.concatenate([out, (layers[-1] == top)[None]])
