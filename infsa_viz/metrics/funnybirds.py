"""FunnyBirds-style checks with scene objects as parts (Hesse, Schaub-Meyer & Roth, ICCV 2023).

FunnyBirds ("A Synthetic Vision Dataset for a Part-Based Analysis of Explainable AI Methods") scores an
explanation by removing the parts of a rendered bird *in distribution* and watching the model. Our
scenes (:class:`~infsa_viz.data.Scene`) are the same kind of object: every object (the target digit,
each distractor, any cue, the background) can be changed in distribution by
:meth:`~infsa_viz.data.Scene.intervene` (a digit removed, the background swapped), alone or several at
once. An object with an empty mask is absent and takes part in nothing.

The published definitions (the FunnyBirds framework, ``evaluation_protocols.py`` and
``explainers/explainer_wrapper.py``), and how we read them on scenes:

* **Important parts.** A part is important at threshold ``t`` when its importance exceeds ``t`` times
  the explanation's total, ``t`` on the grid ``linspace(0.01, 0.5, 80)`` (:data:`THRESHOLDS`).
  The part importance there is the attribution summed over the (dilated) part mask. A ViT patch map
  cannot separate a digit's strokes from the background between them and objects differ in area by
  two orders of magnitude, so, as the evidence metrics (:mod:`.evidence`) do, an object's importance
  here is its area-normalised share ``d_k = ρ_k / Σ_j ρ_j`` of the map's positive mass per visible
  pixel ``ρ_k`` (a flat map gives every object ``1/O``).
* **Preservation check (PC)**: keep only the important parts (every other part removed): the model's
  prediction must not change. **Deletion check (DC)**: remove the important parts: the prediction
  must change. Each is 1 or 0 per image and threshold. FunnyBirds picks one threshold per method
  (the one maximising completeness plus distractibility, which needs many background parts; ours
  have one); we report per image the mean over the published grid, a threshold-free summary.
* **Target sensitivity (TS)**: two classes ``A`` and ``B`` with parts ``P_A`` and ``P_B`` in the
  image; an image counts only where the model behaves as assumed — removing ``P_A`` lowers ``A``'s
  logit more than removing ``P_B`` does, and removing ``P_B`` lowers ``B``'s more than removing
  ``P_A`` — and then scores ``½([I_A(P_A) > I_B(P_A)] + [I_B(P_B) > I_A(P_B)])`` where ``I_c`` is the
  explanation of class ``c``. FunnyBirds compares raw attribution sums; maps here differ in scale
  by method and class, so ``I_c(P)`` is the share of the class-``c`` map's positive mass on ``P``'s
  visible pixels (the same comparison when both maps have equal totals). Ties score 0 (published).
* **Background independence (BI)**, a property of the *model*, not of a map: a background part is
  relevant when changing it lowers the class logit by at least 5 % of the clean logit's magnitude;
  BI = 1 − relevant / background parts. With one background per scene: 1 per image unless swapping
  the background lowers the logit that much (the row mean is the published ratio).
* **Single deletion (SD)** is the evidence rank correlation (:func:`.evidence.evidence_rank_correlation`):
  Spearman between each part's importance in the map and the drop when that part alone is removed
  (FunnyBirds: attribution sums against logit drops, reported as ``0.5·ρ + 0.5``; ours: densities
  against probability drops clipped at 0, reported as ``ρ``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ._checks import check_int, check_maps, warn_undefined
from .evidence import object_density, object_mass

__all__ = ["THRESHOLDS", "CompletenessChecks", "TargetSensitivity", "background_independence",
           "completeness_checks", "important_objects", "object_shares", "scene_inputs", "target_sensitivity"]

#: The published threshold grid (FunnyBirds ``get_p_thresholds``).
THRESHOLDS = np.linspace(0.01, 0.50, num=80)
#: Share of the clean logit's magnitude above which a background change counts as relevant (published 5 %).
BACKGROUND_TOLERANCE = 0.05


@dataclass(frozen=True, eq=False)
class SceneInputs:
    """Scenes as a model sees them: the clean input, each object's mask in it, and which objects exist."""

    tensor: Tensor  # (B, C, S, S) clean input
    masks: np.ndarray  # (B, O, S, S) bool visible pixels in the model's input
    present: np.ndarray  # (B, O) bool: the object's source mask is not empty
    objects: tuple[str, ...]

    def take(self, rows: Any) -> SceneInputs:
        """The inputs of the images at ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        return SceneInputs(self.tensor[rows], self.masks[rows], self.present[rows], self.objects)


def scene_inputs(model: nn.Module, scenes: Sequence[Any]) -> SceneInputs:
    """The clean renders of ``scenes`` prepared for ``model`` (eval mode), with the objects' masks in its input."""
    from ..preprocess import prepare

    if model.training:
        raise ValueError("model is in training mode; expected eval mode (call model.eval() first)")
    found = list(scenes)
    if not found:
        raise ValueError("scenes is empty; expected one Scene per image")
    names = {tuple(s.object_names) for s in found}
    if len(names) != 1:
        raise ValueError(f"scenes have different objects {sorted(names)}; expected one benchmark's scenes")
    source = [s.masks() for s in found]  # (O, H, W) each
    prepared = prepare(model, _batch([s.intervene(()) for s in found]))
    masks = np.stack([prepared.masks(i, m) for i, m in enumerate(source)])
    present = np.stack([m.reshape(len(m), -1).any(axis=1) for m in source])
    return SceneInputs(prepared.tensor, masks, present, names.pop())


def _batch(images: list[np.ndarray]) -> np.ndarray | list[np.ndarray]:
    """One array when the images share a shape (the preprocessing's fast path), else the list."""
    return np.stack(images) if len({im.shape for im in images}) == 1 else images


def _logits(model: nn.Module, scenes: Sequence[Any], changes: Sequence[tuple[int, frozenset[int]]],
            batch_size: int) -> np.ndarray:
    """``(len(changes), M) float64`` logits of ``scenes[i].intervene(objects)`` for each ``(i, objects)``."""
    from ..preprocess import prepare

    out = []
    with torch.inference_mode():
        for start in range(0, len(changes), batch_size):
            part = changes[start:start + batch_size]
            x = prepare(model, _batch([scenes[i].intervene(sorted(objects)) for i, objects in part])).tensor
            out.append(model(x).double().cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, 0))


def _clean_logits(model: nn.Module, inputs: SceneInputs, logits: Any) -> np.ndarray:
    """``(B, M) float64``: the clean logits of ``inputs`` — ``logits`` when the caller has them (the
    images' :class:`~infsa_viz.forward.ForwardRecord`), else one forward."""
    if logits is not None:
        found = np.asarray(logits.detach().cpu() if isinstance(logits, Tensor) else logits, dtype=np.float64)
        if found.ndim != 2 or found.shape[0] != inputs.tensor.shape[0]:
            raise ValueError(f"logits has shape {found.shape}; expected the clean logits ({inputs.tensor.shape[0]}, "
                             "classes) of the scenes")
        return found
    with torch.inference_mode():
        return model(inputs.tensor).double().cpu().numpy()


def object_shares(maps: Any, masks: Any) -> np.ndarray:
    """Each object's area-normalised share of the map, ``d_k = ρ_k / Σ_j ρ_j`` (module doc).

    Args:
        maps: ``(B, h, w)`` maps on the patch grid.
        masks: ``(B, O, H, W)`` bool visible-pixel masks in the model's input.

    Returns:
        ``(B, O) float64``: ``nan`` for an object without visible pixels, and for every object of an
        image whose map has no positive mass on its objects (with an ``UndefinedMetricWarning``).
    """
    density = object_density(maps, masks)  # (B, O), nan where invisible
    total = np.nansum(density, axis=1)
    defined = total > 0
    if not defined.all():
        warn_undefined(f"{int((~defined).sum())} map(s) have no positive mass on the objects; their shares are nan")
    return np.where(defined[:, None], density / np.where(defined, total, 1.0)[:, None], np.nan)


def important_objects(shares: Any, thresholds: Any = THRESHOLDS) -> np.ndarray:
    """``(B, T, O) bool``: object ``k`` is important at threshold ``t`` when its share exceeds ``t``."""
    values = np.asarray(shares, dtype=np.float64)
    grid = np.asarray(thresholds, dtype=np.float64).reshape(-1)
    if values.ndim != 2 or not grid.size or not np.isfinite(grid).all():
        raise ValueError(f"shares has shape {values.shape} and thresholds {grid.shape}; expected (B, O) shares "
                         "and at least one finite threshold")
    with np.errstate(invalid="ignore"):
        return values[:, None, :] > grid[None, :, None]


@dataclass(frozen=True, eq=False)
class CompletenessChecks:
    """Preservation and deletion checks of a batch of maps (module doc).

    Attributes:
        preservation: ``(B,)`` share of thresholds at which keeping only the important objects keeps
            the prediction (``nan`` where the map has no positive mass on the objects).
        deletion: ``(B,)`` share of thresholds at which removing the important objects changes it.
        forwards: ``(B,)`` forwards spent per image (one per distinct intervention).
        thresholds: the grid.
    """

    preservation: np.ndarray
    deletion: np.ndarray
    forwards: np.ndarray
    thresholds: np.ndarray


def completeness_checks(model: nn.Module, scenes: Sequence[Any], maps: Any, *, thresholds: Any = THRESHOLDS,
                        batch_size: int = 256, inputs: SceneInputs | None = None,
                        logits: Any = None) -> CompletenessChecks:
    """FunnyBirds' preservation and deletion checks of ``maps`` on ``scenes`` (module doc).

    Important objects at each threshold are nested (the objects above it), so an image needs at most
    ``2·O`` forwards whatever the grid: one per distinct set of objects changed.

    Args:
        model: the classifier (eval mode), with the preprocessing config that
            :func:`~infsa_viz.preprocess.prepare` reads.
        scenes: ``B`` scenes of one benchmark.
        maps: ``(B, h, w)`` maps of the same images on the model's patch grid.
        thresholds: share thresholds (default the published grid :data:`THRESHOLDS`).
        batch_size: images per forward (does not change the results).
        inputs: :func:`scene_inputs` of the same model and scenes, when the caller has it.
        logits: ``(B, M)`` the clean logits of ``inputs``, when the caller has them (no clean forward then).

    Returns:
        :class:`CompletenessChecks`.
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    found = list(scenes)
    values = check_maps(maps, batch=len(found))
    inputs = scene_inputs(model, found) if inputs is None else inputs
    shares = object_shares(values, inputs.masks)  # (B, O)
    defined = ~np.isnan(shares).all(axis=1)
    important = important_objects(shares, thresholds) & inputs.present[:, None, :]  # (B, T, O)
    clean = _clean_logits(model, inputs, logits).argmax(-1)  # (B,)
    changes: dict[tuple[int, frozenset[int]], int] = {}
    plan = []  # per image and threshold: (kept-only change, deleted change)
    for i in range(len(found)):
        rows = []
        for mask in important[i]:
            kept = frozenset(np.flatnonzero(inputs.present[i] & ~mask).tolist())  # what PC changes
            gone = frozenset(np.flatnonzero(mask).tolist())  # what DC changes
            for change in (kept, gone):
                if change and (i, change) not in changes:
                    changes[i, change] = len(changes)
            rows.append((kept, gone))
        plan.append(rows)
    keys = list(changes)
    predicted = _logits(model, found, keys, batch_size).argmax(-1) if keys else np.zeros(0, np.int64)

    def prediction(i: int, change: frozenset[int]) -> int:
        return int(clean[i]) if not change else int(predicted[changes[i, change]])

    preservation = np.full(len(found), np.nan)
    deletion = np.full(len(found), np.nan)
    for i, rows in enumerate(plan):
        if defined[i]:
            preservation[i] = np.mean([prediction(i, kept) == clean[i] for kept, _ in rows])
            deletion[i] = np.mean([prediction(i, gone) != clean[i] for _, gone in rows])
    forwards = np.bincount([i for i, _ in keys], minlength=len(found)) + 1  # + the clean image
    return CompletenessChecks(preservation, deletion, forwards, np.asarray(thresholds, dtype=np.float64))


@dataclass(frozen=True, eq=False)
class TargetSensitivity:
    """Target sensitivity of a batch of map pairs (module doc).

    Attributes:
        score: ``(B,)`` in ``{0, ½, 1}``; ``nan`` where the assumption fails or a map has no
            positive mass on the parts.
        assumption: ``(B,) bool``: removing each class's parts lowers that class's logit more than
            removing the other class's parts does.
    """

    score: np.ndarray
    assumption: np.ndarray


def _objects(name: str, values: Any, count: int, objects: int) -> np.ndarray:
    found = np.asarray(values, dtype=np.int64).reshape(-1)
    if found.shape != (count,) or (count and (found.min() < 0 or found.max() >= objects)):
        raise ValueError(f"{name} has shape {found.shape}; expected ({count},) object indices in [0, {objects})")
    return found


def target_sensitivity(model: nn.Module, scenes: Sequence[Any], maps_a: Any, maps_b: Any, classes_a: Any,
                       classes_b: Any, objects_a: Any, objects_b: Any, *, batch_size: int = 256,
                       inputs: SceneInputs | None = None, logits: Any = None) -> TargetSensitivity:
    """FunnyBirds' target sensitivity with one object per class (module doc).

    Args:
        model: the classifier (eval mode).
        scenes: ``B`` scenes of one benchmark.
        maps_a, maps_b: ``(B, h, w)`` maps explaining ``classes_a`` and ``classes_b``.
        classes_a, classes_b: ``(B,)`` the two classes per image (different).
        objects_a, objects_b: ``(B,)`` the object that is each class's part (different, present).
        batch_size: images per forward.
        inputs: :func:`scene_inputs` of the same model and scenes, when the caller has it.
        logits: ``(B, M)`` the clean logits of ``inputs``, when the caller has them (no clean forward then).

    Returns:
        :class:`TargetSensitivity`.
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    found = list(scenes)
    B = len(found)
    a_maps, b_maps = check_maps(maps_a, batch=B, name="maps_a"), check_maps(maps_b, batch=B, name="maps_b")
    inputs = scene_inputs(model, found) if inputs is None else inputs
    O = inputs.masks.shape[1]
    a, b = _objects("objects_a", objects_a, B, O), _objects("objects_b", objects_b, B, O)
    ca, cb = (np.asarray(c, dtype=np.int64).reshape(-1) for c in (classes_a, classes_b))
    if ca.shape != (B,) or cb.shape != (B,) or (a == b).any() or (ca == cb).any():
        raise ValueError("classes_a/classes_b must be (B,) and differ per image, and objects_a/objects_b differ per "
                         "image")
    rows = np.arange(B)
    clean = _clean_logits(model, inputs, logits)  # (B, M)
    changed = _logits(model, found, [(i, frozenset([int(k[i])])) for k in (a, b) for i in range(B)], batch_size)
    without_a, without_b = changed[:B], changed[B:]  # (B, M) each
    drop = lambda logits, c: logits[rows, c] - clean[rows, c]  # noqa: E731  (after − before, published sign)
    assumption = (drop(without_a, ca) < drop(without_b, ca)) & (drop(without_b, cb) < drop(without_a, cb))
    share_a, share_b = object_mass(a_maps, inputs.masks), object_mass(b_maps, inputs.masks)  # (B, O)
    score = 0.5 * ((share_a[rows, a] > share_b[rows, a]).astype(float) + (share_b[rows, b] > share_a[rows, b]))
    defined = assumption & np.isfinite(share_a[rows, a]) & np.isfinite(share_b[rows, b]) & inputs.present[rows, a] \
        & inputs.present[rows, b]
    return TargetSensitivity(np.where(defined, score, np.nan), assumption)


def background_independence(model: nn.Module, scenes: Sequence[Any], classes: Any, *, batch_size: int = 256,
                            tolerance: float = BACKGROUND_TOLERANCE, inputs: SceneInputs | None = None,
                            logits: Any = None) -> np.ndarray:
    """FunnyBirds' background independence per image: 0 when swapping the background lowers the class
    logit by at least ``tolerance`` × the clean logit's magnitude, else 1 (module doc).

    Args:
        model: the classifier (eval mode).
        scenes: ``B`` scenes with an object named ``"background"``.
        classes: ``(B,)`` the class per image.
        tolerance: the published 5 % (default).
        inputs: :func:`scene_inputs` of the same model and scenes, when the caller has it.
        logits: ``(B, M)`` the clean logits of ``inputs``, when the caller has them (no clean forward then).

    Returns:
        ``(B,) float64`` in ``{0, 1}``; ``nan`` where the scene's background is absent.
    """
    batch_size = check_int("batch_size", batch_size, minimum=1)
    found = list(scenes)
    inputs = scene_inputs(model, found) if inputs is None else inputs
    if "background" not in inputs.objects:
        raise ValueError(f"scenes have objects {list(inputs.objects)}; expected one named 'background'")
    k = inputs.objects.index("background")
    c = np.asarray(classes, dtype=np.int64).reshape(-1)
    rows = np.arange(len(found))
    if c.shape != (len(found),):
        raise ValueError(f"classes has shape {c.shape}; expected one class per scene ({len(found)},)")
    clean = _clean_logits(model, inputs, logits)[rows, c]
    swapped = _logits(model, found, [(i, frozenset([k])) for i in rows], batch_size)[rows, c]
    relevant = (np.abs(clean - swapped) >= np.abs(tolerance * clean)) & (clean > swapped)
    return np.where(inputs.present[:, k], 1.0 - relevant, np.nan)
