"""Reference maps of the evaluation: maps made from the ground truth, not from a model.

An explanation method (:data:`infsa_viz.maps.METHODS`) sees a model and its input; a reference
map also sees the image's target boxes, which only an evaluation has. The box oracle is the
ceiling a map can reach on a benchmark whose evidence lies inside the target box, as the random
map (:class:`~infsa_viz.maps.baseline.RandomMap`, a registered method) is its floor; together they
give the headroom that ``benchmark_quality`` reports. Reference rows are labelled by their method
name and never belong to the default report.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..maps import MapResult, check_method
from ..metrics import boxes_to_mask

__all__ = ["REFERENCE_METHODS", "box_oracle", "check_evaluation_method", "is_reference"]

#: Reference map name → one-line description. The one list of reference maps.
REFERENCE_METHODS: dict[str, str] = {
    "box_oracle": "reference (not a model explanation): share of each patch inside a target box, "
                  "1 inside, 0 outside",
}


def is_reference(method: str) -> bool:
    """Whether ``method`` names a reference map rather than a registered explanation method."""
    return method in REFERENCE_METHODS


def check_evaluation_method(method: str) -> str:
    """``method`` if it is a registered map method or a reference map, else ``ValueError``."""
    if is_reference(method):
        return method
    try:
        check_method(method)
    except ValueError as error:
        raise ValueError(f"{error}; or a reference map: {list(REFERENCE_METHODS)}") from None
    return method


def box_oracle(boxes: Sequence[np.ndarray], *, image_size: tuple[int, int], patch_size: int) -> MapResult:
    """The box oracle: each patch's share of pixels inside the image's target boxes.

    A patch wholly inside a target box scores 1, one wholly outside 0, a patch on the border the
    covered fraction. Removing patches in this order removes the target's pixels first (MoRF),
    and the map's upsampled values rank target pixels above the rest (box ROC/PR-AUC), up to
    the blur of the patch grid.

    Args:
        boxes: per image, ``(K_i, 4)`` target boxes in model-input pixels (``x1``, ``y1`` exclusive).
        image_size: ``(H, W)`` of the model input.
        patch_size: the model's patch side ``p``; ``H`` and ``W`` must be multiples of it.

    Returns:
        A :class:`~infsa_viz.maps.MapResult` with ``maps (B, H/p, W/p)`` in [0, 1].

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
    return MapResult(maps=torch.from_numpy(maps), method="box_oracle", options={},
                     metadata={"reference": REFERENCE_METHODS["box_oracle"],
                               "images_without_box": int(sum(len(b) == 0 for b in boxes))})
