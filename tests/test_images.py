"""User images: decoding every layout, clear errors for bad files, model input preparation."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from infsa_viz.images import decode_image, prepare_image


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


def test_prepare_resizes_and_converts_channels():
    rgb = np.zeros((96, 96, 3), np.uint8)
    rgb[:48] = 255
    tensor, shown = prepare_image(rgb, in_chans=1, size=48, mean=0.5, std=0.5)
    assert tensor.shape == (1, 1, 48, 48) and shown.shape == (48, 48)
    assert float(tensor[0, 0, 0, 0]) == pytest.approx(1.0) and float(tensor[0, 0, -1, 0]) == pytest.approx(-1.0)
    tensor, _ = prepare_image(np.zeros((10, 10), np.uint8), in_chans=3, size=16)
    assert tensor.shape == (1, 3, 16, 16)
