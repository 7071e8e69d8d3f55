"""The greedy deletion oracle (infsa_viz/metrics/greedy_deletion.py): a MoRF ceiling of the model's own."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from infsa_viz.metrics import morf_aoc, perturbation_curves, removal_order
from infsa_viz.metrics.greedy_deletion import greedy_deletion, greedy_forwards
from infsa_viz.metrics.perturbation import removed_counts

from .conftest import GRID, PATCH, SIZE


class AdditiveModel(nn.Module):
    """Two classes: logit 0 = 0, logit 1 = Σ_p weight_p · mean of patch p. Removing patch p (mean
    baseline, 0) subtracts its contribution, so the greedy order is by descending contribution."""

    def __init__(self, weights: np.ndarray) -> None:
        super().__init__()
        self.weights = torch.as_tensor(weights, dtype=torch.float32).reshape(GRID, GRID)
        self.rows = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.rows += len(x)
        means = x.mean(dim=1).reshape(len(x), GRID, PATCH, GRID, PATCH).mean(dim=(2, 4))  # (B, h, w)
        s = (means * self.weights).sum(dim=(1, 2))
        return torch.stack([torch.zeros_like(s), s], dim=1)


def _contributions(model: AdditiveModel, images: torch.Tensor) -> np.ndarray:
    means = images.mean(dim=1).reshape(len(images), GRID, PATCH, GRID, PATCH).mean(dim=(2, 4))
    return (means * model.weights).reshape(len(images), -1).numpy()  # (B, N)


@pytest.fixture
def additive(images):
    weights = np.random.default_rng(7).normal(size=GRID * GRID)
    return AdditiveModel(weights).eval(), images


@pytest.mark.parametrize("steps", [GRID * GRID, 5])
def test_greedy_order_on_an_additive_model_is_by_descending_contribution(additive, steps):
    model, images = additive
    targets = np.ones(len(images), np.int64)
    result = greedy_deletion(model, images, targets, patch_size=PATCH, steps=steps, batch_size=37)
    expected = np.argsort(-_contributions(model, images), axis=1, kind="stable")
    counts = removed_counts(steps, GRID * GRID)
    for k in range(1, steps + 1):  # every step removes the same set (within a step, the same order)
        np.testing.assert_array_equal(np.sort(result.order[:, counts[k - 1]:counts[k]], axis=1),
                                      np.sort(expected[:, counts[k - 1]:counts[k]], axis=1))
    if steps == GRID * GRID:
        np.testing.assert_array_equal(result.order, expected)
    np.testing.assert_array_equal(removal_order(result.maps, order="morf", seed=0), result.order)


def test_the_curve_is_morf_of_the_map_and_the_cost_is_as_stated(additive):
    model, images = additive
    targets = np.ones(len(images), np.int64)
    model.rows = 0
    result = greedy_deletion(model, images, targets, patch_size=PATCH, steps=5, batch_size=64)
    B, K = len(images), 5
    # the input check (clean + 1 step), the greedy candidates, MoRF's curve (clean + K steps); the
    # all-removed step is the constant fill, scored once for all images (check and curve: 1 each)
    assert model.rows == B * (1 + result.forwards_per_image + K) + 2
    assert result.forwards_per_image == greedy_forwards(5, GRID * GRID) == sum(
        GRID * GRID - removed_counts(5, GRID * GRID)[k - 1] for k in range(1, 6))
    again = perturbation_curves(model, images, result.maps, targets, patch_size=PATCH, steps=5)
    np.testing.assert_array_equal(again.probs, result.curves.probs)
    assert result.protocol["forwards_per_image"] == result.forwards_per_image


def test_greedy_is_a_ceiling_after_one_step_on_a_real_vit(vit, images):
    """With one patch per step, no map can lower the class after step 1 below the greedy choice."""
    targets = np.array([0, 1, 2, 0, 1, 2])
    result = greedy_deletion(vit, images, targets, patch_size=PATCH, steps=GRID * GRID, batch_size=128)
    brute = np.stack([perturbation_curves(vit, images, np.eye(GRID * GRID)[p].reshape(1, GRID, GRID).repeat(6, 0),
                                          targets, patch_size=PATCH, steps=GRID * GRID).probs[:, 1]
                      for p in range(GRID * GRID)], axis=1)  # (B, N): each patch removed first
    np.testing.assert_allclose(result.curves.probs[:, 1], brute.min(axis=1), atol=1e-6)
    random = perturbation_curves(vit, images, np.random.default_rng(0).random((6, GRID, GRID)), targets,
                                 patch_size=PATCH, steps=GRID * GRID)
    assert (result.curves.probs[:, 1] <= random.probs[:, 1] + 1e-6).all()
    assert morf_aoc(result.curves, select="all").mean >= morf_aoc(random, select="all").mean


def test_bad_inputs_are_refused_as_by_perturbation_curves(vit, images):
    targets = np.zeros(len(images), np.int64)
    with pytest.raises(TypeError, match="images"):
        greedy_deletion(vit, images.numpy(), targets, patch_size=PATCH)
    with pytest.raises(ValueError, match="patch_size"):
        greedy_deletion(vit, images, targets, patch_size=5)
    with pytest.raises(ValueError, match="steps"):
        greedy_deletion(vit, images, targets, patch_size=PATCH, steps=0)
    with pytest.raises(ValueError, match="targets"):
        greedy_deletion(vit, images, targets[:2], patch_size=PATCH)
    assert SIZE % PATCH == 0
