"""One-call model maps on tiny models of every variant, checked against the dense formulas."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from infsa_viz.capture import capture_attention
from infsa_viz.spectral import (
    fundamental_matrix,
    model_linear_estimate,
    model_neumann,
    model_perron,
    model_rollout,
    model_visits,
    neumann_across_layers,
    perron_vector,
    rollout,
)
from infsa_viz.vit import VisionTransformer, ViTConfig


def _model(variant: str, **changes) -> VisionTransformer:
    config = dict(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2, attention=variant)
    config.update(changes)
    return VisionTransformer(ViTConfig(**config)).eval()


@pytest.fixture
def images() -> torch.Tensor:
    return torch.randn(2, 1, 16, 16)


def _gamma(variant: str) -> float | None:
    return 0.5 if variant == "softmax" else None


def test_model_visits_equal_the_cls_row_of_the_dense_fundamental_matrix(variant, images):
    model = _model(variant)
    result = model_visits(model, images, gamma=_gamma(variant))
    record = capture_attention(model, images)[1][-1]
    A = record.attention_matrix().double().mean(1)  # (B, N, N) head mean of the native matrix
    gamma = 0.5 if variant == "softmax" else float(record.rho.mean())
    expected = fundamental_matrix(A, gamma)[:, 0]  # CLS row
    assert result.map.shape == (2, 4, 4) and result.tokens.shape == (2, 17)
    assert_close(result.tokens.double(), expected, rtol=1e-4, atol=1e-6)
    assert_close(result.map.reshape(2, 16), result.tokens[:, 1:])
    meta = result.metadata
    assert meta["side"].startswith("left") and meta["start"] == "cls" and meta["prefix_tokens_dropped"] == 1
    assert meta["gamma"] == pytest.approx(gamma) and meta["variant"] == variant
    assert meta["gamma_source"] == ("user" if variant == "softmax" else "learned rho")


def test_model_perron_is_the_head_mean_graph_perron_vector(variant, images):
    model = _model(variant)
    result = model_perron(model, images, layer=0)
    record = capture_attention(model, images)[1][0]
    if variant == "linear_infsa":
        # Left Perron vector of 1·āᵀ is ā exactly (ā = head mean of a; Σā = 1 − O(ε)).
        a_bar = record.linear_estimate().mean(1)
        assert_close(result.tokens, a_bar / a_bar.sum(-1, keepdim=True))
    else:
        expected = perron_vector(record.attention_matrix().double().mean(1)).vector
        assert_close(result.tokens.double(), expected, rtol=1e-4, atol=1e-6)
    assert_close(result.tokens.sum(-1), torch.ones(2, dtype=result.tokens.dtype), rtol=1e-5, atol=1e-6)


def test_model_linear_estimate_and_rollout(variant, images):
    model = _model(variant)
    records = capture_attention(model, images)[1]
    estimate = model_linear_estimate(model, images, layer=1, head=0)
    assert_close(estimate.tokens, records[1].linear_estimate()[:, 0])
    rolled = model_rollout(model, images)
    assert_close(rolled.tokens.double(), rollout(records).double()[:, 0], rtol=1e-5, atol=1e-7)
    assert_close(rolled.tokens.sum(-1).double(), torch.ones(2, dtype=torch.float64), rtol=1e-5, atol=1e-6)


def test_model_neumann_matches_the_dense_series(variant, images):
    model = _model(variant)
    result = model_neumann(model, images, gamma=_gamma(variant))
    records = capture_attention(model, images)[1]
    mats = [r.attention_matrix().double().mean(1) for r in records]
    gammas = [0.5] * 2 if variant == "softmax" else [float(r.rho.mean()) for r in records]
    expected = neumann_across_layers(mats, gammas, "cls").vector
    assert_close(result.tokens.double(), expected, rtol=1e-4, atol=1e-6)
    assert result.map.shape == (2, 4, 4)


def test_softmax_layers_need_a_user_gamma(images):
    model = _model("softmax")
    with pytest.raises(ValueError, match="gamma"):
        model_visits(model, images)
    with pytest.raises(ValueError, match="gamma"):
        model_neumann(model, images)
    with pytest.raises(ValueError, match="spectral radius"):
        model_visits(model, images, gamma=1.0)


def test_mean_pool_model_reads_the_uniform_row_and_keeps_all_tokens(images):
    model = _model("pure_infsa", pool="mean")
    result = model_visits(model, images, head=1, matrix="infsa")
    assert result.metadata["start"] == "uniform" and result.metadata["prefix_tokens_dropped"] == 0
    assert result.map.shape == (2, 4, 4) and result.tokens.shape == (2, 16)
    with pytest.raises(ValueError, match="CLS"):
        model_visits(model, images, start="cls")
    with pytest.raises(ValueError, match="head"):
        model_perron(model, images, head=2)
    with pytest.raises(ValueError, match="layer"):
        model_perron(model, images, layer=5)
