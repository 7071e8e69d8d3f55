"""Baselines that never read the model (infsa_viz/maps/baseline.py): analytic cases."""

from __future__ import annotations

import torch

from infsa_viz import VisionTransformer
from infsa_viz.maps import METHODS, attribute_images
from tests.conftest import tiny_config


def _model():
    return VisionTransformer(tiny_config("softmax")).eval()  # 16 x 16 inputs, 4-pixel patches


def _naive_sobel(image: torch.Tensor) -> torch.Tensor:
    """|∇| of a 2-D image with the 3 x 3 Sobel kernels and zero padding, written out pixel by pixel."""
    padded = torch.nn.functional.pad(image.double(), (1, 1, 1, 1))
    out = torch.zeros(image.shape, dtype=torch.float64)
    for y in range(image.shape[0]):
        for x in range(image.shape[1]):
            w = padded[y:y + 3, x:x + 3]
            gx = (w[0, 2] + 2 * w[1, 2] + w[2, 2]) - (w[0, 0] + 2 * w[1, 0] + w[2, 0])
            gy = (w[2, 0] + 2 * w[2, 1] + w[2, 2]) - (w[0, 0] + 2 * w[0, 1] + w[0, 2])
            out[y, x] = (gx * gx + gy * gy).sqrt()
    return out


def test_the_edge_map_is_the_patch_mean_sobel_magnitude():
    images = torch.zeros(2, 1, 16, 16)
    images[0, :, :, 8:] = 1.0  # a vertical step between columns 7 and 8
    images[1, 0] = torch.rand(16, 16, generator=torch.Generator().manual_seed(3))
    maps = attribute_images(_model(), images, "edge").maps  # (2, 4, 4)
    for i in range(2):
        expected = _naive_sobel(images[i, 0]).reshape(4, 4, 4, 4).permute(0, 2, 1, 3).reshape(4, 4, 16).mean(-1)
        torch.testing.assert_close(maps[i], expected.float())
    # inside the step's neighbours: 4 on column 7 of patch column 1, i.e. a patch mean of 1
    torch.testing.assert_close(maps[0, 1:3, 1], torch.ones(2))
    assert float(maps[0, 1:3, 0].abs().max()) == 0.0  # the flat dark side holds no edge


def test_the_intensity_map_is_the_patch_mean_above_the_darkest_pixel():
    images = torch.arange(256, dtype=torch.float32).reshape(1, 1, 16, 16) / 255.0 - 0.5
    maps = attribute_images(_model(), images, "intensity").maps
    expected = (torch.arange(256, dtype=torch.float64).reshape(4, 4, 4, 4).permute(0, 2, 1, 3)
                .reshape(4, 4, 16).mean(-1) / 255.0).float()
    torch.testing.assert_close(maps[0], expected)


def test_model_ignorant_maps_do_not_depend_on_the_model():
    images = torch.rand(3, 1, 16, 16)
    for name in ("edge", "intensity", "random"):
        a = attribute_images(VisionTransformer(tiny_config("softmax")).eval(), images, name).maps
        b = attribute_images(VisionTransformer(tiny_config("linear_infsa")).eval(), images, name).maps
        torch.testing.assert_close(a, b)
        assert METHODS[name].role in ("model_ignorant", "floor") and METHODS[name].with_references  # rows of every --references run
