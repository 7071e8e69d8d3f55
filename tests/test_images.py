"""User images: decoding every layout, clear errors for bad files (model input: tests/test_preprocess.py)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from infsa_viz.images import decode_image


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
