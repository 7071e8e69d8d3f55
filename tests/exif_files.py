"""Image files with an EXIF orientation, written byte by byte (no Pillow needed): the TIFF block with
tag 274 (orientation), put in a JPEG's APP1 ``Exif`` segment or a PNG's ``eXIf`` chunk."""

from __future__ import annotations

import struct
import zlib

import cv2
import numpy as np


def exif_block(orientation: int, *, order: str = "MM") -> bytes:
    """A TIFF-structured EXIF block whose first IFD holds only the orientation (a SHORT)."""
    fmt = ">" if order == "MM" else "<"
    header = order.encode() + struct.pack(fmt + "HI", 42, 8)
    entry = struct.pack(fmt + "HHIH", 0x0112, 3, 1, orientation) + b"\0\0"
    return header + struct.pack(fmt + "H", 1) + entry + struct.pack(fmt + "I", 0)


def encode(image: np.ndarray, ext: str) -> bytes:
    """``image`` (gray, or RGB) encoded by OpenCV as ``.png`` or ``.jpg``."""
    pixels = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(ext, pixels)
    assert ok
    return buf.tobytes()


def with_orientation(data: bytes, orientation: int, *, order: str = "MM") -> bytes:
    """JPEG or PNG bytes with an EXIF orientation added (APP1 after SOI; ``eXIf`` after IHDR)."""
    block = exif_block(orientation, order=order)
    if data.startswith(b"\xff\xd8"):
        body = b"Exif\0\0" + block
        return data[:2] + b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body + data[2:]
    ihdr_end = 8 + 8 + 13 + 4
    chunk = struct.pack(">I", len(block)) + b"eXIf" + block + struct.pack(">I", zlib.crc32(b"eXIf" + block))
    return data[:ihdr_end] + chunk + data[ihdr_end:]
