"""Spectral map methods on tiny models of every variant, checked against the dense formulas."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from infsa_viz.maps import UNLEARNED_GAMMA, attribute_images, rollout
from infsa_viz.model import VisionTransformer, ViTConfig, capture_attention
from infsa_viz.spectral import fundamental_matrix, neumann_across_layers, perron_vector, spectral_radius


def _model(variant: str, **changes) -> VisionTransformer:
    config = dict(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2, attention=variant)
    config.update(changes)
    return VisionTransformer(ViTConfig(**config)).eval()


@pytest.fixture
def images() -> torch.Tensor:
    return torch.randn(2, 1, 16, 16)


def _discount(record) -> float:
    return UNLEARNED_GAMMA if record.rho is None else float(record.rho.mean())


def test_visits_equal_the_cls_row_of_the_dense_fundamental_matrix(variant, images):
    model = _model(variant)
    result = attribute_images(model, images, "visits")
    record = capture_attention(model, images)[1][-1]
    A = record.attention_matrix().double().mean(1)  # (B, N, N) head mean of the native matrix
    gamma = _discount(record)
    expected = fundamental_matrix(A, gamma)[:, 0]  # CLS row, over all 17 tokens
    assert result.maps.shape == (2, 4, 4)
    assert_close(result.maps.reshape(2, 16).double(), expected[:, 1:], rtol=1e-4, atol=1e-6)
    meta = result.metadata
    assert meta["side"].startswith("left") and meta["start"] == "cls" and meta["variant"] == variant
    assert meta["gamma"] == pytest.approx(gamma)
    assert meta["gamma_source"] == ("learned rho" if record.rho is not None else
                                    f"{UNLEARNED_GAMMA} (the layer learns no rho)")


def test_visits_carry_the_absorbing_chain_validity_of_their_graph(variant, images):
    """row_share and max_row_mass are γ·Σ_j A_ij of the graph the map used, row by row; at a γ just
    below 1/ρ(A) the rows with the largest mass break the reading, and the record says so."""
    model = _model(variant)
    record = capture_attention(model, images)[1][-1]
    A = record.attention_matrix().double().mean(1)  # (B, N, N)
    radius = float(spectral_radius(A).max())
    for gamma in (None, 0.99 / radius):
        result = attribute_images(model, images, "visits", gamma=gamma)
        g = _discount(record) if gamma is None else gamma
        mass = g * A.sum(-1)  # (B, N)
        validity = result.validity
        assert validity.layers == [record.layer]
        assert_close(validity.max_row_mass[:, 0].double(), mass.amax(-1), rtol=1e-5, atol=1e-6)
        assert_close(validity.row_share[:, 0].double(), (mass <= 1).double().mean(-1))
        assert validity.holds.tolist() == (mass <= 1).all(-1).tolist()
        heads = record.attention_matrix().double().sum(-1)  # (B, H, N) row sums of each head's own graph
        g_heads = torch.as_tensor(gamma if gamma is not None else (
            record.rho.double() if record.rho is not None else UNLEARNED_GAMMA)).double()
        head_mass = (g_heads.reshape(-1, 1) if g_heads.dim() else g_heads) * heads
        assert_close(validity.head_row_share[:, 0].double(), (head_mass <= 1).double().mean((-2, -1)))
        assert validity.for_image(0)["holds"] == bool((mass[0] <= 1).all())
    if variant == "pure_infsa":  # Frobenius normalisation does not bound row sums: rows break at this γ
        assert not bool(validity.holds.all())


def test_neumann_matches_the_dense_series_and_checks_every_layer(variant, images):
    model = _model(variant)
    result = attribute_images(model, images, "neumann")
    records = capture_attention(model, images)[1]
    mats = [r.attention_matrix().double().mean(1) for r in records]
    expected = neumann_across_layers(mats, [_discount(r) for r in records], "cls").vector
    assert_close(result.maps.reshape(2, 16).double(), expected[:, 1:], rtol=1e-4, atol=1e-6)
    assert result.validity.layers == [0, 1] and result.validity.row_share.shape == (2, 2)


def test_perron_is_the_head_mean_graph_perron_vector(variant, images):
    model = _model(variant)
    result = attribute_images(model, images, "perron", layer=0)
    record = capture_attention(model, images)[1][0]
    if variant == "linear_infsa":
        # Left Perron vector of 1·āᵀ is ā exactly (ā = head mean of a; Σā = 1 − O(ε)).
        a_bar = record.linear_estimate().mean(1)
        expected = a_bar / a_bar.sum(-1, keepdim=True)
    else:
        expected = perron_vector(record.attention_matrix().double().mean(1)).vector
    assert_close(result.maps.reshape(2, 16).double(), expected[:, 1:].double(), rtol=1e-4, atol=1e-6)
    assert result.validity is None


def test_linear_estimate_and_rollout(variant, images):
    model = _model(variant)
    records = capture_attention(model, images)[1]
    estimate = attribute_images(model, images, "linear_estimate", layer=1, head=0).maps
    assert_close(estimate.reshape(2, 16), records[1].linear_estimate()[:, 0, 1:].float())
    rolled = attribute_images(model, images, "rollout").maps
    assert_close(rolled.reshape(2, 16).double(), rollout(records).double()[:, 0, 1:], rtol=1e-5, atol=1e-7)


def test_a_gamma_beyond_the_spectral_radius_is_refused(images):
    with pytest.raises(ValueError, match="spectral radius"):
        attribute_images(_model("softmax"), images, "visits", gamma=1.0)


def test_mean_pool_model_reads_the_uniform_row(images):
    model = _model("pure_infsa", pool="mean")
    result = attribute_images(model, images, "visits", head=1, matrix="infsa")
    assert result.metadata["start"] == "uniform" and result.maps.shape == (2, 4, 4)
    with pytest.raises(ValueError, match="CLS"):
        attribute_images(model, images, "visits", start="cls")
    with pytest.raises(ValueError, match="head"):
        attribute_images(model, images, "perron", head=2)
    with pytest.raises(ValueError, match="layer"):
        attribute_images(model, images, "perron", layer=5)


@pytest.mark.parametrize("variant_name", ["pure_infsa", "softmax"])
def test_matrix_free_solvers_equal_the_dense_ones_and_report_convergence(variant_name, images):
    """Visits by GMRES and Perron by power iteration, on tiled products, against the dense solves."""
    model = _model(variant_name).double()
    images = images.double()
    for method, solver in (("visits", "gmres"), ("perron", "power")):
        dense = attribute_images(model, images, method, solver="dense")
        free = attribute_images(model, images, method, solver=solver, block_size=5)
        assert_close(free.maps, dense.maps, rtol=1e-6, atol=1e-9)
        meta = free.metadata
        assert meta.get("solver", meta.get("method")) == solver
        assert meta["iterations"] >= 1 and meta["max_residual"] <= 1e-6
        assert dense.metadata["iterations"] == 0
