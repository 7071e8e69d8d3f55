"""Decode user images safely: size limits first, uint8 gray or RGB out (the one decoder).

The pixel limit is checked on the size read from the file's header (PNG ``IHDR``, JPEG ``SOFn``,
BMP ``BITMAPINFOHEADER``) before anything is decoded, so a small file that would expand to
gigabytes (a decompression bomb) is refused without allocating its pixels.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

__all__ = ["MAX_DECODED_BYTES", "MAX_IMAGE_BYTES", "MAX_IMAGE_PIXELS", "check_decoded_budget", "decode_image",
           "image_size", "read_image"]

#: Refuse files above 20 MB and images above 50 megapixels (decompression bombs).
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_IMAGE_PIXELS = 50_000_000
#: Refuse to decode a set of images (a data folder) whose pixels would take more than 4 GiB.
MAX_DECODED_BYTES = 4 << 30


_PNG = b"\x89PNG\r\n\x1a\n"
# JPEG start-of-frame markers (baseline, progressive, lossless…); C4, C8 and CC are not frames.
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2:i + 4])
        if marker in _JPEG_FRAMES:
            if i + 9 > len(data):
                return None
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from a PNG, JPEG or BMP header without decoding; ``None`` if not one of those.

    Example:
        >>> import cv2, numpy as np
        >>> image_size(cv2.imencode(".png", np.zeros((3, 5), np.uint8))[1].tobytes())
        (5, 3)
    """
    if data.startswith(_PNG) and len(data) >= 24 and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    if data.startswith(b"\xff\xd8"):
        return _jpeg_size(data)
    if data.startswith(b"BM") and len(data) >= 26:
        width, height = struct.unpack("<ii", data[18:26])
        return abs(width), abs(height)
    return None


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
    size = image_size(data)
    if size is None:
        raise ValueError(f"{name}: not a readable image (expected PNG, JPEG or BMP)")
    if size[0] * size[1] > max_pixels:  # refused from the header, before any pixel is allocated
        raise ValueError(f"{name}: {size[0]}x{size[1]} pixels is over the limit of {max_pixels:,}")
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
    if image is None or image.size == 0:
        raise ValueError(f"{name}: not a readable image (expected PNG, JPEG or BMP; damaged or truncated?)")
    if image.shape[0] * image.shape[1] > max_pixels:  # a header that lied
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
    try:
        if path.stat().st_size > MAX_IMAGE_BYTES:  # refused before reading it into memory
            raise ValueError(f"{path}: {path.stat().st_size:,} bytes is over the limit of {MAX_IMAGE_BYTES:,} bytes")
        data = path.read_bytes()
    except OSError as err:
        raise ValueError(f"{path}: cannot be read ({err.strerror or err})") from None
    return decode_image(data, name=str(path))


def check_decoded_budget(paths: "list[Path] | tuple[Path, ...]", *, budget: int = MAX_DECODED_BYTES) -> int:
    """Bytes the images at ``paths`` decode to (3 per pixel), read from their headers only.

    Raises:
        ValueError: the total is over ``budget`` (the message says how many images fit), or a file
            cannot be read.
    """
    total = 0
    for count, path in enumerate(paths, 1):
        try:
            with open(path, "rb") as handle:
                head = handle.read(1 << 18)
                size = image_size(head) or image_size(head + handle.read())
        except OSError as err:
            raise ValueError(f"{path}: cannot be read ({err.strerror or err})") from None
        if size is not None:
            total += 3 * size[0] * size[1]
        if total > budget:
            raise ValueError(f"the first {count} images (up to {path}) decode to more than {budget:,} bytes of "
                             f"pixels, the limit; evaluate fewer images (--n-images {max(count - 1, 1)} or less)")
    return total
