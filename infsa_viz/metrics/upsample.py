"""Token maps to pixels, and boxes to masks: the two conversions the localisation metrics share."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from ._checks import as_image_size, check_boxes, check_choice, check_maps
from .protocol import UPSAMPLES, Upsample

__all__ = ["boxes_to_mask", "upsample_map"]


def upsample_map(
    maps: Tensor | np.ndarray,
    size: int | tuple[int, int],
    *,
    mode: Upsample = "bilinear",
) -> Tensor | np.ndarray:
    """Resizes per-token maps to the image size with OpenCV, in float32.

    ``"bilinear"`` is ``cv2.INTER_LINEAR`` (pixel centres aligned, like
    ``align_corners=False``); ``"nearest"`` is ``cv2.INTER_NEAREST_EXACT``, which for an integer
    factor repeats each token over its patch.

    Args:
        maps: ``(B, h, w)`` real maps (tensor or array).
        size: Target ``(H, W)``, or ``S`` for ``(S, S)``.
        mode: ``"bilinear"`` (default) or ``"nearest"``.

    Returns:
        ``(B, H, W) float32``, a CPU tensor if ``maps`` is a tensor, else a numpy array.

    Raises:
        ValueError: If ``maps`` is not a finite ``(B, h, w)`` array, ``size`` is not positive, or
            ``mode`` is unknown.

    Example:
        >>> upsample_map(np.eye(2)[None], (4, 4), mode="nearest")[0, :, 0].tolist()
        [1.0, 1.0, 0.0, 0.0]
    """
    is_tensor = isinstance(maps, Tensor)
    array = check_maps(maps).astype(np.float32)
    height, width = as_image_size(size, "size")
    check_choice("mode", mode, UPSAMPLES)
    out = _resize(array, (height, width), mode)
    return torch.from_numpy(out) if is_tensor else out


def _resize(maps: np.ndarray, size: tuple[int, int], mode: str) -> np.ndarray:
    """``(B, h, w) float32`` → ``(B, H, W) float32``; no validation."""
    import cv2

    height, width = size
    if maps.shape[1:] == (height, width):
        return maps.copy()
    interpolation = cv2.INTER_LINEAR if mode == "bilinear" else cv2.INTER_NEAREST_EXACT
    out = np.empty((maps.shape[0], height, width), dtype=np.float32)
    for i, token_map in enumerate(maps):
        out[i] = cv2.resize(token_map, (width, height), interpolation=interpolation)  # dsize is (W, H)
    return out


def boxes_to_mask(boxes: Any, image_size: int | tuple[int, int]) -> np.ndarray:
    """The union of boxes as a boolean pixel mask.

    Pixel ``(y, x)`` is inside box ``(x0, y0, x1, y1)`` when ``x0 <= x < x1`` and
    ``y0 <= y < y1`` (``x1``, ``y1`` exclusive; the package-wide convention), so an integer box
    covers ``mask[y0:y1, x0:x1]``. Parts outside the image are dropped.

    Args:
        boxes: ``(K, 4)`` boxes (``K`` may be 0) or one ``(4,)`` box.
        image_size: ``(H, W)``, or ``S`` for ``(S, S)``.

    Returns:
        ``(H, W) bool`` mask.
    """
    height, width = as_image_size(image_size)
    (array,) = check_boxes([boxes], batch=1)
    return _union_mask(array, (height, width))


def _union_mask(boxes: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``(K, 4) float64`` validated boxes → ``(H, W) bool``."""
    height, width = size
    ys = np.arange(height)[None, :, None]  # (1, H, 1)
    xs = np.arange(width)[None, None, :]  # (1, 1, W)
    x0, y0, x1, y1 = (boxes[:, j, None, None] for j in range(4))  # each (K, 1, 1)
    inside = (xs >= x0) & (xs < x1) & (ys >= y0) & (ys < y1)  # (K, H, W)
    return inside.any(axis=0)
