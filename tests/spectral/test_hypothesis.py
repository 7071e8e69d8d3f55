"""Property tests (hypothesis) of the operators and spectral routines: finite or refused.

Random shapes and scales, all-zero and anti-aligned q/k, float64/float32/bfloat16/float16. The
properties: finite outputs, ``Â ≥ 0`` with ``‖Â‖_F ≤ 1``, softmax rows summing to 1, Linear-InfSA's
``a`` non-negative with sum at most 1 (0 when every score is 0), visits finite and non-negative whenever ``γ`` respects the stated
margin, and Perron vectors non-negative and normalised where they exist, refused where not.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infsa_viz.model import infsa_affinity, linear_infsa_weights, softmax_matrix
from infsa_viz.spectral import expected_visits, gamma_margin, perron_vector

DTYPES = [torch.float64, torch.float32, torch.bfloat16, torch.float16]
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,  # the same examples in every run
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def qk(draw):
    """q, k of shape (B, N, D) with a random scale, sometimes all zero or anti-aligned (k = −q)."""
    b, n, d = draw(st.integers(1, 3)), draw(st.integers(1, 12)), draw(st.integers(1, 8))
    dtype = draw(st.sampled_from(DTYPES))
    top = 4.0 if dtype == torch.float16 else 6.0  # float16 holds at most 65504
    scale = 10.0 ** draw(st.floats(-3, top))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    q = torch.randn(b, n, d, generator=gen, dtype=torch.float64) * scale
    kind = draw(st.sampled_from(["random", "zero", "anti"]))
    k = {"random": torch.randn(b, n, d, generator=gen, dtype=torch.float64) * scale, "zero": torch.zeros_like(q),
         "anti": -q}[kind]
    return q.to(dtype), k.to(dtype)


def _tol(dtype: torch.dtype) -> float:
    return {torch.float64: 1e-12, torch.float32: 1e-5}.get(dtype, 1e-2)


@SETTINGS
@given(qk())
def test_infsa_affinity_is_finite_nonnegative_and_frobenius_bounded(pair):
    q, k = pair
    A = infsa_affinity(q, k)
    assert A.dtype == q.dtype and torch.isfinite(A).all() and (A >= 0).all()
    norm = torch.linalg.vector_norm(A.double(), dim=(-2, -1))
    assert (norm <= 1 + _tol(q.dtype)).all()


@SETTINGS
@given(qk())
def test_softmax_rows_are_distributions(pair):
    q, k = pair
    P = softmax_matrix(q, k).double()
    assert torch.isfinite(P).all() and (P >= 0).all()
    torch.testing.assert_close(P.sum(-1), torch.ones(P.shape[:-1], dtype=torch.float64), atol=_tol(q.dtype) * 10,
                               rtol=0)


@SETTINGS
@given(qk())
def test_linear_estimate_is_non_negative_with_sum_at_most_one(pair):
    q, k = pair
    alpha, q_bar, a = (t.double() for t in linear_infsa_weights(q, k))
    assert torch.isfinite(alpha).all() and torch.isfinite(q_bar).all() and torch.isfinite(a).all()
    assert (a >= 0).all()
    total = a.sum(-1)  # Σ ReLU(q̄·k) / (Σ ReLU(q̄·k) + ε): 1 up to ε, 0 when every score is 0
    assert ((total >= 0) & (total <= 1 + 10 * _tol(q.dtype))).all()


@SETTINGS
@given(qk(), st.floats(0.0, 1.0))
def test_visits_are_finite_within_the_margin(pair, fraction):
    q, k = pair
    A = infsa_affinity(q.double(), k.double())  # ρ(Â) ≤ ‖Â‖_F ≤ 1
    gamma = fraction * (1 - gamma_margin(torch.float64))
    visits = expected_visits(A, gamma).visits
    assert torch.isfinite(visits).all() and (visits >= -1e-12).all()


@SETTINGS
@given(qk(), st.sampled_from(["sum", "l2"]), st.sampled_from(["dense", "power"]))
def test_perron_vectors_exist_or_are_refused(pair, normalize, method):
    q, k = pair
    A = infsa_affinity(q.double(), k.double())
    support = (A > 0).double()  # ρ(A) = 0 exactly when A^N = 0 (zero or nilpotent: an acyclic graph)
    nilpotent = (torch.linalg.matrix_power(support, A.shape[-1]) == 0).flatten(1).all(-1)
    if nilpotent.any():
        with pytest.raises(ValueError, match="no Perron vector exists"):
            perron_vector(A, normalize=normalize, method=method, max_iter=200)
        return
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # power iteration on periodic graphs
        x = perron_vector(A, normalize=normalize, method=method, max_iter=200).vector
    assert torch.isfinite(x).all() and (x >= -1e-9).all()
    norm = x.sum(-1) if normalize == "sum" else torch.linalg.vector_norm(x, dim=-1)
    torch.testing.assert_close(norm, torch.ones_like(norm), atol=1e-9, rtol=0)
