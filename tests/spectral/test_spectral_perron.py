"""Perron vectors, spectra and the Linear-InfSA estimate: analytic and networkx cross-checks."""

from __future__ import annotations

import warnings

import networkx as nx
import numpy as np
import pytest
import torch
from torch.testing import assert_close

from infsa_viz.model import linear_infsa_weights
from infsa_viz.spectral import (
    InfSAOperator,
    RankOneOperator,
    SoftmaxOperator,
    eigenvalue_spectrum,
    gaussian_baseline,
    linear_perron_estimate,
    perron_cosines,
    perron_vector,
    spectral_radius,
)

F64 = torch.float64


@pytest.mark.parametrize("method", ["dense", "power"])
def test_non_symmetric_2x2_has_known_left_and_right_perron_vectors(method):
    A = torch.tensor([[0.0, 1.0], [2.0, 1.0]], dtype=F64)  # eigenvalues 2 and −1
    left = perron_vector(A, side="left", method=method, tol=1e-13)
    right = perron_vector(A, side="right", method=method, tol=1e-13)
    assert_close(left.vector, torch.tensor([0.5, 0.5], dtype=F64))  # yᵀA = 2yᵀ
    assert_close(right.vector, torch.tensor([1 / 3, 2 / 3], dtype=F64))  # Ax = 2x
    assert_close(left.eigenvalue, torch.tensor(2.0, dtype=F64))
    assert left.side == "left" and left.method == method and float(left.residual) < 1e-10


def test_block_diagonal_perron_vector_lives_on_the_dominant_block():
    A = torch.block_diag(torch.tensor([[3.0]]), torch.ones(2, 2)).to(F64)  # roots 3 and 2
    result = perron_vector(A, normalize="l2")
    assert_close(result.vector, torch.tensor([1.0, 0.0, 0.0], dtype=F64))
    assert_close(result.eigenvalue, torch.tensor(3.0, dtype=F64))


def test_left_perron_vector_is_networkx_eigenvector_centrality():
    """networkx sums over in-edges: x_j ∝ Σ_i A_ij x_i, i.e. xᵀA = λxᵀ, normalised to unit L2."""
    rng = np.random.default_rng(3)
    cycle = np.roll(np.eye(8), 1, axis=1)  # makes the graph strongly connected
    A = rng.random((8, 8)) * (rng.random((8, 8)) < 0.6) + cycle
    graph = nx.from_numpy_array(A, create_using=nx.DiGraph)
    centrality = nx.eigenvector_centrality_numpy(graph, weight="weight")
    expected = torch.tensor([centrality[i] for i in range(8)], dtype=F64)
    for method in ("dense", "power"):
        got = perron_vector(torch.from_numpy(A), side="left", normalize="l2", method=method, tol=1e-14)
        assert_close(got.vector, expected, rtol=1e-6, atol=1e-8)


def test_rank_one_operator_has_left_perron_vector_a_and_right_perron_vector_one():
    a = torch.softmax(torch.randn(2, 3, 12, dtype=F64), -1)
    op = RankOneOperator(a)
    for method in ("auto", "dense", "power"):
        left = perron_vector(op, side="left", method=method)
        assert_close(left.vector, a)
        assert_close(left.eigenvalue, torch.ones(2, 3, dtype=F64))
    assert perron_vector(op).method == "rank_one"
    assert_close(perron_vector(op, side="right").vector, torch.full((2, 3, 12), 1 / 12, dtype=F64))


def test_left_perron_vector_of_softmax_is_its_stationary_distribution():
    q, k = torch.randn(4, 10, 3, dtype=F64), torch.randn(4, 10, 3, dtype=F64)
    P = SoftmaxOperator(q, k)
    pi = perron_vector(P, side="left").vector  # (4, 10)
    assert_close(P.rmatvec(pi), pi)
    assert_close(pi.sum(-1), torch.ones(4, dtype=F64))
    assert bool((pi >= 0).all())


def test_batched_perron_equals_unbatched_and_power_matches_dense():
    q, k = torch.randn(2, 2, 30, 5, dtype=F64), torch.randn(2, 2, 30, 5, dtype=F64)
    op = InfSAOperator(q, k, block_size=8)
    batched = perron_vector(op, method="dense")
    power = perron_vector(op, method="power", tol=1e-13)
    assert_close(power.vector, batched.vector, rtol=1e-7, atol=1e-9)
    for b in range(2):
        for h in range(2):
            single = perron_vector(InfSAOperator(q[b, h], k[b, h]), method="dense")
            assert_close(single.vector, batched.vector[b, h])
            assert_close(single.eigenvalue, batched.eigenvalue[b, h])
    assert_close(batched.eigenvalue, spectral_radius(op.dense(), method="eig"))


def test_eigenvalue_spectrum_is_sorted_by_modulus():
    A = torch.diag(torch.tensor([1.0, -3.0, 2.0], dtype=F64))
    assert_close(eigenvalue_spectrum(A), torch.tensor([-3.0, 2.0, 1.0], dtype=torch.complex128))
    rotation = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=F64)
    assert_close(eigenvalue_spectrum(rotation).abs(), torch.ones(2, dtype=F64))
    with pytest.raises(ValueError, match="dense_limit"):
        eigenvalue_spectrum(A, dense_limit=2)


def test_linear_perron_estimate_is_exactly_the_layer_vector():
    q, k = torch.randn(2, 4, 9, 6), torch.randn(2, 4, 9, 6)
    assert torch.equal(linear_perron_estimate(q, k), linear_infsa_weights(q, k)[2])


def test_estimate_is_exact_when_all_queries_share_one_direction():
    """q_i = c_i·q₀ (c_i > 0): every row of ReLU(qkᵀ) ∝ ReLU(q₀·k), so Â = u·rᵀ and a = r/Σr."""
    q0, k = torch.randn(1, 8, dtype=F64), torch.randn(20, 8, dtype=F64)
    q = torch.rand(20, 1, dtype=F64).add(0.5) * q0
    cos = perron_cosines(q, k)
    assert float(cos["left"]) == pytest.approx(1.0, abs=1e-6)


def test_gaussian_queries_and_keys_give_a_partial_match():
    """The issue quotes ≈ 0.63 for random q, k; we measure ≈ 0.68 at N = 64, D = 16 (256 draws)."""
    baseline = gaussian_baseline(64, 16, samples=64, seed=0)
    assert 0.5 < baseline["left"]["mean"] < 0.8
    assert baseline["left"]["count"] == 64


def test_perron_vector_refuses_negative_matrices_and_bad_options():
    with pytest.raises(ValueError, match="negative"):
        perron_vector(torch.tensor([[1.0, -1.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="side"):
        perron_vector(torch.eye(2), side="up")
    with pytest.raises(ValueError, match="normalize"):
        perron_vector(torch.eye(2), normalize="max")


def test_eigenvalue_spectrum_of_an_exactly_rank_one_operator():
    """1·aᵀ has eigenvalues Σa (once) and 0 (N−1 times); torch's eigvals used to raise here."""
    import torch

    from infsa_viz.spectral import RankOneOperator, eigenvalue_spectrum

    a = torch.tensor([[0.5, 0.25, 0.25, 0.0]], dtype=torch.float64)
    values = eigenvalue_spectrum(RankOneOperator(a))
    assert abs(complex(values[0, 0]) - 1.0) < 1e-12
    assert float(values[0, 1:].abs().max()) < 1e-12


def test_float32_power_iteration_stops_at_the_rounding_floor_instead_of_running_max_iter():
    # A positive row-stochastic float32 matrix mixes in a few steps, but a float32 iterate's L1
    # change stalls near 1e-9: tol=1e-10 used to run every one of max_iter iterations.
    gen = torch.Generator().manual_seed(0)
    A = torch.rand(768, 768, generator=gen, dtype=F64) + 0.1
    A = A / A.sum(-1, keepdim=True)
    expected = perron_vector(A, method="dense").vector
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = perron_vector(A.float(), method="power", tol=1e-10, max_iter=10_000)
    assert got.tol == pytest.approx(4 * torch.finfo(torch.float32).eps)
    assert got.iterations < 50
    assert_close(got.vector.double(), expected, rtol=1e-4, atol=1e-7)
    assert perron_vector(A, method="power", tol=1e-12).tol == 1e-12  # float64 keeps the tolerance asked for


@pytest.mark.parametrize("method", ["dense", "power", "auto"])
def test_all_zero_matrix_has_no_perron_vector(method):
    A = torch.rand(3, 5, 5)
    A[1] = 0
    with pytest.raises(ValueError, match=r"all zero at batch index \[\(1,\)\].*no Perron vector exists"):
        perron_vector(A, method=method)


def test_empty_and_non_finite_inputs_are_refused():
    with pytest.raises(ValueError, match="no tokens"):
        perron_vector(torch.zeros(2, 0, 0))
    A = torch.rand(4, 4)
    A[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN or Inf entries"):
        perron_vector(A)


@pytest.mark.parametrize("method", ["dense", "power"])
def test_nilpotent_matrix_has_no_perron_vector(method):
    A = torch.triu(torch.rand(2, 4, 4), diagonal=1)  # strictly upper triangular: acyclic graph, ρ = 0
    with pytest.raises(ValueError, match=r"nilpotent at batch index \[\(0,\), \(1,\)\].*no Perron vector exists"):
        perron_vector(A, method=method)
    A[1, 3, 0] = 0.5  # a cycle 0 → … → 3 → 0 in the second matrix only
    with pytest.raises(ValueError, match=r"nilpotent at batch index \[\(0,\)\]"):
        perron_vector(A, method=method)
