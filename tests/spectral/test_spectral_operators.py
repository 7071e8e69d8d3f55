"""Tiled (matrix-free) token-graph operators against the paper's formulas written out densely."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from infsa_viz.spectral import (
    InfSAOperator,
    SoftmaxOperator,
    expected_visits,
    perron_vector,
)

F64 = torch.float64


def naive_infsa(q: torch.Tensor, k: torch.Tensor, eps: float) -> torch.Tensor:
    """Â = ReLU(q kᵀ) / (‖ReLU(q kᵀ)‖_F + ε), one (N, N) matrix per batch element."""
    s = (q @ k.transpose(-2, -1)).clamp_min(0)
    return s / (s.square().sum((-2, -1), keepdim=True).sqrt() + eps)


def naive_softmax(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """P_ij = exp(q_i·k_j/√D) / Σ_l exp(q_i·k_l/√D)."""
    logits = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    e = (logits - logits.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


@pytest.fixture
def qk() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return torch.randn(2, 3, 29, 5, dtype=F64, generator=gen), torch.randn(2, 3, 29, 5, dtype=F64, generator=gen)


@pytest.mark.parametrize("tiles", [(7, 6), (29, 4), (1, 29), (None, None)])
def test_tiled_products_equal_the_dense_formulas(qk, tiles):
    q, k = qk
    rows, cols = tiles
    x = torch.randn(2, 3, 29, dtype=F64, generator=torch.Generator().manual_seed(1))
    for op, M in [(InfSAOperator(q, k, eps=1e-6, block_size=rows, key_block_size=cols), naive_infsa(q, k, 1e-6)),
                  (SoftmaxOperator(q, k, block_size=rows, key_block_size=cols), naive_softmax(q, k))]:
        assert_close(op.matvec(x), (M @ x.unsqueeze(-1)).squeeze(-1), rtol=1e-10, atol=1e-12)
        assert_close(op.rmatvec(x), (x.unsqueeze(-2) @ M).squeeze(-2), rtol=1e-10, atol=1e-12)
        assert_close(op.dense(), M, rtol=1e-10, atol=1e-12)


def test_streamed_softmax_normaliser_is_stable_for_large_logits():
    q = 40.0 * torch.randn(1, 33, 4, dtype=F64, generator=torch.Generator().manual_seed(2))
    k = 40.0 * torch.randn(1, 33, 4, dtype=F64, generator=torch.Generator().manual_seed(3))
    op = SoftmaxOperator(q, k, block_size=5, key_block_size=4)
    assert_close(op.matvec(torch.ones(33, dtype=F64)), torch.ones(1, 33, dtype=F64))
    assert_close(op.dense(), naive_softmax(q, k), rtol=1e-9, atol=1e-12)


def test_matrix_free_visits_and_perron_equal_the_dense_solutions(qk):
    q, k = qk
    for op, gamma in [(InfSAOperator(q, k, block_size=7, key_block_size=6), 1.0),
                      (SoftmaxOperator(q, k, block_size=7, key_block_size=6), 0.8)]:
        free = expected_visits(op, gamma, "uniform", solver="gmres", tol=1e-12)
        dense = expected_visits(op.dense(), gamma, "uniform", solver="dense")
        assert_close(free.visits, dense.visits, rtol=1e-8, atol=1e-10)
        assert free.iterations > 0 and float(free.residual.max()) <= 1e-10
        power = perron_vector(op, method="power", tol=1e-12)
        exact = perron_vector(op.dense(), method="dense")
        assert_close(power.vector, exact.vector, rtol=1e-6, atol=1e-8)
        assert power.metadata()["iterations"] > 0 and power.metadata()["max_residual"] < 1e-8
