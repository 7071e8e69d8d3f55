"""Fundamental matrix, expected visits, absorption and the γ·ρ(A) < 1 check: analytic cases."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch
from torch.testing import assert_close

from infsa_viz.model import infsa_affinity, softmax_matrix
from infsa_viz.spectral import (
    DenseOperator,
    InfSAOperator,
    RankOneOperator,
    SoftmaxOperator,
    absorption_check,
    check_gamma,
    expected_visits,
    fundamental_matrix,
    gamma_margin,
    mean_over_heads,
    simulate_visits,
    spectral_radius,
)

F64 = torch.float64


def test_fundamental_matrix_of_a_general_2x2_matches_the_closed_form_inverse():
    a, b, c, d, g = 0.2, 0.5, 0.3, 0.1, 0.8
    A = torch.tensor([[a, b], [c, d]], dtype=F64)
    det = (1 - g * a) * (1 - g * d) - g * g * b * c
    expected = torch.tensor([[1 - g * d, g * b], [g * c, 1 - g * a]], dtype=F64) / det
    assert_close(fundamental_matrix(A, g), expected)
    assert_close(fundamental_matrix(A, g, include_start=False), expected - torch.eye(2, dtype=F64))


def test_fundamental_matrix_of_a_swap_is_the_geometric_series():
    swap = torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=F64)
    # Σ γᵗ Aᵗ: even powers on the diagonal, odd ones off it: 1/(1−γ²) and γ/(1−γ²).
    assert_close(fundamental_matrix(swap, 0.5), torch.tensor([[4 / 3, 2 / 3], [2 / 3, 4 / 3]], dtype=F64))


def test_block_diagonal_matrix_has_block_diagonal_fundamental_matrix():
    A1 = torch.tensor([[0.1, 0.4], [0.3, 0.2]], dtype=F64)
    A2 = torch.tensor([[0.6]], dtype=F64)
    A = torch.block_diag(A1, A2)
    N = fundamental_matrix(A, 0.9)
    assert_close(N[:2, :2], torch.linalg.inv(torch.eye(2, dtype=F64) - 0.9 * A1))
    assert_close(N[2, 2], torch.tensor(1 / (1 - 0.9 * 0.6), dtype=F64))
    assert torch.count_nonzero(N[:2, 2]) == 0 and torch.count_nonzero(N[2, :2]) == 0


def test_batched_fundamental_matrix_with_per_head_gamma_equals_the_loop():
    A = torch.rand(2, 3, 5, 5, dtype=F64) / 5
    gamma = torch.tensor([0.3, 0.6, 0.9], dtype=F64)  # (H,), broadcast over (B, H)
    N = fundamental_matrix(A, gamma)
    for b in range(2):
        for h in range(3):
            assert_close(N[b, h], fundamental_matrix(A[b, h], float(gamma[h])))


@pytest.mark.parametrize("gamma", [0.5, 0.6])
def test_gamma_times_spectral_radius_at_least_one_is_rejected(gamma):
    A = torch.tensor([[0.0, 2.0], [2.0, 0.0]], dtype=F64)  # ρ = 2
    with pytest.raises(ValueError, match="gamma"):
        fundamental_matrix(A, gamma)
    with pytest.raises(ValueError, match="gamma"):
        expected_visits(A, gamma)
    fundamental_matrix(A, 0.49)  # γρ = 0.98 < 1 although ‖A‖ bounds do not show it


def test_exact_radius_of_softmax_and_rank_one_decides_the_check():
    q, k = torch.randn(2, 6, 4, dtype=F64), torch.randn(2, 6, 4, dtype=F64)
    with pytest.raises(ValueError, match="spectral radius"):
        check_gamma(SoftmaxOperator(q, k), 1.0)
    check_gamma(SoftmaxOperator(q, k), 0.99)
    a = torch.softmax(torch.randn(6, dtype=F64), 0)
    with pytest.raises(ValueError, match="spectral radius"):
        check_gamma(RankOneOperator(a), 1.0)
    check_gamma(RankOneOperator(a), 0.999)


def test_invalid_gamma_values_and_shapes_are_rejected():
    A = torch.rand(2, 3, 4, 4, dtype=F64) / 4
    for bad in (-0.1, float("nan"), True, "0.5"):
        with pytest.raises(ValueError, match="gamma"):
            check_gamma(A, bad)
    with pytest.raises(ValueError, match="shape"):
        check_gamma(A, torch.full((4,), 0.5))


def test_collatz_wielandt_path_agrees_with_the_dense_spectral_radius():
    q, k = torch.randn(40, 4, dtype=F64), torch.randn(40, 4, dtype=F64)
    op = InfSAOperator(q, k)  # no closed-form radius: the check uses Collatz–Wielandt bounds
    rho = float(spectral_radius(op.dense(), method="eig"))
    assert rho < 1  # ‖Â‖_F ≤ 1
    check_gamma(op, 1.0)  # passes by the Frobenius bound
    check_gamma(op, 0.95 / rho)
    with pytest.raises(ValueError, match="gamma"):
        check_gamma(op, 1.05 / rho)
    assert_close(spectral_radius(op, method="bounds"), torch.tensor(rho, dtype=F64), rtol=1e-6, atol=0)
    # A dense matrix too large for the exact path (exact_limit=0) uses the same bounds.
    stochastic = torch.softmax(torch.randn(6, 6, dtype=F64), -1)
    big = DenseOperator(2 * stochastic, exact_limit=0)  # ρ = 2 exactly
    check_gamma(big, 0.45)
    with pytest.raises(ValueError, match="is over 1 - "):
        check_gamma(big, 0.5)


def test_visits_are_the_start_row_of_the_fundamental_matrix():
    A = torch.rand(3, 6, 6, dtype=F64) / 6
    N = fundamental_matrix(A, 0.7)
    assert_close(expected_visits(A, 0.7, "cls").visits, N[:, 0])
    assert_close(expected_visits(A, 0.7, 4).visits, N[:, 4])
    assert_close(expected_visits(A, 0.7, "uniform").visits, N.mean(1))
    s = torch.tensor([0.5, 0.0, 0.25, 0.25, 0.0, 0.0], dtype=F64)
    result = expected_visits(A, 0.7, s, include_start=False)
    assert_close(result.visits, (s @ N) - s)
    assert result.solver == "dense" and float(result.residual.max()) < 1e-12
    with pytest.raises(ValueError, match="start"):
        expected_visits(A, 0.7, 6)


def test_katz_centrality_is_visits_from_all_ones():
    """networkx Katz (β = 1, unnormalised) is (I − αAᵀ)⁻¹ 1 = 1ᵀ(I − αA)⁻¹, i.e. in-edge visits."""
    rng = np.random.default_rng(0)
    A = rng.random((7, 7)) * (rng.random((7, 7)) < 0.5)
    alpha = 0.9 / float(np.abs(np.linalg.eigvals(A)).max())
    katz = nx.katz_centrality_numpy(nx.from_numpy_array(A, create_using=nx.DiGraph), alpha=alpha,
                                    beta=1.0, normalized=False, weight="weight")
    katz = torch.tensor([katz[i] for i in range(7)], dtype=F64)
    ones = torch.ones(7, dtype=F64)
    assert_close(expected_visits(torch.from_numpy(A), alpha, ones).visits, katz)
    assert_close(expected_visits(torch.from_numpy(A), alpha, ones, include_start=False).visits, katz - 1)


@pytest.mark.parametrize("solver", ["neumann", "gmres"])
def test_matrix_free_infsa_visits_equal_the_dense_solve(solver):
    q, k = torch.randn(2, 2, 300, 8, dtype=F64), torch.randn(2, 2, 300, 8, dtype=F64)
    op = InfSAOperator(q, k, block_size=37)  # several uneven blocks
    gamma = torch.tensor([0.9, 1.0], dtype=F64)
    iterative = expected_visits(op, gamma, "uniform", solver=solver, tol=1e-12)
    dense = expected_visits(op.dense(), gamma, "uniform", solver="dense")
    assert_close(iterative.visits, dense.visits, rtol=0, atol=1e-6)
    assert iterative.iterations > 0 and float(iterative.residual.max()) < 1e-10
    assert_close(op.dense(), infsa_affinity(q, k).double(), rtol=1e-5, atol=1e-7)


def test_operators_match_their_dense_matrices():
    q, k = torch.randn(2, 3, 20, 4, dtype=F64), torch.randn(2, 3, 20, 4, dtype=F64)
    a = torch.softmax(torch.randn(2, 3, 20, dtype=F64), -1)
    x = torch.randn(2, 3, 20, dtype=F64)
    cases = [
        (SoftmaxOperator(q, k, block_size=7), softmax_matrix(q, k)),
        (InfSAOperator(q, k, block_size=7), infsa_affinity(q, k).double()),
        (RankOneOperator(a), a.unsqueeze(-2).expand(2, 3, 20, 20)),
    ]
    for op, M in cases:
        assert_close(op.matvec(x), (M @ x.unsqueeze(-1)).squeeze(-1), rtol=1e-5, atol=1e-8)
        assert_close(op.rmatvec(x), (x.unsqueeze(-2) @ M).squeeze(-2), rtol=1e-5, atol=1e-8)
        assert_close(op.row_sums(), M.sum(-1), rtol=1e-5, atol=1e-8)
        fused = mean_over_heads(op)
        assert fused.batch_shape == (2,)
        assert_close(fused.dense(), M.mean(1), rtol=1e-5, atol=1e-8)
        expected = (x[:, 0].unsqueeze(-2) @ M.mean(1)).squeeze(-2)
        assert_close(fused.rmatvec(x[:, 0]), expected, rtol=1e-5, atol=1e-8)
        assert_close(expected_visits(fused, 0.5, "cls", solver="neumann", tol=1e-12).visits,
                     expected_visits(M.mean(1), 0.5, "cls").visits)


def test_absorption_check_reports_rows_with_row_sum_above_one_over_gamma():
    A = torch.tensor([[0.5, 0.5], [1.0, 0.6]], dtype=F64)
    result = absorption_check(A, 0.8)
    assert_close(result.absorption, torch.tensor([0.2, 1 - 0.8 * 1.6], dtype=F64))
    assert float(result.valid_share) == 0.5 and not result.all_valid


def test_frobenius_normalisation_does_not_make_infsa_sub_stochastic():
    """One active row of N ones: ‖·‖_F = √N, so that row of Â sums to √N."""
    n = 16
    q = torch.cat([torch.ones(1, 1), -torch.ones(n - 1, 1)]).to(F64)
    k = torch.ones(n, 1, dtype=F64)
    result = absorption_check(InfSAOperator(q, k, eps=0.0), 0.5)
    assert_close(result.absorption[0], torch.tensor(1 - 0.5 * 4.0, dtype=F64))
    assert float(result.valid_share) == pytest.approx((n - 1) / n)


@pytest.mark.parametrize("include_start", [True, False])
def test_monte_carlo_visits_match_the_fundamental_matrix(include_start):
    generator = torch.Generator().manual_seed(1)
    A = torch.rand(5, 5, generator=generator, dtype=F64)
    A = A / A.sum(-1, keepdim=True)  # row-stochastic, so γA absorbs with probability 1 − γ
    gamma = 0.8
    exact = expected_visits(A, gamma, "uniform", include_start=include_start).visits
    mc = simulate_visits(A, gamma, start="uniform", n_walks=20_000, seed=0, include_start=include_start)
    z = (mc.visits - exact).abs() / mc.stderr
    assert float(z.max()) < 4.5, z
    assert mc.mean_length == pytest.approx(gamma / (1 - gamma), rel=0.05)


def test_monte_carlo_refuses_a_matrix_that_is_not_sub_stochastic():
    A = torch.tensor([[0.5, 0.9], [0.1, 0.1]], dtype=F64)
    with pytest.raises(ValueError, match="sub-stochastic"):
        simulate_visits(A, 0.9)


@pytest.mark.parametrize("dtype,accepted", [(torch.float32, False), (torch.float64, True)])
def test_gamma_inside_the_numerical_margin_is_refused(dtype, accepted):
    # γ·ρ(A) = 1 − 1e-5: far enough from 1 in float64 (margin 1.5e-8), singular to float32 rounding (3.5e-4).
    A = torch.full((6, 6), 1 / 6, dtype=dtype)  # row-stochastic, ρ = 1
    gamma = 1 - 1e-5
    if accepted:
        visits = expected_visits(A, gamma).visits
        assert torch.isfinite(visits).all() and float(visits.sum()) == pytest.approx(1 / (1 - gamma), rel=1e-6)
    else:
        with pytest.raises(ValueError, match=r"needs gamma·ρ\(A\) <= 1 - 0.00035"):
            expected_visits(A, gamma)
    assert gamma_margin(dtype) == pytest.approx(torch.finfo(dtype).eps ** 0.5)
