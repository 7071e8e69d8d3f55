"""ROAD's noisy linear imputation on analytic images, and its curves against a loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from infsa_viz.metrics import noisy_linear_imputation, road_curves


def test_a_linear_ramp_is_filled_exactly():
    ys, xs = torch.meshgrid(torch.arange(9.0), torch.arange(9.0), indexing="ij")
    ramp = (2 * xs - 3 * ys + 1).expand(1, 2, 9, 9)  # two channels, one system
    mask = torch.zeros(1, 9, 9, dtype=torch.bool)
    mask[0, 2:7, 1:8] = True  # an interior hole: every equation has all 8 neighbours
    filled = noisy_linear_imputation(ramp, mask, noise=0.0)
    torch.testing.assert_close(filled, ramp.double())


def test_border_pixels_average_their_neighbours_inside_the_image():
    image = torch.zeros(1, 1, 3, 3, dtype=torch.float64)
    image[0, 0, 0, 1], image[0, 0, 1, 0], image[0, 0, 1, 1] = 6.0, 12.0, 24.0
    mask = torch.zeros(1, 3, 3, dtype=torch.bool)
    mask[0, 0, 0] = True  # corner: neighbours (0,1), (1,0) weight 1/6, (1,1) weight 1/12
    expected = (6.0 / 6 + 12.0 / 6 + 24.0 / 12) / (1 / 6 + 1 / 6 + 1 / 12)
    assert float(noisy_linear_imputation(image, mask, noise=0.0)[0, 0, 0, 0]) == pytest.approx(expected)


def test_noise_only_on_filled_pixels_with_its_spread():
    image = torch.zeros(1, 1, 80, 80)
    mask = torch.zeros(1, 80, 80, dtype=torch.bool)
    mask[0, 5:75, 5:75] = True  # 4,900 draws: std within 5 % by far
    filled = noisy_linear_imputation(image, mask, noise=0.5, seed=3)
    assert (filled[0, 0][~mask[0]] == 0).all()
    assert float(filled[0, 0][mask[0]].std()) == pytest.approx(0.5, rel=0.05)
    torch.testing.assert_close(filled, noisy_linear_imputation(image, mask, noise=0.5, seed=3))


def test_road_curves_follow_their_definition(vit, images):
    maps = np.random.default_rng(0).random((1, 4, 4))
    result = road_curves(vit, images[:1], maps, [1], patch_size=4, steps=4, noise=0.0)
    assert result.fractions.tolist() == [0.0, 0.25, 0.5, 0.75]
    order = np.argsort(-maps[0].ravel())
    mask = torch.zeros(1, 16, 16, dtype=torch.bool)
    for t in order[:8]:
        r, c = divmod(int(t), 4)
        mask[0, r * 4:(r + 1) * 4, c * 4:(c + 1) * 4] = True
    with torch.no_grad():
        p = torch.softmax(vit(noisy_linear_imputation(images[:1], mask, noise=0.0).float()).double(), -1)[0, 1]
    assert result.morf[0, 2] == pytest.approx(float(p), abs=1e-5)
    ratio = result.morf[0] / result.morf[0, 0]
    assert result.morf_aoc[0] == pytest.approx(100 * np.trapezoid(1 - ratio, result.fractions))
