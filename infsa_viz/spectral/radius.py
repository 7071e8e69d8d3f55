"""Spectral radius and the convergence check ``γ · ρ(A) < 1`` for ``(I − γA)⁻¹ = Σ_t γᵗ Aᵗ``.

How ``ρ(A)`` is obtained, cheapest first (:func:`check_gamma` stops as soon as it can decide):

1. an induced-norm bound ``ρ(A) ≤ ‖A‖`` from the operator (``‖Â‖_F < 1`` for InfSA, ``1`` for
   softmax, ``min(‖A‖_1, ‖A‖_∞, ‖A‖_F)`` for dense matrices): if ``γ·‖A‖ < 1`` the check passes;
2. the exact radius where it is known or cheap: ``1`` for row-stochastic matrices, ``|u·a|`` for
   rank-one ``u aᵀ``, ``max |eigvals(A)|`` (LAPACK, :mod:`infsa_viz.linalg`) for dense matrices with ``N ≤ 1024``;
3. for larger non-negative operators, Collatz–Wielandt bounds
   ``min_i (Ax)_i/x_i ≤ ρ(A) ≤ max_i (Ax)_i/x_i`` (valid for every ``x > 0``), tightened by
   power iteration on ``A + I`` (aperiodic, same Perron vector) until ``γ·upper < 1`` (accept)
   or ``γ·lower ≥ 1`` (reject). If neither is reached, the check refuses (``ValueError``).

Numerical margin: "``< 1``" means ``γ·ρ(A) ≤ 1 − margin`` with ``margin = √ε`` of the operator's
dtype (float32: 3.5e-4, float64: 1.5e-8, see :func:`gamma_margin`). Inside it ``I − γA`` is
singular to working precision (a matrix whose ``γ·ρ(A)`` is 1 up to float32 rounding gave visits
around 10⁷): refused, since the series' sum is then set by rounding, not by the graph.
"""

from __future__ import annotations

import warnings
from typing import Literal

import torch
from torch import Tensor

from ..linalg import eigvals
from ..model.operators import SpectralOperator, as_operator

__all__ = ["as_gamma", "check_gamma", "collatz_wielandt_bounds", "gamma_margin", "spectral_radius"]

GammaLike = float | Tensor


def as_gamma(
    gamma: GammaLike, batch_shape: torch.Size, *, dtype: torch.dtype, device: torch.device,
    name: str = "gamma",
) -> Tensor:
    """Validate ``γ`` (float, 0-d tensor or tensor broadcastable to ``batch_shape``, finite,
    ``≥ 0``) and return it broadcast to ``batch_shape``.

    A per-head ``γ`` of shape ``(H,)`` broadcasts over ``(B, H)`` by the usual trailing rule.
    """
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float, Tensor)):
        raise ValueError(
            f"{name}={gamma!r} must be a number or a tensor broadcastable to {tuple(batch_shape)}"
        )
    # Python floats go straight to ``dtype`` (as_tensor would round them to float32 first).
    g = gamma.detach().to(dtype=dtype, device=device) if isinstance(gamma, Tensor) else torch.tensor(
        float(gamma), dtype=dtype, device=device)
    if not torch.isfinite(g).all() or (g < 0).any():
        raise ValueError(f"{name}={gamma!r} must be finite and >= 0")
    try:
        return torch.broadcast_to(g, batch_shape)
    except RuntimeError:
        raise ValueError(
            f"{name} has shape {tuple(g.shape)}; expected a scalar or a shape broadcastable to "
            f"the batch shape {tuple(batch_shape)}"
        ) from None


def collatz_wielandt_bounds(
    A: SpectralOperator | Tensor, *, gamma: Tensor | None = None, tol: float = 1e-8,
    max_iter: int = 1000,
) -> tuple[Tensor, Tensor, int]:
    """Lower and upper bounds on the spectral radius of a non-negative operator.

    Power iteration on ``A + I`` from ``x = 1``; at each step
    ``min_i ((A+I)x)_i/x_i − 1 ≤ ρ(A) ≤ max_i ((A+I)x)_i/x_i − 1`` (Collatz–Wielandt), and the
    best bounds so far are kept. Stops when ``upper − lower ≤ tol · upper`` everywhere or, when
    ``gamma`` is given, as soon as every batch element is decided (``γ·upper < 1`` or
    ``γ·lower ≥ 1``).

    Args:
        A: non-negative operator or tensor ``(..., N, N)``.
        gamma: optional ``(*batch_shape)`` discount that decides early stopping.
        tol: relative gap between the bounds at which to stop.
        max_iter: most products with ``A``.

    Returns:
        ``(lower, upper, iterations)``; the bounds have shape ``batch_shape``.

    Raises:
        ValueError: if ``A`` has negative entries.
    """
    op = as_operator(A)
    if not op.nonnegative:
        raise ValueError("A has negative entries; Collatz–Wielandt bounds need a non-negative matrix")
    x = op.ones()  # (..., N) positive start
    lower = torch.zeros(op.batch_shape, dtype=op.dtype, device=op.device)
    upper = torch.full(op.batch_shape, float("inf"), dtype=op.dtype, device=op.device)
    iterations = 0
    for iterations in range(1, max_iter + 1):
        y = op.matvec(x) + x  # (A + I) x, stays positive
        ratio = y / x
        lower = torch.maximum(lower, ratio.amin(-1) - 1.0)
        upper = torch.minimum(upper, ratio.amax(-1) - 1.0)
        if gamma is not None:
            limit = 1 - gamma_margin(op.dtype)
            if ((gamma * upper <= limit) | (gamma * lower > limit)).all():
                break
        elif ((upper - lower) <= tol * upper.abs().clamp_min(torch.finfo(op.dtype).tiny)).all():
            break
        x = y / y.sum(-1, keepdim=True)
    return lower.clamp_min(0.0), upper, iterations


def spectral_radius(
    A: SpectralOperator | Tensor, *, method: Literal["auto", "eig", "bounds"] = "auto",
    tol: float = 1e-8, max_iter: int = 10_000,
) -> Tensor:
    """Spectral radius ``ρ(A) = max |λ|`` per batch element, shape ``batch_shape``.

    Args:
        A: tensor ``(..., N, N)`` or operator.
        method: ``"eig"`` (dense LAPACK eigenvalues, O(N³)), ``"bounds"`` (Collatz–Wielandt
            midpoint, non-negative operators only, matrix-free) or ``"auto"`` (closed form when
            the operator has one, else ``"eig"`` up to N = 1024, else ``"bounds"``).
        tol: relative gap between the Collatz–Wielandt bounds (``"bounds"`` only).
        max_iter: most products with ``A`` (``"bounds"`` only); a warning says if the gap is
            still above ``tol`` at the end.
    """
    if method not in ("auto", "eig", "bounds"):
        raise ValueError(f"method={method!r} must be one of ['auto', 'eig', 'bounds']")
    op = as_operator(A)
    if method == "auto":
        exact = op.exact_radius()
        if exact is not None:
            return exact
        method = "eig" if op.num_tokens <= 1024 else "bounds"
    if method == "eig":
        return eigvals(op.dense(), what=f"spectral radius of {op.description}").abs().amax(-1).to(op.dtype)
    lower, upper, _ = collatz_wielandt_bounds(op, tol=tol, max_iter=max_iter)
    if ((upper - lower) > tol * upper).any():
        warnings.warn(
            f"spectral_radius: Collatz–Wielandt gap {float((upper - lower).max()):.3g} still above "
            f"tol={tol} after max_iter={max_iter} iterations",
            RuntimeWarning, stacklevel=2,
        )
    return (lower + upper) / 2


def gamma_margin(dtype: torch.dtype) -> float:
    """The least ``1 − γ·ρ(A)`` :func:`check_gamma` accepts in ``dtype``: ``√ε`` (float32: 3.5e-4)."""
    return float(torch.finfo(dtype).eps) ** 0.5


def check_gamma(A: SpectralOperator | Tensor, gamma: GammaLike, *, max_iter: int = 1000) -> Tensor:
    """Check ``γ · ρ(A) ≤ 1 − margin`` for every batch element (see the module docstring for how
    and for the margin, :func:`gamma_margin`).

    Args:
        A: tensor ``(..., N, N)`` or operator.
        gamma: float or tensor broadcastable to the batch shape (e.g. per head ``(H,)``).
        max_iter: most power-iteration steps for the Collatz–Wielandt fallback.

    Returns:
        ``γ`` broadcast to the batch shape, in the operator's dtype.

    Raises:
        ValueError: if ``γ`` is invalid, if ``γ·ρ(A) ≥ 1`` for some element, or if it cannot be
            certified ``< 1`` (matrix with negative entries and N > 1024, or bounds undecided).
    """
    op = as_operator(A)
    g = as_gamma(gamma, op.batch_shape, dtype=op.dtype, device=op.device)
    limit = 1 - gamma_margin(op.dtype)
    if (g * op.norm_bound() <= limit).all():
        return g
    radius = op.exact_radius()
    if radius is not None:
        bad = g * radius > limit
        if bad.any():
            worst = int(torch.argmax((g * radius).flatten()))
            raise ValueError(
                f"gamma={float(g.flatten()[worst]):.6g} times spectral radius "
                f"ρ(A)={float(radius.flatten()[worst]):.6g} is over 1 - margin for {int(bad.sum())} of "
                f"{bad.numel()} matrices of {op.description}; (I − γA)⁻¹ = Σ γᵗAᵗ needs "
                f"gamma·ρ(A) <= 1 - {gamma_margin(op.dtype):.2g} (the margin of {op.dtype})"
            )
        return g
    if not op.nonnegative:
        raise ValueError(
            f"cannot certify gamma·ρ(A) < 1 for {op.description} with negative entries and "
            f"N={op.num_tokens} > 1024: its norm bound allows only gamma < "
            f"{float(1 / op.norm_bound().max()):.6g}"
        )
    lower, upper, iterations = collatz_wielandt_bounds(op, gamma=g, max_iter=max_iter)
    if (g * lower > limit).any():
        raise ValueError(
            f"gamma={float(g.max()):.6g} times spectral radius ρ(A) >= "
            f"{float(lower[g * lower > limit].min()):.6g} is over 1 - {gamma_margin(op.dtype):.2g} for {op.description}; "
            "(I − γA)⁻¹ = Σ γᵗAᵗ needs gamma·ρ(A) < 1"
        )
    if not (g * upper <= limit).all():
        raise ValueError(
            f"cannot certify gamma·ρ(A) < 1 for {op.description}: after {iterations} iterations "
            f"the spectral radius lies in [{float(lower.min()):.6g}, {float(upper.max()):.6g}] "
            f"and gamma={float(g.max()):.6g}; use a smaller gamma"
        )
    return g
