"""Reference maps: made from the images' ground truth, not from the model.

An explanation method sees a model and its input; a reference map also sees the images'
:class:`~infsa_viz.maps.base.GroundTruth`, which only an evaluation has. They are registered in
:data:`~infsa_viz.maps.METHODS` with the role ``"ceiling"`` (the random map,
:class:`~infsa_viz.maps.baseline.RandomMap`, is the ``"floor"``), so every reader tells them apart
by their role, never by their name; ``benchmark_quality`` reads the headroom between them.
"""

from __future__ import annotations

import numpy as np
import torch

from ..estimate import Estimate, count_option
from ..metrics.upsample import boxes_to_mask
from .base import GroundTruth, MapMethod, register

#: The MoRF settings the greedy oracle shares with the evaluation's defaults.
_GREEDY_DEFAULTS = {"steps": 20, "baseline": "mean", "seed": 0, "batch_size": 512}

__all__ = ["BeamDeletionOracle", "BoxOracle", "EvidenceOracle", "GreedyDeletionOracle", "GreyFillEvidenceOracle",
           "box_oracle_maps", "greyfill_importance"]


def box_oracle_maps(boxes: list[np.ndarray], *, image_size: tuple[int, int], patch_size: int) -> torch.Tensor:
    """Each patch's share of pixels inside the image's target boxes ``(B, H/p, W/p)`` in [0, 1].

    A patch wholly inside a target box scores 1, one wholly outside 0, a patch on the border the
    covered fraction. Removing patches in this order removes the target's pixels first (MoRF), and
    the map's upsampled values rank target pixels above the rest (box ROC/PR-AUC), up to the blur
    of the patch grid.

    Args:
        boxes: per image, ``(K_i, 4)`` target boxes in model-input pixels (``x1``, ``y1`` exclusive).
        image_size: ``(H, W)`` of the model input.
        patch_size: the model's patch side ``p``; ``H`` and ``W`` must be multiples of it.

    Raises:
        ValueError: if the image size is not a multiple of ``patch_size``.
    """
    height, width = image_size
    if patch_size < 1 or height % patch_size or width % patch_size:
        raise ValueError(f"patch_size={patch_size} is invalid for image_size={image_size}; expected a divisor "
                         "of both sides")
    h, w = height // patch_size, width // patch_size
    maps = np.zeros((len(boxes), h, w), dtype=np.float32)
    for i, image_boxes in enumerate(boxes):
        if len(image_boxes):
            mask = boxes_to_mask(image_boxes, (height, width)).astype(np.float32)  # (H, W)
            maps[i] = mask.reshape(h, patch_size, w, patch_size).mean(axis=(1, 3))
    return torch.from_numpy(maps)


@register
class BoxOracle(MapMethod):
    """The box oracle: each patch's share of pixels inside a target box (the ceiling of box metrics)."""

    name = "box_oracle"
    family = "reference"
    role = "ceiling"
    needs_truth = True
    in_default_report = False
    description = ("reference (not a model explanation): share of each patch inside a target box, "
                   "1 inside, 0 outside")
    cost = "none (reads the target boxes)"

    def estimate(self, work, options):
        return Estimate(4.0 * work.batch * work.pixels, "one (H, W) box mask per image", forwards=0)

    def _compute(self, forward, options, truth: GroundTruth):
        maps = box_oracle_maps(truth.boxes, image_size=tuple(forward.inputs.shape[-2:]),
                               patch_size=forward.model.patch_size)
        return maps, {"reference": self.description,
                      "images_without_box": int(sum(len(b) == 0 for b in truth.boxes))}, None


@register
class EvidenceOracle(MapMethod):
    """The evidence oracle: each object's importance painted on its visible pixels (the ceiling of
    the evidence metrics)."""

    name = "evidence_oracle"
    family = "reference"
    role = "ceiling"
    needs_truth = True
    in_default_report = False
    description = ("reference (not a model explanation): each scene object's importance to the model "
                   "(probability drop when it alone is removed) painted on its visible pixels, patch means")
    reference = "in the spirit of FunnyBirds (Hesse, Schaub-Meyer & Roth, ICCV 2023)"
    cost = "none (reads the objects' masks and importance: one forward per object and image, shared)"
    requires = {"scenes": "scene objects (their masks and in-distribution removals, from a generated benchmark "
                          "such as --data cluttered-digits)"}

    def estimate(self, work, options):
        return Estimate(8.0 * work.batch * work.pixels, "the objects' (B, O, H, W) masks, read", forwards=0)

    def _compute(self, forward, options, truth: GroundTruth):
        from ..metrics.evidence import evidence_oracle

        if not truth.has_evidence:
            raise ValueError("method 'evidence_oracle' needs scene masks and object importance; the data has no "
                             "scenes (score it on a generated benchmark: --data cluttered-digits)")
        maps = evidence_oracle(truth.masks, truth.importance, patch_size=forward.model.patch_size)
        return torch.from_numpy(maps).float(), {"reference": self.description,
                                                "importance": "probability drop, clipped at 0"}, None


@register
class GreedyDeletionOracle(MapMethod):
    """The greedy deletion oracle: per step, the patches whose removal lowers the explained class most
    (the model's own best MoRF order, a ceiling of MoRF-AOC)."""

    name = "greedy_deletion"
    family = "reference"
    role = "ceiling"
    explains_class = True
    in_default_report = False
    with_references = False  # about 18x (48 px) to 75x (96 px) the cost of MoRF: run it on a stated subset
    description = ("reference (not a model explanation): the model's own greedy MoRF order, each step removing "
                   "the patches whose single removal lowers the explained class's probability most")
    reference = "a greedy deletion oracle (cf. the MoRF ceiling of Samek et al. 2016)"
    defaults = dict(_GREEDY_DEFAULTS)
    from_settings = tuple(_GREEDY_DEFAULTS)
    cost = "steps x remaining patches forwards per image (378 at 6x6 patches, 1,512 at 12x12, 20 steps)"

    def estimate(self, work, options):
        steps = count_option(options, "steps", 20)
        copies = work.with_batch(min(count_option(options, "batch_size", 512), work.batch * work.patches))
        return Estimate(copies.forward() + 8.0 * copies.batch * work.pixels, "one forward of batch_size copies",
                        forwards=work.patches * (steps + 1) / 2, lower="fewer --steps or a smaller input")

    def _compute(self, forward, options):
        from ..metrics.greedy_deletion import greedy_deletion

        model = forward.model
        return _order_map(self, greedy_deletion(model, forward.inputs, forward.explained,
                                                patch_size=model.patch_size, **options))


@register
class BeamDeletionOracle(MapMethod):
    """An estimate of MoRF's ceiling: the best removal order a beam search over deletion orders finds,
    ranked by the area so far and trying groups of patches that matter together (never below the
    greedy oracle, whose path it keeps)."""

    name = "beam_deletion"
    family = "reference"
    role = "ceiling"
    explains_class = True
    in_default_report = False
    with_references = False  # about 10x the greedy oracle: run it on a stated subset
    description = ("reference (not a model explanation): an estimate of MoRF's ceiling, the best removal order "
                   "a beam search over deletion orders finds (ranked by the area so far; never below the greedy "
                   "oracle)")
    reference = "a beam search over MoRF orders (cf. the greedy oracle and Samek et al. 2016)"
    defaults = {**_GREEDY_DEFAULTS, "width": 4, "expand": 8}
    from_settings = tuple(_GREEDY_DEFAULTS)
    cost = ("about 10x the greedy oracle: 3,700-4,100 forwards per image at 6x6 patches, 14,600 at 12x12 "
            "(width 4, expand 8, 20 steps; measured)")

    def estimate(self, work, options):
        from ..metrics.beam_deletion import beam_forwards

        steps, width = count_option(options, "steps", 20), count_option(options, "width", 4)
        side = max(int(round(work.patches ** 0.5)), 1)
        grid = (side, max(work.patches // side, 1))
        copies = work.with_batch(min(count_option(options, "batch_size", 512), work.batch * work.patches))
        return Estimate(copies.forward() + 8.0 * copies.batch * work.pixels * (width + 1),
                        "one forward of batch_size copies, the beam's width + 1 partial orders",
                        forwards=beam_forwards(steps, grid, width=width, expand=count_option(options, "expand", 8)),
                        lower="fewer --steps, a narrower beam (width) or a smaller input")

    def _compute(self, forward, options):
        from ..metrics.beam_deletion import beam_deletion

        model = forward.model
        return _order_map(self, beam_deletion(model, forward.inputs, forward.explained,
                                              patch_size=model.patch_size, **options))


def _order_map(method: MapMethod, found) -> tuple[torch.Tensor, dict, None]:
    """A deletion search's map, with its cost per image (the most, and the mean where it varies)."""
    forwards = np.asarray(found.forwards_per_image)
    metadata = {"reference": method.description, "forwards_per_image": int(forwards.max())}
    if forwards.ndim:
        metadata["forwards_per_image_mean"] = round(float(forwards.mean()), 1)
    return torch.from_numpy(found.maps).float(), metadata, None


def greyfill_importance(model, inputs: torch.Tensor, masks: np.ndarray, classes: torch.Tensor, *,
                        batch_size: int = 256) -> np.ndarray:
    """Each object's importance by grey fill: the drop of the explained class's probability when the
    object's visible pixels alone are set to the dataset mean (0 in the model's normalised input).

    Args:
        model: the classifier (eval mode).
        inputs: ``(B, C, H, W)`` the model's normalised input.
        masks: ``(B, O, H, W)`` bool visible pixels in the model's input.
        classes: ``(B,)`` the explained classes.
        batch_size: images per forward pass.

    Returns:
        ``(B, O) float64`` clean − filled probability (0 for an object without pixels).
    """
    B, O = masks.shape[:2]
    regions = torch.as_tensor(np.asarray(masks, dtype=bool))  # (B, O, H, W)
    filled = inputs[:, None].expand(B, O, *inputs.shape[1:]).clone()  # (B, O, C, H, W)
    filled.masked_fill_(regions[:, :, None], 0.0)
    index = classes.long()
    with torch.inference_mode():
        clean = torch.cat([torch.softmax(model(inputs[i:i + batch_size]).double(), -1)
                           for i in range(0, B, batch_size)])  # (B, M)
        flat = filled.reshape(B * O, *inputs.shape[1:])
        changed = torch.cat([torch.softmax(model(flat[i:i + batch_size]).double(), -1)
                             for i in range(0, B * O, batch_size)]).reshape(B, O, -1)  # (B, O, M)
    p0 = clean.gather(1, index[:, None])  # (B, 1)
    pk = changed.gather(2, index[:, None, None].expand(B, O, 1))[..., 0]  # (B, O)
    drop = (p0 - pk).numpy()
    return np.where(regions.flatten(2).any(-1).numpy(), drop, 0.0)


@register
class GreyFillEvidenceOracle(MapMethod):
    """A second evidence oracle, independent of the generator: each object's importance measured by
    filling its visible pixels with grey (the dataset mean) instead of re-rendering the scene, painted
    on its pixels (a reference oracle of the meta-evaluation besides :class:`EvidenceOracle`)."""

    name = "evidence_oracle_greyfill"
    family = "reference"
    role = "ceiling"
    needs_truth = True
    explains_class = True
    in_default_report = False
    with_references = False  # a second reference of the meta-evaluation: name it
    description = ("reference (not a model explanation): each scene object's importance measured by grey fill "
                   "(its visible pixels set to the dataset mean; out of distribution) painted on its visible "
                   "pixels, patch means")
    reference = "grey-fill occlusion of object masks (cf. Zeiler & Fergus 2014; RemOve And Debias, Rong et al. 2022)"
    cost = "one forward per scene object and image"
    requires = {"scenes": "scene objects (their visible masks, from a generated benchmark such as "
                          "--data cluttered-digits)"}

    def estimate(self, work, options):
        return Estimate(work.forward() + 8.0 * work.batch * work.pixels * 8, "the objects' filled copies",
                        forwards=8)

    def _compute(self, forward, options, truth: GroundTruth):
        from ..metrics.evidence import evidence_oracle

        if truth.masks is None:
            raise ValueError("method 'evidence_oracle_greyfill' needs scene masks; the data has no scenes (score it "
                             "on a generated benchmark: --data cluttered-digits)")
        importance = greyfill_importance(forward.model, forward.inputs, truth.masks, forward.explained)
        maps = evidence_oracle(truth.masks, importance, patch_size=forward.model.patch_size)
        return torch.from_numpy(maps).float(), {"reference": self.description,
                                                "importance": "probability drop under grey fill, clipped at 0"}, None
