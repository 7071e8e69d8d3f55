"""The map registry: every method on every variant, option checking, analytic cases."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from infsa_viz.maps import METHODS, SOFTMAX_GAMMA, explain, explain_with_metadata, pool_to_patches
from infsa_viz.vit import VisionTransformer

FAST = [m for m in METHODS if m != "integrated_gradients"]


@pytest.mark.parametrize("method", FAST)
def test_every_method_gives_a_finite_grid_map(tiny_model, method):
    x = torch.randn(2, 1, 16, 16)
    result = explain_with_metadata(tiny_model, x, method)
    assert result.map.shape == (2, 4, 4) and torch.isfinite(result.map).all()
    assert result.metadata["variant"] == tiny_model.config.attention
    assert set(METHODS[method].options) <= set(result.options)


def test_integrated_gradients_completeness(make_config):
    """IG attributions sum to logit(x) − logit(baseline) (Captum's completeness axiom)."""
    model = VisionTransformer(make_config("pure_infsa")).eval().double()
    x = torch.randn(1, 1, 16, 16, dtype=torch.float64)
    target = torch.tensor([1])
    m = explain(model, x, "integrated_gradients", targets=target, n_steps=200)
    with torch.no_grad():
        delta = model(x)[0, 1] - model(torch.zeros_like(x))[0, 1]
    assert float(m.sum()) == pytest.approx(float(delta), rel=0.02, abs=1e-4)


def test_occlusion_is_the_logit_drop_of_each_patch(make_config):
    model = VisionTransformer(make_config("softmax")).eval()
    x = torch.randn(1, 1, 16, 16)
    target = torch.tensor([2])
    m = explain(model, x, "occlusion", targets=target)
    with torch.no_grad():
        clean = model(x)[0, 2]
        occluded = x.clone()
        occluded[..., 4:8, 8:12] = 0.0  # patch (row 1, col 2)
        drop = clean - model(occluded)[0, 2]
    assert float(m[0, 1, 2]) == pytest.approx(float(drop), abs=1e-5)


def test_attention_map_of_linear_model_is_a(make_config):
    """For Linear-InfSA every row of 1·aᵀ is a, so the CLS row equals the estimate a."""
    model = VisionTransformer(make_config("linear_infsa")).eval()
    x = torch.randn(2, 1, 16, 16)
    assert_close(explain(model, x, "attention", layer=1, head=0),
                 explain(model, x, "linear_estimate", layer=1, head=0))


def test_softmax_visits_state_the_default_gamma(make_config):
    model = VisionTransformer(make_config("softmax")).eval()
    result = explain_with_metadata(model, torch.randn(1, 1, 16, 16), "visits")
    assert result.metadata["gamma"] == pytest.approx(SOFTMAX_GAMMA)
    assert result.metadata["gamma_source"] == "user"


def test_unknown_method_and_options_are_refused(tiny_model):
    x = torch.randn(1, 1, 16, 16)
    with pytest.raises(ValueError, match="method='gradcam'"):
        explain(tiny_model, x, "gradcam")
    with pytest.raises(ValueError, match="do not apply to method 'rollout'"):
        explain(tiny_model, x, "rollout", layer=0)
    with pytest.raises(ValueError, match="layer=7"):
        explain(tiny_model, x, "attention", layer=7)


def test_batched_equals_unbatched(tiny_model):
    x = torch.randn(3, 1, 16, 16)
    for method in ("attention", "visits" if tiny_model.config.attention != "softmax" else "perron", "saliency"):
        batched = explain(tiny_model, x, method)
        single = torch.cat([explain(tiny_model, x[i : i + 1], method) for i in range(3)])
        assert_close(batched, single, atol=1e-5, rtol=1e-4)


def test_pool_to_patches_sums_each_patch():
    attr = torch.arange(2 * 1 * 4 * 4, dtype=torch.float32).reshape(2, 1, 4, 4)
    pooled = pool_to_patches(attr, 2)
    assert pooled[0, 0, 0] == 0 + 1 + 4 + 5 and pooled.shape == (2, 2, 2)
