"""What a model used, measured by in-distribution intervention on each object of a scene.

For each image and each object of its :class:`~infsa_viz.data.scenes.Scene` (the target digit,
each distractor, the background) the scene is re-rendered with that object alone changed — a
digit removed (its pixels become what lies under it), the background swapped for its alternative
photo crop — and the model is run on it. The object's *importance* is the drop of the explained
class's softmax probability (and logit) from the clean image to the changed one: positive where
the object supported the class, negative where its removal helps, 0 where the model ignores it.
This is the ground truth of FunnyBirds (Hesse, Schaub-Meyer & Roth, ICCV 2023), built with the
benchmark's own generator, so no changed image leaves the data distribution pixel-wise.

Cost: ``O + 1`` forwards per image (``O`` objects and the clean image), computed once per
(model, images) and shared by every map method; :class:`ObjectImportance` also carries the
objects' masks in the model's input pixels, which the evidence metrics
(:mod:`infsa_viz.metrics.evidence`) read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .._checks import check_int
from ..data import LabelledImages, Scene
from ..preprocess import prepare

__all__ = ["ObjectImportance", "object_importance"]


@dataclass(frozen=True, eq=False)
class ObjectImportance:
    """Per image and object: the explained class's drop when that object alone is changed.

    Attributes:
        objects: object names in index order (``target``, ``distractor_1`` …, ``background``).
        indices: ``(B,) int64`` the images' positions in their data set.
        explained: ``(B,) int64`` the explained class.
        clean_prob: ``(B,) float64`` its softmax probability on the clean image.
        clean_logit: ``(B,) float64`` its logit on the clean image.
        prob_drop: ``(B, O) float64`` clean − changed probability, per object.
        logit_drop: ``(B, O) float64`` clean − changed logit, per object.
        masks: ``(B, O, S, S) bool`` each object's visible pixels in the model's input
            (:meth:`~infsa_viz.data.scenes.Scene.masks` through
            :meth:`~infsa_viz.preprocess.Prepared.masks`).
        protocol: what was changed and how importance is read (JSON-able).
    """

    objects: tuple[str, ...]
    indices: np.ndarray
    explained: np.ndarray
    clean_prob: np.ndarray
    clean_logit: np.ndarray
    prob_drop: np.ndarray
    logit_drop: np.ndarray
    masks: np.ndarray
    protocol: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.explained.shape[0])

    def for_image(self, i: int) -> dict[str, Any]:
        """Image ``i``'s importance as JSON-ready builtins (masks as pixel counts)."""
        return {
            "index": int(self.indices[i]), "explained": int(self.explained[i]),
            "clean_prob": float(self.clean_prob[i]), "clean_logit": float(self.clean_logit[i]),
            "objects": {name: {"prob_drop": float(self.prob_drop[i, k]), "logit_drop": float(self.logit_drop[i, k]),
                               "mask_pixels": int(self.masks[i, k].sum())}
                        for k, name in enumerate(self.objects)},
        }


def _scenes_of(scenes: Sequence[Scene] | LabelledImages) -> list[Scene]:
    if isinstance(scenes, LabelledImages):
        if scenes.scenes is None:
            raise ValueError("data has no scenes; expected generated images (e.g. infsa_viz.data.test_split)")
        scenes = scenes.scenes
    found = list(scenes)
    if not found or not all(isinstance(s, Scene) for s in found):
        raise ValueError("scenes is empty or holds something else; expected a non-empty sequence of Scene")
    kinds = {(s.object_names, s.background.shape) for s in found}
    if len(kinds) != 1:
        raise ValueError(f"scenes have different objects or sizes {sorted(kinds)}; expected one benchmark's scenes")
    return found


def object_importance(
    model: nn.Module,
    scenes: Sequence[Scene] | LabelledImages,
    *,
    explained: Tensor | np.ndarray | Sequence[int],
    indices: Sequence[int] | None = None,
    batch_size: int = 256,
) -> ObjectImportance:
    """Per-object importance of ``model`` on each scene (one forward per object and image, plus the clean one).

    Args:
        model: a classifier with a preprocessing config (a :class:`~infsa_viz.model.vit.VisionTransformer`,
            or any module with ``config`` as :func:`~infsa_viz.preprocess.prepare` reads it), in eval mode.
        scenes: ``B`` scenes of one benchmark, or a :class:`~infsa_viz.data.LabelledImages` holding them.
        explained: ``(B,)`` the class each image's map explains (e.g. the labels).
        indices: the images' positions in their data set (default ``0 .. B-1``).
        batch_size: images per forward pass (does not change the results). Default 256.

    Returns:
        :class:`ObjectImportance`.

    Raises:
        ValueError: no scenes, scenes of different benchmarks, a bad ``explained`` / ``indices`` /
            ``batch_size``, or a model in training mode.
    """
    found = _scenes_of(scenes)
    B, O = len(found), found[0].num_objects
    classes = np.asarray(explained.detach().cpu() if isinstance(explained, Tensor) else explained)
    if classes.shape != (B,) or not np.issubdtype(classes.dtype, np.integer) or (B and classes.min() < 0):
        raise ValueError(f"explained has shape {classes.shape} and dtype {classes.dtype}; expected ({B},) classes >= 0")
    positions = np.arange(B) if indices is None else np.asarray(indices, dtype=np.int64)
    if positions.shape != (B,):
        raise ValueError(f"indices has shape {positions.shape}; expected one position per scene ({B},)")
    batch_size = check_int("batch_size", batch_size, minimum=1)
    if model.training:
        raise ValueError("model is in training mode; expected eval mode (call model.eval() first)")

    per_chunk = max(1, batch_size // (O + 1))  # scenes per forward pass
    logits, masks = [], []
    with torch.inference_mode():
        for start in range(0, B, per_chunk):
            chunk = found[start:start + per_chunk]
            copies = np.stack([np.concatenate([s.render()[None], s.interventions()]) for s in chunk])  # (b, O+1, S, S)
            prepared = prepare(model, copies.reshape(-1, *copies.shape[2:]))
            logits.append(model(prepared.tensor).double().reshape(len(chunk), O + 1, -1).cpu())  # (b, O+1, M)
            masks.extend(prepared.masks(j * (O + 1), s.masks()) for j, s in enumerate(chunk))
    out = torch.cat(logits)  # (B, O+1, M)
    if classes.max() >= out.shape[-1]:
        raise ValueError(f"explained has class {int(classes.max())}; expected classes in [0, {out.shape[-1]})")
    index = torch.tensor(classes, dtype=torch.long)[:, None, None].expand(B, O + 1, 1)
    logit = out.gather(2, index)[..., 0].numpy()  # (B, O+1)
    prob = torch.softmax(out, dim=-1).gather(2, index)[..., 0].numpy()
    return ObjectImportance(
        objects=found[0].object_names, indices=positions, explained=classes.astype(np.int64),
        clean_prob=prob[:, 0], clean_logit=logit[:, 0],
        prob_drop=prob[:, :1] - prob[:, 1:], logit_drop=logit[:, :1] - logit[:, 1:],
        masks=np.stack(masks),
        protocol={"interventions": found[0].intervention_rule, "importance": "clean − changed softmax probability "
                  "(prob_drop) and logit (logit_drop) of the explained class", "forwards_per_image": O + 1,
                  "masks": "visible pixels (infsa_viz.data.scenes), in the model's input pixels"},
    )
