"""Sanity checks (Adebayo et al. 2018) on a tiny model: similarity measures, the cascade, the verdict."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from infsa_viz.maps import attribute_images
from infsa_viz.metrics import (
    cascading_randomisation,
    random_other_class,
    sanity_report,
    spearman,
    ssim,
)


def test_spearman_and_ssim_analytic_cases():
    rng = np.random.default_rng(0)
    a = rng.random((3, 4, 4))
    assert np.allclose(spearman(a, a ** 3), 1.0) and np.allclose(spearman(a, -a), -1.0)
    assert np.allclose(ssim(a, a), 1.0) and np.allclose(ssim(a, 2 * a + 1), 1.0)  # min-max normalised
    assert (ssim(a, 1 - a) < 0).all()


def test_cascade_randomises_top_down_and_keeps_the_trained_model(tiny_model):
    before = {k: v.clone() for k, v in tiny_model.state_dict().items()}
    stages = []
    for name, model in cascading_randomisation(tiny_model, seed=0):
        changed = {k for k, v in model.state_dict().items() if not torch.equal(v, before[k])}
        stages.append((name, changed))
    assert [s for s, _ in stages] == ["head", "block_1", "block_0", "embedding"]
    assert all(k.startswith(("head", "norm.")) for k in stages[0][1])
    assert any(k.startswith("blocks.1") for k in stages[1][1]) and not any(k.startswith("blocks.0") for k in stages[1][1])
    assert "pos_embed" in stages[-1][1]
    assert all(torch.equal(v, before[k]) for k, v in tiny_model.state_dict().items())


def test_random_other_class_is_never_the_target():
    targets = np.arange(200) % 3
    other = random_other_class(targets, 3, seed=1)
    assert (other != targets).all() and set(other.tolist()) == {0, 1, 2}


def test_a_map_of_the_input_alone_fails_and_a_gradient_map_moves(tiny_model):
    x = torch.randn(4, 1, 16, 16)
    targets = torch.tensor([0, 1, 2, 0])

    def input_only(model, target):  # patch sums of the image: ignores the model entirely
        return x.reshape(4, 4, 4, 4, 4).sum((2, 4)).reshape(4, 4, 4)

    report = sanity_report(tiny_model, x, input_only, None, num_classes=3)
    assert report["fails"] is True and report["randomised_spearman"] == pytest.approx(1.0)
    assert report["random_logit"] is None

    def chefer(model, target):
        return attribute_images(model, x, "chefer2021", target=target).maps

    report = sanity_report(tiny_model, x, chefer, targets, num_classes=3)
    assert [s["stage"] for s in report["stages"]] == ["head", "block_1", "block_0", "embedding"]
    assert report["randomised_spearman"] < 1.0 and report["random_logit"]["spearman"]["n"] >= 1
