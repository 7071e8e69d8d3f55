"""Finite or refused: model inputs and outputs, maps (the bad-input matrix covers the CLI)."""

from __future__ import annotations

import pytest
import torch

from infsa_viz import VisionTransformer
from infsa_viz.maps import attribute_images


@pytest.fixture
def model(make_config, variant):
    return VisionTransformer(make_config(variant)).eval()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_float_inputs_of_other_precision_are_converted(model, dtype):
    x = torch.randn(2, 1, 16, 16)
    expected = model(x)
    got = model(x.to(dtype))
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected, atol=0.05 if dtype != torch.float64 else 1e-6, rtol=0.05)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64, torch.bool])
def test_integer_inputs_are_refused(model, dtype):
    with pytest.raises(TypeError, match=f"images of type {dtype} must be a floating-point tensor"):
        model(torch.zeros(1, 1, 16, 16, dtype=dtype))


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_pixels_name_the_image(model, value):
    x = torch.randn(3, 1, 16, 16)
    x[2, 0, 3, 3] = value
    with pytest.raises(ValueError, match=r"images \[2\] hold NaN or Inf pixels"):
        model(x)


def test_overflowing_inputs_give_a_clear_error_not_nan_logits(make_config):
    model = VisionTransformer(make_config("pure_infsa")).eval()
    x = torch.randn(2, 1, 16, 16)
    x[1] *= 1e30
    with pytest.raises(ValueError, match=r"model: logits of images \[1\] are NaN/Inf \(largest \|input\| [0-9.]+e\+30"):
        model(x)


def test_non_finite_maps_are_refused(make_config, monkeypatch):
    model = VisionTransformer(make_config("softmax")).eval()
    from infsa_viz.maps import METHODS

    method = METHODS["attention"]
    real = type(method)._compute

    def broken(self, *args, **kwargs):
        maps, metadata, validity = real(self, *args, **kwargs)
        maps = maps.clone()
        maps[0, 0, 0] = float("nan")
        return maps, metadata, validity

    monkeypatch.setattr(type(method), "_compute", broken)
    with pytest.raises(ValueError, match=r"method 'attention' gave NaN/Inf maps for images \[0\]"):
        attribute_images(model, torch.randn(2, 1, 16, 16), "attention")
