"""User images: decoding every layout, clear errors for bad files (model input: tests/test_preprocess.py)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from infsa_viz.images import decode_image, image_size


def png(array: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", array)
    assert ok
    return buf.tobytes()


@pytest.mark.parametrize("shape", [(30, 40), (30, 40, 3), (30, 40, 4)])
def test_gray_rgb_rgba_decode(shape):
    image = decode_image(png(np.full(shape, 100, np.uint8)))
    assert image.shape[:2] == (30, 40) and image.dtype == np.uint8
    assert image.ndim == (2 if len(shape) == 2 else 3)


def test_sixteen_bit_png_is_scaled():
    image = decode_image(png(np.full((4, 4), 65535, np.uint16)))
    assert image.dtype == np.uint8 and image.max() == 255


@pytest.mark.parametrize("data,match", [(b"", "empty"), (b"GIF89a not really", "not a readable image")])
def test_bad_files_give_clear_errors(data, match):
    with pytest.raises(ValueError, match=match):
        decode_image(data, name="upload.png")


def test_limits():
    with pytest.raises(ValueError, match="over the limit of 10 bytes"):
        decode_image(png(np.zeros((8, 8), np.uint8)), max_bytes=10)
    with pytest.raises(ValueError, match="pixels is over the limit"):
        decode_image(png(np.zeros((100, 100), np.uint8)), max_pixels=100)


@pytest.mark.parametrize("ext", [".png", ".jpg", ".bmp"])
@pytest.mark.parametrize("shape", [(3, 5), (17, 11, 3)])
def test_image_size_reads_the_header(ext, shape):
    ok, buf = cv2.imencode(ext, np.zeros(shape, np.uint8))
    assert ok
    assert image_size(buf.tobytes()) == (shape[1], shape[0])


def test_progressive_jpeg_size():
    ok, buf = cv2.imencode(".jpg", np.zeros((9, 21, 3), np.uint8), [cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
    assert ok and image_size(buf.tobytes()) == (21, 9)


def _bomb_png(width: int, height: int) -> bytes:
    """A PNG whose header announces width×height gray pixels: the pixels are never written."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def test_decompression_bomb_is_refused_from_its_header(monkeypatch):
    import infsa_viz.images as images

    def never(*_args, **_kwargs):  # the decoder must not even be called
        raise AssertionError("decoded a bomb")

    monkeypatch.setattr(cv2, "imdecode", never)
    with pytest.raises(ValueError, match="25000x25000 pixels is over the limit"):
        images.decode_image(_bomb_png(25000, 25000), name="bomb.png")


def test_truncated_image_is_refused():
    data = png(np.full((40, 40), 7, np.uint8))
    with pytest.raises(ValueError, match="not a readable image"):
        decode_image(data[:30], name="cut.png")


def test_decoded_budget_is_counted_from_headers(tmp_path):
    from infsa_viz.images import check_decoded_budget

    paths = []
    for i in range(3):
        path = tmp_path / f"{i}.png"
        path.write_bytes(_bomb_png(1000, 1000))  # 3 MB decoded each, a few bytes on disk
        paths.append(path)
    assert check_decoded_budget(paths) == 9_000_000
    with pytest.raises(ValueError, match=r"the first 2 images .* more than 5,000,000 bytes .*--n-images 1 or less"):
        check_decoded_budget(paths, budget=5_000_000)
