"""The Neumann series across layers: explicit dense sums and matrix-free operators."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from infsa_viz.spectral import (
    DenseOperator,
    InfSAOperator,
    RankOneOperator,
    neumann_across_layers,
)

F64 = torch.float64


def _dense_series(mats: list[torch.Tensor], gammas: list[float], s: torch.Tensor) -> torch.Tensor:
    """Σ_t (γ₁⋯γ_t) sᵀ A⁽ᵗ⁾⋯A⁽¹⁾ written out naively."""
    total = torch.zeros_like(s)
    for t in range(1, len(mats) + 1):
        product = mats[0]
        for layer in range(1, t):
            product = mats[layer] @ product  # A⁽ˡ⁺¹⁾ on the left
        coefficient = torch.prod(torch.tensor(gammas[:t], dtype=F64))
        total = total + coefficient * (s.unsqueeze(-2) @ product).squeeze(-2)
    return total


def test_neumann_across_layers_equals_the_explicit_dense_sum():
    mats = [torch.rand(2, 6, 6, dtype=F64) for _ in range(3)]
    gammas = [0.5, 0.7, 0.9]
    s = torch.zeros(2, 6, dtype=F64)
    s[:, 0] = 1
    result = neumann_across_layers(mats, gammas, "cls")
    assert_close(result.vector, _dense_series(mats, gammas, s))
    constant = neumann_across_layers(mats, 0.6, "uniform", include_start=True)
    uniform = torch.full((2, 6), 1 / 6, dtype=F64)
    assert_close(constant.vector, uniform + _dense_series(mats, [0.6] * 3, uniform))
    assert result.metadata()["gamma"] == gammas


def test_neumann_with_rank_one_and_infsa_operators_matches_their_dense_matrices():
    a = [torch.softmax(torch.randn(3, 10, dtype=F64), -1) for _ in range(2)]
    q, k = torch.randn(3, 10, 4, dtype=F64), torch.randn(3, 10, 4, dtype=F64)
    ops = [RankOneOperator(a[0]), InfSAOperator(q, k, block_size=3), RankOneOperator(a[1])]
    dense = [op.dense() for op in ops]
    gammas = [0.5, torch.tensor([0.2, 0.4, 0.8], dtype=F64), 0.9]  # per-batch γ in layer 2
    assert_close(neumann_across_layers(ops, gammas, 4).vector,
                 neumann_across_layers([DenseOperator(m) for m in dense], gammas, 4).vector)
    # One rank-one layer: sᵀ γ 1 aᵀ = γ (s·1) a.
    assert_close(neumann_across_layers(ops[:1], 0.5, "cls").vector, 0.5 * a[0])


def test_neumann_batched_equals_unbatched_and_validates_layers():
    mats = [torch.rand(3, 5, 5, dtype=F64) for _ in range(2)]
    batched = neumann_across_layers(mats, 0.8, "cls").vector
    for b in range(3):
        assert_close(neumann_across_layers([m[b] for m in mats], 0.8, "cls").vector, batched[b])
    with pytest.raises(ValueError, match="gammas"):
        neumann_across_layers(mats, [0.5], "cls")
    with pytest.raises(ValueError, match="layer 1"):
        neumann_across_layers([mats[0], mats[1][:2]], 0.5, "cls")
