"""Decode user images safely: size limits first, uint8 gray or RGB out (the one decoder)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["MAX_IMAGE_BYTES", "MAX_IMAGE_PIXELS", "decode_image", "read_image"]

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
