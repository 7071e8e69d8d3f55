"""Scenes: a generated image as named objects that can be removed or swapped in distribution.

A :class:`Scene` holds what a generator composited: the background (a photo crop or black), and
each *part*'s rendered patch at its box — the target digit first, then the distractor digits and,
in the cued benchmarks (:mod:`infsa_viz.data.cued`), the cue glyph. The image is the max-composite
``canvas = background; canvas[box_k] = max(canvas[box_k], patch_k)`` for every part ``k``, so the
scene re-renders

* without any subset of parts: the removed parts' pixels become what is under them (the
  background and any other part), exactly the image the generator would have made had it never
  drawn them (max is order-free, so removing part ``k`` is compositing the others);
* with a part *replaced* by its replacement patch (``Scene.replacements``): in the cued benchmarks
  the target digit is swapped for a digit of another class at the same size and centre, so the
  changed image is again one the generator draws (with another label);
* with the background swapped for its *alternative crop*: the other scikit-learn sample photo
  (``china.jpg`` ↔ ``flower.jpg``) at the same downscale and the same relative offset, a crop the
  generator draws with positive probability. A black background (``background="none"``) has a
  black alternative: its swap changes nothing.

Objects are indexed ``0 .. P`` with ``P`` parts: ``0`` is the target, then the other parts in the
generator's order, ``P`` the background; :attr:`Scene.object_names` names them. A benchmark with a
varying number of distractors keeps a fixed list of slots; an *absent* part has an empty ``(0, 0)``
patch at box ``(0, 0, 0, 0)`` and label ``-1``: it renders nothing, its mask is empty and its
intervention leaves the image unchanged (readers leave objects with empty masks out).

Each object's *intervention* (:meth:`Scene.intervene`) is the in-distribution change the benchmark
defines for it: a part with a replacement is replaced, any other part removed, the background
swapped. :attr:`Scene.intervention_rule` says it in words.

**Visible pixels** (:meth:`Scene.masks`). A part's visible pixels are the pixels whose value
changes when that part alone is removed: where its rendered value is strictly above the
background's and every other part's (so it is nonzero and wins the max-composite alone). The
background's visible pixels are where the composite takes the background's value: no part is
above it there (a part equal to the background does not hide it). The masks are disjoint; a pixel
where two or more parts tie above the background belongs to no object (removing either leaves
it unchanged). Masks are in source pixels; :meth:`~infsa_viz.preprocess.Prepared.masks` maps them
to a model's input.

In ``cluttered-digits`` every part is removed: removing the target leaves an image whose largest
digit is a distractor, a layout the generator never draws (its targets are larger): in
distribution pixel by pixel, not in the label's sense — the usual price of part removal (Hesse et
al., FunnyBirds, ICCV 2023), which the cued benchmarks avoid by swapping the target.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

__all__ = ["Scene", "object_names"]


def object_names(num_distractors: int, *, cue: bool = False) -> tuple[str, ...]:
    """Names of a scene's objects in index order: ``target``, ``distractor_1`` …, [``cue``,] ``background``."""
    return ("target", *(f"distractor_{k}" for k in range(1, num_distractors + 1)), *(("cue",) if cue else ()),
            "background")


Replacement = tuple[np.ndarray, np.ndarray]  # (patch, box (4,)): what a replaced part becomes


def _check_patch(where: str, patch: np.ndarray, box: np.ndarray, shape: tuple[int, ...]) -> None:
    x0, y0, x1, y1 = (int(v) for v in box)
    if patch.shape != (y1 - y0, x1 - x0) or x0 < 0 or y0 < 0 or y1 > shape[0] or x1 > shape[1]:
        raise ValueError(f"{where} has patch {patch.shape} at box {[x0, y0, x1, y1]}; expected the box's shape "
                         f"inside the {shape} canvas")


@dataclass(frozen=True, eq=False)
class Scene:
    """One generated image as objects (see the module doc for the composite, the interventions and the masks).

    Attributes:
        background: ``(S, S) uint8`` what lies under the parts (read-only; may be a view of a
            cached photo).
        alternative_background: ``(S, S) uint8`` the background's in-distribution replacement.
        parts: ``P`` tight ``uint8`` patches, the target first; patch ``k`` has the shape of box ``k``
            (``(0, 0)`` at box ``(0, 0, 0, 0)`` for an absent part).
        boxes: ``(P, 4) int64`` ``(x0, y0, x1, y1)``, ``x1``/``y1`` exclusive.
        labels: ``(P,) int64`` each part's class (a digit's class, the class a cue encodes; ``-1``
            for an absent part).
        names: the parts' names (default ``target``, ``distractor_1`` …).
        replacements: per part, the ``(patch, box)`` its intervention puts in its place, or ``None``
            where the intervention removes it (default: every part is removed).
    """

    background: np.ndarray
    alternative_background: np.ndarray
    parts: tuple[np.ndarray, ...]
    boxes: np.ndarray
    labels: np.ndarray
    names: tuple[str, ...] | None = None
    replacements: tuple[Replacement | None, ...] | None = None

    def __post_init__(self) -> None:
        shape = self.background.shape
        if self.background.ndim != 2 or self.alternative_background.shape != shape:
            raise ValueError(f"background has shape {shape} and alternative_background "
                             f"{self.alternative_background.shape}; expected two equal (S, S) arrays")
        P = len(self.parts)
        if P == 0 or self.boxes.shape != (P, 4) or self.labels.shape != (P,):
            raise ValueError(f"{P} parts, boxes {self.boxes.shape}, labels {self.labels.shape}; "
                             "expected P >= 1 parts with (P, 4) boxes and (P,) labels")
        for k, (patch, box) in enumerate(zip(self.parts, self.boxes, strict=True)):
            _check_patch(f"part {k}", patch, box, shape)
        names = self.names if self.names is not None else object_names(P - 1)[:-1]
        if len(names) != P or len(set(names)) != P or "background" in names:
            raise ValueError(f"names={names!r} is invalid; expected {P} distinct part names other than 'background'")
        object.__setattr__(self, "names", tuple(names))
        replacements = self.replacements if self.replacements is not None else (None,) * P
        if len(replacements) != P:
            raise ValueError(f"replacements has {len(replacements)} entries; expected one per part ({P})")
        for k, replacement in enumerate(replacements):
            if replacement is not None:
                _check_patch(f"replacement of part {k}", *replacement, shape)
        object.__setattr__(self, "replacements", tuple(replacements))

    @property
    def num_objects(self) -> int:
        """``P + 1``: the parts and the background."""
        return len(self.parts) + 1

    @property
    def object_names(self) -> tuple[str, ...]:
        return (*self.names, "background")  # type: ignore[misc]

    @property
    def present(self) -> np.ndarray:
        """``(P + 1,) bool``: which objects the image holds (an absent part has an empty patch)."""
        return np.array([patch.size > 0 for patch in self.parts] + [True])

    @property
    def intervention_rule(self) -> str:
        """Each object's intervention (:meth:`intervene`) in words."""
        words = [f"{name}: {'replaced (' + name + '_swap)' if r is not None else 'removed'}"
                 for name, r in zip(self.names, self.replacements, strict=True)]  # type: ignore[arg-type]
        return "; ".join([*words, "background: swapped for the alternative crop (the other sample photo, same "
                          "scale and offset)"])

    def _index(self, obj: int | str) -> int:
        names = self.object_names
        if isinstance(obj, str) and obj in names:
            return names.index(obj)
        if isinstance(obj, (int, np.integer)) and not isinstance(obj, bool) and 0 <= obj < len(names):
            return int(obj)
        raise ValueError(f"object {obj!r} is invalid; expected an index 0..{len(names) - 1} or one of {list(names)}")

    def _parts(self, objects: Collection[int | str], what: str) -> set[int]:
        found = {self._index(obj) for obj in objects}
        if len(self.parts) in found:
            raise ValueError(f"{what} names the background; expected parts only (swap it with swap_background=True)")
        return found

    def render(self, *, remove: Collection[int | str] = (), replace: Collection[int | str] = (),
               swap_background: bool = False) -> np.ndarray:
        """The image with the parts in ``remove`` left out, those in ``replace`` replaced, on the
        original or alternative background.

        Args:
            remove: parts to leave out, by index or name (default none: the published image).
            replace: parts to draw as their replacement (default none); each must have one.
            swap_background: use :attr:`alternative_background` (default False).

        Returns:
            ``(S, S) uint8``, a new array.

        Raises:
            ValueError: an unknown object, the background in ``remove`` or ``replace`` (it is
                swapped), or a part in ``replace`` without a replacement.
        """
        removed, replaced = self._parts(remove, "remove"), self._parts(replace, "replace")
        missing = sorted(k for k in replaced if self.replacements[k] is None)  # type: ignore[index]
        if missing:
            raise ValueError(f"replace names {[self.object_names[k] for k in missing]}, which have no replacement; "
                             f"expected parts with one: {[n for n, r in zip(self.names, self.replacements) if r]}")
        canvas = (self.alternative_background if swap_background else self.background).copy()
        for k, (patch, box) in enumerate(zip(self.parts, self.boxes, strict=True)):
            if k in removed:
                continue
            if k in replaced:
                patch, box = self.replacements[k]  # type: ignore[index,misc]
            x0, y0, x1, y1 = box
            region = canvas[y0:y1, x0:x1]
            np.maximum(region, patch, out=region)
        return canvas

    def intervene(self, objects: Collection[int | str]) -> np.ndarray:
        """The image with every object in ``objects`` changed by its in-distribution intervention
        (a part replaced where it has a replacement, else removed; the background swapped for its
        alternative crop), the others kept.

        Args:
            objects: objects by index or name (empty: the published image).

        Returns:
            ``(S, S) uint8``, a new array.
        """
        changed = {self._index(obj) for obj in objects}
        background = len(self.parts)
        swapped = {k for k in changed if k != background and self.replacements[k] is not None}  # type: ignore[index]
        return self.render(remove=changed - swapped - {background}, replace=swapped,
                           swap_background=background in changed)

    def interventions(self) -> np.ndarray:
        """``(P + 1, S, S) uint8``: image ``k`` with object ``k`` alone changed (:meth:`intervene`)."""
        return np.stack([self.intervene((k,)) for k in range(self.num_objects)])

    def layers(self) -> np.ndarray:
        """``(P + 1, S, S) uint8``: each part alone on a black canvas, then the background."""
        out = np.zeros((self.num_objects, *self.background.shape), dtype=np.uint8)
        for k, (patch, (x0, y0, x1, y1)) in enumerate(zip(self.parts, self.boxes, strict=True)):
            out[k, y0:y1, x0:x1] = patch
        out[-1] = self.background
        return out

    def masks(self) -> np.ndarray:
        """``(P + 1, S, S) bool`` visible pixels of each object, in object order (module doc).

        Example:
            >>> scene = generate_scenes(1, split="test", seed=0)[0]
            >>> bool((scene.masks()[0] == (scene.render() != scene.render(remove=["target"]))).all())
            True
        """
        layers = self.layers()  # (P + 1, S, S), background last
        top = layers.max(axis=0)  # (S, S)
        owner = layers.argmax(axis=0)  # first index at the maximum
        ranked = np.sort(layers, axis=0)
        alone = ranked[-1] > ranked[-2]  # one object strictly above all others
        out = (owner[None] == np.arange(len(self.parts))[:, None, None]) & alone[None]  # (P, S, S)
        return np.concatenate([out, (layers[-1] == top)[None]])
