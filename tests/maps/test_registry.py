"""The map registry: every method on every variant, one verb, option and target checking."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from infsa_viz.maps import (
    METHODS,
    UNLEARNED_GAMMA,
    MapMethod,
    attribute_images,
    parse_head,
    pool_to_patches,
    selector_options,
)
from infsa_viz.model import VisionTransformer

def test_every_method_is_one_registered_class():
    assert all(isinstance(m, MapMethod) and m.name == name for name, m in METHODS.items())
    assert len({type(m) for m in METHODS.values()}) == len(METHODS)


def test_integrated_gradients_completeness(make_config):
    """IG attributions sum to logit(x) − logit(baseline) (Captum's completeness axiom)."""
    model = VisionTransformer(make_config("pure_infsa")).eval().double()
    x = torch.randn(1, 1, 16, 16, dtype=torch.float64)
    m = attribute_images(model, x, "integrated_gradients", target=1, n_steps=200).maps
    with torch.no_grad():
        delta = model(x)[0, 1] - model(torch.zeros_like(x))[0, 1]
    assert float(m.sum()) == pytest.approx(float(delta), rel=0.02, abs=1e-4)


def test_occlusion_is_the_logit_drop_of_each_patch(make_config):
    model = VisionTransformer(make_config("softmax")).eval()
    x = torch.randn(1, 1, 16, 16)
    result = attribute_images(model, x, "occlusion", target=torch.tensor([2]))
    with torch.no_grad():
        clean = model(x)[0, 2]
        occluded = x.clone()
        occluded[..., 4:8, 8:12] = 0.0  # patch (row 1, col 2)
        drop = clean - model(occluded)[0, 2]
    assert float(result.maps[0, 1, 2]) == pytest.approx(float(drop), abs=1e-5)
    assert result.target.tolist() == [2]


def test_gradient_target_defaults_to_the_prediction_and_is_checked(make_config):
    model = VisionTransformer(make_config("softmax")).eval()
    x = torch.randn(3, 1, 16, 16)
    with torch.no_grad():
        predicted = model(x).argmax(-1)
    assert attribute_images(model, x, "saliency").target.tolist() == predicted.tolist()
    assert attribute_images(model, x, "saliency", target=0).target.tolist() == [0, 0, 0]
    assert attribute_images(model, x, "saliency", target="top 2").target.tolist() == \
        torch.sort(model(x), dim=-1, descending=True, stable=True).indices[:, 1].tolist()
    assert attribute_images(model, x, "saliency", target="label", labels=[2, 1, 0]).target.tolist() == [2, 1, 0]
    for bad in (3, torch.tensor([0, 1]), -1, "top 9", "label", "cat"):
        with pytest.raises(ValueError, match="target|label"):
            attribute_images(model, x, "saliency", target=bad)
    with pytest.raises(ValueError, match="does not explain a class"):
        attribute_images(model, x, "attention", target=1)


def test_attention_map_of_linear_model_is_a(make_config):
    """For Linear-InfSA every row of 1·aᵀ is a, so the CLS row equals the estimate a."""
    model = VisionTransformer(make_config("linear_infsa")).eval()
    x = torch.randn(2, 1, 16, 16)
    assert_close(attribute_images(model, x, "attention", layer=1, head=0).maps,
                 attribute_images(model, x, "linear_estimate", layer=1, head=0).maps)


def test_softmax_visits_state_the_default_gamma(make_config):
    model = VisionTransformer(make_config("softmax")).eval()
    result = attribute_images(model, torch.randn(1, 1, 16, 16), "visits")
    assert result.metadata["gamma"] == pytest.approx(UNLEARNED_GAMMA)
    assert "learns no rho" in result.metadata["gamma_source"]


def test_unknown_method_and_options_are_refused(tiny_model):
    x = torch.randn(1, 1, 16, 16)
    with pytest.raises(ValueError, match="method='gradcam'"):
        attribute_images(tiny_model, x, "gradcam")
    with pytest.raises(ValueError, match="do not apply to method 'rollout'"):
        attribute_images(tiny_model, x, "rollout", layer=0)
    with pytest.raises(ValueError, match="layer=7"):
        attribute_images(tiny_model, x, "attention", layer=7)


def test_selector_options_one_rule_for_the_cli_and_the_app():
    assert selector_options("visits", layer=1, head="0", gamma=0.5) == {"layer": 1, "head": 0, "gamma": 0.5}
    assert selector_options("perron", layer=None, head="mean") == {"head": "mean"}
    with pytest.raises(ValueError, match="--layer does not apply to method 'rollout'"):
        selector_options("rollout", layer=0)
    assert selector_options("rollout", layer=0, head="max", strict=False) == {"head": "max"}
    assert parse_head("3") == 3 and parse_head("mean") == "mean"
    with pytest.raises(ValueError, match="head="):
        parse_head("first")


def test_batched_equals_unbatched(tiny_model):
    x = torch.randn(3, 1, 16, 16)
    for method in ("attention", "visits", "perron", "saliency"):
        batched = attribute_images(tiny_model, x, method).maps
        single = torch.cat([attribute_images(tiny_model, x[i : i + 1], method).maps for i in range(3)])
        assert_close(batched, single, atol=1e-5, rtol=1e-4)


def test_pool_to_patches_sums_each_patch():
    attr = torch.arange(2 * 1 * 4 * 4, dtype=torch.float32).reshape(2, 1, 4, 4)
    pooled = pool_to_patches(attr, 2)
    assert pooled[0, 0, 0] == 0 + 1 + 4 + 5 and pooled.shape == (2, 2, 2)
