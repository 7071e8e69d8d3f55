"""Decode user images safely and prepare them as model input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor

__all__ = ["MAX_IMAGE_BYTES", "MAX_IMAGE_PIXELS", "decode_image", "prepare_image", "read_image"]

#: Refuse files above 20 MB and images above 50 megapixels (decompression bombs).
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_IMAGE_PIXELS = 50_000_000


def decode_image(data: bytes, *, name: str = "image", max_bytes: int = MAX_IMAGE_BYTES,
                 max_pixels: int = MAX_IMAGE_PIXELS) -> np.ndarray:
    """PNG/JPEG/BMP bytes → uint8 array ``(H, W)`` (gray) or ``(H, W, 3)`` (RGB; alpha dropped).

    Raises:
        ValueError: empty, too large, not an image, or too many pixels; the message names ``name``.
    """
    import cv2

    if not data:
        raise ValueError(f"{name}: the file is empty")
    if len(data) > max_bytes:
        raise ValueError(f"{name}: {len(data):,} bytes is over the limit of {max_bytes:,} bytes")
    buf = np.frombuffer(data, dtype=np.uint8)
    image = cv2.imdecode(buf, cv2.IMREAD_UNCHANGED)
    if image is None:
        raise ValueError(f"{name}: not a readable image (expected PNG, JPEG or BMP)")
    if image.shape[0] * image.shape[1] > max_pixels:
        raise ValueError(f"{name}: {image.shape[1]}x{image.shape[0]} pixels is over the limit of {max_pixels:,}")
    if image.dtype != np.uint8:  # 16-bit PNG
        image = (image.astype(np.float32) / np.iinfo(image.dtype).max * 255 + 0.5).astype(np.uint8)
    if image.ndim == 3 and image.shape[2] == 4:
        image = cv2.cvtColor(image, cv2.COLOR_BGRA2RGB)
    elif image.ndim == 3 and image.shape[2] == 3:
        image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    elif image.ndim == 3 and image.shape[2] == 1:
        image = image[..., 0]
    return image


def read_image(path: str | Path) -> np.ndarray:
    """:func:`decode_image` of a file; ``ValueError`` naming the path if it cannot be read."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"image {str(path)!r} does not exist")
    return decode_image(path.read_bytes(), name=str(path))


def prepare_image(image: np.ndarray, *, in_chans: int, size: int, mean: float | None = None,
                  std: float | None = None) -> tuple[Tensor, np.ndarray]:
    """Resize (area) to ``size × size``, convert channels, normalise → ``((1, C, S, S), uint8 S×S[×3])``.

    Defaults for ``mean``/``std`` are the cluttered-digits constants (the shipped models' input).
    """
    import cv2

    from .data import PIXEL_MEAN, PIXEL_STD

    if in_chans not in (1, 3):
        raise ValueError(f"in_chans={in_chans} must be 1 or 3")
    if image.ndim == 3 and in_chans == 1:
        image = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    elif image.ndim == 2 and in_chans == 3:
        image = np.repeat(image[..., None], 3, axis=-1)
    if image.shape[:2] != (size, size):
        shrinking = image.shape[0] >= size and image.shape[1] >= size
        image = cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR)
    mean = PIXEL_MEAN if mean is None else mean
    std = PIXEL_STD if std is None else std
    x = torch.from_numpy(image.astype(np.float32) / 255.0)
    x = x[None] if x.ndim == 2 else x.permute(2, 0, 1)
    return ((x - mean) / std).unsqueeze(0), image
