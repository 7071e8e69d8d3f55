"""Decode user images safely: size limits first, uint8 gray or RGB out (the one decoder).

The limits are checked on what the file's header declares (PNG ``IHDR``, JPEG ``SOFn``, BMP
``BITMAPINFOHEADER``: width, height, channels, bits per sample) before anything is decoded: the
pixels, and the bytes the decoder will allocate (width × height × channels × bytes per sample),
so a small file that would expand to gigabytes (a decompression bomb, a 16-bit RGBA PNG) is
refused without allocating its pixels.

The EXIF orientation a camera records (a JPEG's APP1 ``Exif`` segment, a PNG's ``eXIf`` chunk;
tag 274, values 1–8) is applied after decoding, as every photo viewer does, so a phone photo is
explained upright: the decoded array is the image as it is meant to be seen.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["MAX_DECODED_BYTES", "MAX_IMAGE_BYTES", "MAX_IMAGE_DECODED_BYTES", "MAX_IMAGE_PIXELS", "ImageHeader",
           "apply_orientation", "check_decoded_budget", "decode_image", "exif_orientation", "image_header",
           "image_size", "read_image"]

#: Refuse files above 20 MB and images above 50 megapixels (decompression bombs).
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_IMAGE_PIXELS = 50_000_000
#: Refuse images whose decoded samples take more than an 8-bit RGB image at the pixel limit does
#: (150 MB): a 16-bit RGBA image is refused above 18.75 megapixels.
MAX_IMAGE_DECODED_BYTES = 3 * MAX_IMAGE_PIXELS
#: Refuse to decode a set of images (a data folder) whose pixels would take more than 4 GiB.
MAX_DECODED_BYTES = 4 << 30


_PNG = b"\x89PNG\r\n\x1a\n"
# JPEG start-of-frame markers (baseline, progressive, lossless…); C4, C8 and CC are not frames.
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


@dataclass(frozen=True)
class ImageHeader:
    """What an image file's header declares.

    Attributes:
        width, height: pixels.
        channels: samples per pixel the decoder produces.
        sample_bytes: bytes per sample (2 for 16-bit PNGs and 12-bit JPEGs, else 1).
    """

    width: int
    height: int
    channels: int
    sample_bytes: int

    @property
    def decoded_bytes(self) -> int:
        """Bytes of the decoded array: width × height × channels × bytes per sample."""
        return self.width * self.height * self.channels * self.sample_bytes


#: PNG colour type → decoded channels (gray, RGB, palette → RGB, gray + alpha → 4, RGBA); a palette
#: with transparency decodes to 4 and is caught by the check after decoding.
_PNG_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 4, 6: 4}


def _jpeg_header(data: bytes) -> ImageHeader | None:
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
            if i + 10 > len(data):
                return None
            precision, height, width, components = struct.unpack(">BHHB", data[i + 4:i + 10])
            return ImageHeader(width, height, max(components, 1), 2 if precision > 8 else 1)
        i += 2 + length
    return None


def image_header(data: bytes) -> ImageHeader | None:
    """What a PNG, JPEG or BMP header declares, without decoding; ``None`` if not one of those."""
    if data.startswith(_PNG) and len(data) >= 26 and data[12:16] == b"IHDR":
        width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
        return ImageHeader(width, height, _PNG_CHANNELS.get(colour, 4), 2 if depth == 16 else 1)
    if data.startswith(b"\xff\xd8"):
        return _jpeg_header(data)
    if data.startswith(b"BM") and len(data) >= 30:
        width, height, _planes, bits = struct.unpack("<iiHH", data[18:30])
        return ImageHeader(abs(width), abs(height), 4 if bits == 32 else 3, 1)
    return None


_ORIENTATION_TAG = 0x0112


def _tiff_orientation(tiff: bytes) -> int:
    """The orientation (tag 274) of the first IFD of a TIFF-structured EXIF block; 1 if absent or damaged."""
    if len(tiff) < 8 or tiff[:2] not in (b"II", b"MM"):
        return 1
    order = "<" if tiff[:2] == b"II" else ">"
    magic, offset = struct.unpack(order + "HI", tiff[2:8])
    if magic != 42 or offset + 2 > len(tiff):
        return 1
    (count,) = struct.unpack(order + "H", tiff[offset:offset + 2])
    for i in range(min(count, (len(tiff) - offset - 2) // 12)):
        entry = tiff[offset + 2 + 12 * i:offset + 14 + 12 * i]
        tag, kind, _n = struct.unpack(order + "HHI", entry[:8])
        if tag == _ORIENTATION_TAG and kind == 3:  # SHORT, stored in the first two bytes of the value
            (value,) = struct.unpack(order + "H", entry[8:10])
            return value if 1 <= value <= 8 else 1
    return 1


def exif_orientation(data: bytes) -> int:
    """The EXIF orientation (1–8) a JPEG (APP1 ``Exif``) or PNG (``eXIf`` chunk) records; 1 (upright)
    when there is none or it cannot be read."""
    if data.startswith(b"\xff\xd8"):
        i = 2
        while i + 4 <= len(data) and data[i] == 0xFF:
            marker = data[i + 1]
            if marker == 0xFF:  # fill byte
                i += 1
                continue
            if marker in (0xD9, 0xDA):  # end of image, start of scan: no metadata after this
                break
            (length,) = struct.unpack(">H", data[i + 2:i + 4])
            body = data[i + 4:i + 2 + length]
            if marker == 0xE1 and body.startswith(b"Exif\0\0"):
                return _tiff_orientation(body[6:])
            i += 2 + length
        return 1
    if data.startswith(_PNG):
        i = len(_PNG)
        while i + 8 <= len(data):
            length, kind = struct.unpack(">I4s", data[i:i + 8])
            if kind == b"eXIf":
                return _tiff_orientation(data[i + 8:i + 8 + length])
            if kind in (b"IDAT", b"IEND"):
                break
            i += 12 + length
    return 1


def apply_orientation(image: np.ndarray, orientation: int) -> np.ndarray:
    """``image`` ``(H, W[, C])`` as EXIF ``orientation`` says it is meant to be seen (the transposes of
    Pillow's ``ImageOps.exif_transpose``): 2 mirrors it, 3 turns it 180°, 4 flips it, 5 transposes it,
    6 turns it 90° clockwise, 7 transposes it across the other diagonal, 8 turns it 90° anticlockwise."""
    ops = {1: lambda a: a, 2: lambda a: a[:, ::-1], 3: lambda a: a[::-1, ::-1], 4: lambda a: a[::-1],
           5: lambda a: a.swapaxes(0, 1), 6: lambda a: np.rot90(a, -1), 7: lambda a: a[::-1, ::-1].swapaxes(0, 1),
           8: lambda a: np.rot90(a, 1)}
    if orientation not in ops:
        raise ValueError(f"orientation={orientation!r} is invalid; expected an EXIF orientation 1 to 8")
    return np.ascontiguousarray(ops[orientation](image))


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from a PNG, JPEG or BMP header without decoding; ``None`` if not one of those.

    Example:
        >>> import cv2, numpy as np
        >>> image_size(cv2.imencode(".png", np.zeros((3, 5), np.uint8))[1].tobytes())
        (5, 3)
    """
    header = image_header(data)
    return None if header is None else (header.width, header.height)


def decode_image(data: bytes, *, name: str = "image", max_bytes: int = MAX_IMAGE_BYTES,
                 max_pixels: int = MAX_IMAGE_PIXELS, max_decoded_bytes: int = MAX_IMAGE_DECODED_BYTES) -> np.ndarray:
    """PNG/JPEG/BMP bytes → uint8 array ``(H, W)`` (gray) or ``(H, W, 3)`` (RGB; alpha dropped), turned
    upright by its EXIF orientation (:func:`exif_orientation`).

    Raises:
        ValueError: empty, too large a file, not an image, too many pixels, or too many decoded
            bytes (width × height × channels × bytes per sample, from the header); the message
            names ``name`` and the limit.
    """
    import cv2

    if not data:
        raise ValueError(f"{name}: the file is empty")
    if len(data) > max_bytes:
        raise ValueError(f"{name}: {len(data):,} bytes is over the limit of {max_bytes:,} bytes")
    header = image_header(data)
    if header is None:
        raise ValueError(f"{name}: not a readable image (expected PNG, JPEG or BMP)")
    if header.width * header.height > max_pixels:  # refused from the header, before any pixel is allocated
        raise ValueError(f"{name}: {header.width}x{header.height} pixels is over the limit of {max_pixels:,}")
    if header.decoded_bytes > max_decoded_bytes:
        raise ValueError(f"{name}: {header.width}x{header.height} pixels x {header.channels} channels x "
                         f"{header.sample_bytes} byte(s) decode to {header.decoded_bytes:,} bytes, over the limit "
                         f"of {max_decoded_bytes:,}")
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_UNCHANGED)
    if image is None or image.size == 0:
        raise ValueError(f"{name}: not a readable image (expected PNG, JPEG or BMP; damaged or truncated?)")
    if image.shape[0] * image.shape[1] > max_pixels or image.nbytes > max_decoded_bytes:  # a header that lied
        raise ValueError(f"{name}: {image.shape[1]}x{image.shape[0]} pixels ({image.nbytes:,} bytes decoded) is over "
                         f"the limit of {max_pixels:,} pixels or {max_decoded_bytes:,} bytes")
    if image.dtype != np.uint8:  # 16-bit PNG: round(v · 255 / 65535) straight to uint8, no float copy
        image = cv2.convertScaleAbs(image, alpha=255 / np.iinfo(image.dtype).max)
    if image.ndim == 3 and image.shape[2] == 4:
        image = cv2.cvtColor(image, cv2.COLOR_BGRA2RGB)
    elif image.ndim == 3 and image.shape[2] == 3:
        image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    elif image.ndim == 3 and image.shape[2] == 1:
        image = image[..., 0]
    return apply_orientation(image, exif_orientation(data))


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
