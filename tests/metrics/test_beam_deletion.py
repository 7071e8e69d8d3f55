"""The beam-search estimate of MoRF's ceiling (infsa_viz/metrics/beam_deletion.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from infsa_viz.maps import attribute_images
from infsa_viz.metrics import morf_aoc, perturbation_curves, removal_order
from infsa_viz.metrics.beam_deletion import beam_deletion, beam_forwards, step_weights, window_shapes
from infsa_viz.metrics.greedy_deletion import greedy_deletion
from infsa_viz.metrics.perturbation import PerturbationCurves, removed_counts

from .conftest import GRID, PATCH

A, B = 5, 6  # two neighbouring patches (row 1, columns 1 and 2)


class EitherPatchModel(nn.Module):
    """Two classes: logit 0 = 0, logit 1 = 6·max(m_A, m_B) + 0.5·Σ_p w_p·m_p − 2, with ``m_p`` patch p's mean.

    Either of the patches A and B keeps the class: removing one alone (mean baseline, 0) barely moves it,
    so the greedy step removes the lightly weighted others first; removing both at once drops it."""

    def __init__(self) -> None:
        super().__init__()
        self.weights = torch.from_numpy(np.random.default_rng(3).uniform(0.2, 1.0, GRID * GRID)).float()
        self.weights[[A, B]] = 0.0
        self.rows = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.rows += len(x)
        means = x.mean(dim=1).reshape(len(x), GRID, PATCH, GRID, PATCH).mean(dim=(2, 4)).reshape(len(x), -1)
        s = 6.0 * torch.maximum(means[:, A], means[:, B]) + 0.5 * (means * self.weights).sum(1) - 2.0
        return torch.stack([torch.zeros_like(s), s], dim=1)


@pytest.fixture
def bright() -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(4).uniform(0.5, 1.0, size=(3, 1, 16, 16)).astype(np.float32))


def test_the_area_weights_give_morf_aoc():
    rng = np.random.default_rng(0)
    for steps, n in ((20, 36), (5, 16), (40, 16)):  # 40 > 16: repeated steps
        removed = removed_counts(steps, n)
        probs = rng.random((4, steps + 1))
        curves = PerturbationCurves("morf", removed / n, removed, probs, np.zeros(4, np.int64), np.zeros(4, np.int64),
                                    np.zeros(4, np.int64), {})
        expected = morf_aoc(curves, select="all").per_image
        np.testing.assert_allclose(100 * (1 - (probs * step_weights(steps, n)).sum(1) / probs[:, 0]), expected)


def test_the_beam_finds_the_pair_the_greedy_step_cannot_see(bright):
    model = EitherPatchModel().eval()
    targets = np.ones(len(bright), np.int64)
    greedy = greedy_deletion(model, bright, targets, patch_size=PATCH, steps=8)  # two patches per step
    model.rows = 0
    beam = beam_deletion(model, bright, targets, patch_size=PATCH, steps=8, width=2, expand=2)
    # checks (clean + 1 step), curve (clean + 8 steps), search; the all-removed step (a constant
    # fill) is scored once for all images in the check and in the curve
    assert model.rows == len(bright) * (1 + 8) + 2 + beam.forwards_per_image.sum()
    assert all(set(first) == {A, B} for first in beam.order[:, :2].tolist())
    assert not any(set(first) == {A, B} for first in greedy.order[:, :2].tolist())
    g, b = (morf_aoc(r.curves, select="all").per_image for r in (greedy, beam))
    assert (b > g).all() and (b - g).mean() > 10  # points of area
    # the map reproduces the curves; the cost is counted and within the stated bound
    again = perturbation_curves(model, bright, beam.maps, targets, patch_size=PATCH, steps=8)
    np.testing.assert_array_equal(again.probs, beam.curves.probs)
    np.testing.assert_array_equal(removal_order(beam.maps, order="morf"), beam.order)
    bound = beam_forwards(8, (GRID, GRID), width=2, expand=2)
    assert (beam.forwards_per_image <= bound).all() and beam.protocol["forwards_per_image_max"] == bound


def test_never_below_the_greedy_oracle_on_a_real_vit(vit, images):
    targets = np.array([0, 1, 2, 0, 1, 2])
    greedy = greedy_deletion(vit, images, targets, patch_size=PATCH, steps=6)
    beam = beam_deletion(vit, images, targets, patch_size=PATCH, steps=6, width=2, expand=3)
    g, b = (morf_aoc(r.curves, select="all").per_image for r in (greedy, beam))
    assert (b >= g - 1e-9).all()
    assert sorted(beam.order[0].tolist()) == list(range(GRID * GRID))


def test_windows_and_the_registered_reference_map(vit, images):
    assert window_shapes(2) == [(1, 2), (2, 1), (2, 2)] and window_shapes(8) == [(3, 3)]
    found = attribute_images(vit, images, "beam_deletion", target=torch.tensor([0, 1, 2, 0, 1, 2]), steps=4, width=1,
                      expand=2)
    assert found.maps.shape == (6, GRID, GRID) and found.metadata["forwards_per_image"] > 0
    assert 0 < found.metadata["forwards_per_image_mean"] <= found.metadata["forwards_per_image"]


def test_bad_inputs_are_refused(vit, images):
    targets = np.zeros(len(images), np.int64)
    with pytest.raises(ValueError, match="width"):
        beam_deletion(vit, images, targets, patch_size=PATCH, width=0)
    with pytest.raises(ValueError, match="expand"):
        beam_deletion(vit, images, targets, patch_size=PATCH, expand=0)
    with pytest.raises(ValueError, match="too large"):
        beam_deletion(vit, images, targets, patch_size=PATCH, width=65)
    with pytest.raises(ValueError, match="steps"):
        beam_deletion(vit, images, targets, patch_size=PATCH, steps=0)
    with pytest.raises(TypeError, match="images"):
        beam_deletion(vit, images.numpy(), targets, patch_size=PATCH)
