"""Input validation shared by the metrics: every error names the parameter, its value and what
was expected (the habit of scikit-learn's ``metrics/_ranking.py``)."""

from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from .._checks import check_choice, check_float, check_int

__all__ = [
    "UndefinedMetricWarning",
    "as_image_size",
    "check_boxes",
    "check_choice",
    "check_float",
    "check_images",
    "check_int",
    "check_maps",
    "check_masks",
    "warn_undefined",
]


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined for some images (they get ``nan`` and are left out of the mean)."""


def warn_undefined(message: str) -> None:
    warnings.warn(message, UndefinedMetricWarning, stacklevel=3)


def as_image_size(value: Any, name: str = "image_size") -> tuple[int, int]:
    """``S`` or ``(H, W)`` positive integers → ``(H, W)``."""
    pair: tuple[int, ...] = ()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        pair = (int(value), int(value))
    elif isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, (str, bytes)):
        try:
            pair = tuple(operator.index(v) for v in value if not isinstance(v, bool))
        except TypeError:
            pair = ()
        if len(pair) != len(value):
            pair = ()
    if len(pair) != 2 or min(pair) < 1:
        raise ValueError(f"{name}={value!r} is invalid; expected a positive integer S or a pair (H, W)")
    return pair  # type: ignore[return-value]


def check_images(images: Any) -> Tensor:
    """A finite floating-point tensor ``(B, C, H, W)`` with ``B >= 1``."""
    if not isinstance(images, Tensor) or not images.is_floating_point():
        raise TypeError(
            f"images has type {type(images).__name__} (dtype {getattr(images, 'dtype', None)}); "
            "expected a floating-point torch.Tensor of shape (B, C, H, W)"
        )
    if images.ndim != 4 or images.shape[0] == 0:
        raise ValueError(f"images has shape {tuple(images.shape)}; expected (B, C, H, W) with B >= 1")
    if not bool(torch.isfinite(images).all()):
        raise ValueError("images contains nan or inf; expected finite values")
    return images


def check_maps(maps: Any, *, batch: int | None = None, name: str = "maps") -> np.ndarray:
    """A finite real array ``(B, h, w)`` (torch tensor or array-like) → ``float64`` numpy."""
    if isinstance(maps, Tensor):
        maps = maps.detach().cpu().numpy()
    try:
        array = np.asarray(maps)
    except (TypeError, ValueError):
        raise ValueError(f"{name} could not be read as an array; expected a real (B, h, w) array") from None
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"{name} has dtype {array.dtype}; expected a real-valued (B, h, w) array")
    if array.ndim != 3 or 0 in array.shape:
        raise ValueError(f"{name} has shape {array.shape}; expected a non-empty (B, h, w) array")
    if batch is not None and array.shape[0] != batch:
        raise ValueError(f"{name} has {array.shape[0]} maps; expected one per image ({batch})")
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains nan or inf; expected finite values")
    return array


def check_boxes(boxes: Any, *, batch: int, name: str = "boxes") -> list[np.ndarray]:
    """Boxes per image → a list of ``B`` float64 arrays ``(K_i, 4)`` of ``(x0, y0, x1, y1)``.

    Accepts a ``(B, 4)`` array (one box per image), a ``(B, K, 4)`` array, or a sequence of ``B``
    array-likes each ``(K_i, 4)`` (``K_i`` may be 0) or ``(4,)``. ``x1``/``y1`` are exclusive;
    ``x0 <= x1`` and ``y0 <= y1`` are required (``x0 == x1`` is an empty box).
    """
    if isinstance(boxes, Tensor):
        boxes = boxes.detach().cpu().numpy()
    if isinstance(boxes, np.ndarray) and boxes.ndim in (2, 3):
        items = list(boxes if boxes.ndim == 3 else boxes[:, None, :])
    elif isinstance(boxes, (str, bytes)) or not isinstance(boxes, (Sequence, np.ndarray)):
        raise ValueError(f"{name} has type {type(boxes).__name__}; expected a sequence of (K_i, 4) box arrays")
    else:
        items = list(boxes)
    if len(items) != batch:
        raise ValueError(f"{name} has {len(items)} entries; expected one per image ({batch})")
    out = []
    for i, item in enumerate(items):
        if isinstance(item, Tensor):
            item = item.detach().cpu().numpy()
        try:
            arr = np.asarray(item, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name}[{i}] could not be read as numbers; expected a (K, 4) array") from None
        if arr.ndim == 1 and arr.shape[0] == 4:
            arr = arr[None]
        elif arr.ndim == 1 and arr.shape[0] == 0:
            arr = arr.reshape(0, 4)
        if arr.ndim != 2 or arr.shape[1] != 4:
            raise ValueError(f"{name}[{i}] has shape {arr.shape}; expected (K, 4) boxes (x0, y0, x1, y1)")
        if not np.isfinite(arr).all():
            raise ValueError(f"{name}[{i}] contains nan or inf; expected finite coordinates")
        bad = (arr[:, 2] < arr[:, 0]) | (arr[:, 3] < arr[:, 1])
        if bad.any():
            raise ValueError(
                f"{name}[{i}] has box {arr[bad][0].tolist()}; expected x0 <= x1 and y0 <= y1 "
                "(x1, y1 exclusive)"
            )
        out.append(arr)
    return out


def check_masks(masks: Any, *, batch: int, ndim: int = 3, name: str = "masks") -> np.ndarray:
    """Boolean pixel masks with ``batch`` first and ``ndim`` dimensions (``(B, H, W)`` or ``(B, O, H, W)``)."""
    if isinstance(masks, Tensor):
        masks = masks.detach().cpu().numpy()
    array = np.asarray(masks)
    if array.dtype != bool or array.ndim != ndim or array.shape[0] != batch or 0 in array.shape[1:]:
        raise ValueError(f"{name} has shape {array.shape} and dtype {array.dtype}; expected a bool array of "
                         f"{ndim} dimensions with {batch} images first")
    return array
