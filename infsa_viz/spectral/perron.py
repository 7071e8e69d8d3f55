"""Perron vectors and eigenvalue spectra of non-negative token matrices.

For a non-negative ``A`` the Perron–Frobenius theorem gives a real eigenvalue ``λ = ρ(A)`` with
non-negative eigenvectors: the **left** one ``xᵀA = λxᵀ`` (for a row-stochastic softmax matrix,
its stationary distribution; for InfSA the token importance that Linear-InfSA estimates) and the
**right** one ``Ax = λx``. Linear-InfSA's rank-one operator ``1·aᵀ`` has left Perron vector ``a``
exactly and right Perron vector ``1``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

from ..linalg import check_finite, eig, eigvals
from ..model.blockwise import EPS
from ..model.functional import linear_infsa_weights
from ..model.operators import RankOneOperator, SpectralOperator, as_operator, convergence

__all__ = ["TOL_FLOOR_EPS", "PerronResult", "eigenvalue_spectrum", "linear_perron_estimate", "perron_vector"]

#: Power iteration's tolerance is at least this many machine epsilons of the operator's dtype.
TOL_FLOOR_EPS = 4

Side = Literal["left", "right"]
Normalize = Literal["sum", "l2"]


@dataclass
class PerronResult:
    """A Perron eigenvector and how it was found.

    Attributes:
        vector: ``(*batch, N)`` non-negative eigenvector, normalised as ``normalize`` says.
        eigenvalue: ``(*batch)`` the Perron root ``ρ(A)``.
        side: ``"left"`` (``xᵀA = λxᵀ``) or ``"right"`` (``Ax = λx``).
        normalize: ``"sum"`` (entries sum to 1) or ``"l2"`` (unit Euclidean norm).
        matrix: which matrix ``A`` was.
        method: ``"dense"`` (LAPACK ``geev``), ``"power"`` or ``"rank_one"`` (closed form).
        iterations: power iterations used (0 otherwise).
        residual: ``(*batch)`` relative eigen-residual ``‖xA − λx‖₂ / ‖x‖₂`` (or ``‖Ax − λx‖₂``).
        tol: power-iteration tolerance (``None`` otherwise).
    """

    vector: Tensor
    eigenvalue: Tensor
    side: str
    normalize: str
    matrix: str
    method: str
    iterations: int
    residual: Tensor
    tol: float | None

    def metadata(self) -> dict[str, Any]:
        return {
            "quantity": "Perron eigenvector",
            "matrix": self.matrix,
            "side": f"{self.side} ({'x^T A = lambda x^T' if self.side == 'left' else 'A x = lambda x'})",
            "normalize": self.normalize,
            "method": self.method,
            **convergence(self.iterations, self.residual, self.tol),
        }

    def describe(self) -> str:
        m = self.metadata()
        return (
            f"{m['side']} Perron vector of {m['matrix']}, normalised by {m['normalize']}; "
            f"method={m['method']}, max residual {m['max_residual']:.2e}"
        )


def _normalise(x: Tensor, how: str) -> Tensor:
    scale = x.sum(-1, keepdim=True) if how == "sum" else torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    if (scale == 0).any():
        warnings.warn("perron_vector: an all-zero vector cannot be normalised; returning NaN",
                      RuntimeWarning, stacklevel=3)
    return x / scale


def _fix_sign(x: Tensor) -> Tensor:
    """Flip to a non-negative sum; clear round-off negatives; warn on genuinely mixed signs."""
    x = torch.where(x.sum(-1, keepdim=True) < 0, -x, x)
    peak = x.abs().amax(-1, keepdim=True)
    x = torch.where((x < 0) & (x >= -1e-9 * peak), torch.zeros_like(x), x)
    if (x < 0).any():
        warnings.warn(
            "perron_vector: the eigenvector has entries of both signs (reducible matrix with a "
            "repeated Perron root, or negative entries); it is not a unique Perron vector",
            RuntimeWarning, stacklevel=3,
        )
    return x


def _apply(op: SpectralOperator, x: Tensor, side: str) -> Tensor:
    return op.rmatvec(x) if side == "left" else op.matvec(x)


def _check_positive_radius(op: SpectralOperator, row_sums: Tensor) -> None:
    """Refuse matrices whose largest row sum is 0 (all zero, so ρ(A) = 0): no Perron vector exists.

    Every vector is then an eigenvector of eigenvalue 0 (dense ``eig`` would return an arbitrary
    ``[1, 0, …]``, power iteration ``0/0``); we refuse rather than return either.
    """
    zero = row_sums.amax(-1) <= 0  # (...)
    if bool(zero.any()):
        where = [tuple(i) for i in zero.nonzero().tolist()][:3]
        raise ValueError(f"A ({op.description}) is all zero at batch index {where} ({int(zero.sum())} of "
                         f"{zero.numel()}): ρ(A) = 0 and no Perron vector exists")


def _raise_nilpotent(description: str, where: Tensor) -> None:
    index = [tuple(i) for i in where.nonzero().tolist()][:3]
    raise ValueError(f"A ({description}) is nilpotent at batch index {index} ({int(where.sum())} of {where.numel()}): "
                     "its graph has no cycle, ρ(A) = 0 and no Perron vector exists")


def nilpotent(M: np.ndarray | Tensor) -> np.ndarray:
    """``(...)`` bool: non-negative ``M (..., N, N)`` has ``M^N = 0`` (acyclic support, ``ρ(M) = 0``).

    Exact (boolean squaring of the support, no rounding): these are the matrices without a
    Perron vector, the all-zero one included.
    """
    M = M.detach().cpu().numpy() if isinstance(M, Tensor) else np.asarray(M)
    power, reach = (M > 0).astype(np.float64), 1
    while reach < M.shape[-1]:
        power = (power @ power > 0).astype(np.float64)  # support of M^(2·reach)
        reach *= 2
    return np.asarray(~power.any(axis=(-2, -1)))


def _check_not_nilpotent(M: np.ndarray | Tensor, description: str) -> None:
    """Refuse matrices of ``M (..., N, N)`` that are :func:`nilpotent`."""
    found = nilpotent(M)
    if found.any():
        _raise_nilpotent(description, torch.from_numpy(found))


def perron_vector(
    A: SpectralOperator | Tensor,
    *,
    side: Side = "left",
    normalize: Normalize = "sum",
    method: Literal["auto", "dense", "power"] = "auto",
    tol: float = 1e-10,
    max_iter: int = 10_000,
    dense_limit: int = 1024,
) -> PerronResult:
    """Perron eigenvector of non-negative matrices, batched over leading dims.

    Args:
        A: non-negative matrices ``(..., N, N)`` or an operator.
        side: ``"left"`` (default, ``xᵀA = λxᵀ``) or ``"right"`` (``Ax = λx``).
        normalize: ``"sum"`` (default, a distribution) or ``"l2"``.
        method: ``"dense"``: LAPACK ``geev`` in float64 (:func:`infsa_viz.linalg.eig`), eigenvalue with the
            largest real part (for a non-negative matrix that is ``ρ(A)``). ``"power"``: matrix-free
            power iteration from the uniform vector, stopping when the L1 change of the
            sum-normalised iterate is ``≤ tol`` (needs a primitive matrix to converge; a warning
            says if it did not). ``"auto"`` (default): closed form for a rank-one ``u·aᵀ``
            operator, dense for ``N ≤ dense_limit`` (and at most 2²⁵ numbers in the
            batch), else power.
        tol: power-iteration tolerance on the L1 change; raised to ``TOL_FLOOR_EPS·ε`` of the
            operator's dtype (float32: 4.8e-7), the rounding level of a distribution's L1 norm,
            below which the iterate cannot settle. The value used is returned as ``tol``.
        max_iter: most power iterations.
        dense_limit: largest ``N`` that ``"auto"`` solves densely (default 1024).

    Returns:
        :class:`PerronResult` with ``vector (*batch, N)`` (sign-fixed, non-negative) and
        ``eigenvalue (*batch)``.

    Raises:
        ValueError: on unknown options, an empty, non-finite, all-zero or nilpotent matrix
            (``ρ(A) = 0``: no Perron vector exists), a matrix with negative entries, or a vector
            that is not finite (an all-zero iterate; the message names the matrix and the batch index).
    """
    if side not in ("left", "right"):
        raise ValueError(f"side={side!r} must be 'left' or 'right'")
    if normalize not in ("sum", "l2"):
        raise ValueError(f"normalize={normalize!r} must be 'sum' or 'l2'")
    if method not in ("auto", "dense", "power"):
        raise ValueError(f"method={method!r} must be one of ['auto', 'dense', 'power']")
    if not tol > 0 or isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
        raise ValueError(f"tol={tol!r} must be > 0 and max_iter={max_iter!r} a positive integer")
    op = as_operator(A)
    if op.num_tokens < 1:
        raise ValueError(f"A ({op.description}) has no tokens (N = 0); expected N >= 1")
    row_sums = op.matvec(op.ones())  # (..., N): A·1; for A ≥ 0, max row sum = ‖A‖_∞ ≥ ρ(A)
    if not bool(torch.isfinite(row_sums).all()):
        raise ValueError(f"A ({op.description}) holds NaN or Inf entries; expected finite values")
    if not op.nonnegative:
        raise ValueError(f"A ({op.description}) has negative entries; Perron vectors need A >= 0")
    _check_positive_radius(op, row_sums)
    iterations, used_tol = 0, None
    if method == "auto":
        if isinstance(op, RankOneOperator):
            method = "rank_one"
        else:
            method = "dense" if op.fits_dense(dense_limit) else "power"
    if method == "rank_one":
        x = op.a if side == "left" else op.u  # xᵀ(u aᵀ) = (x·u) aᵀ;  (u aᵀ) u = (a·u) u
        eigenvalue = (op.u * op.a).sum(-1)
    elif method == "dense":
        M = op.dense().double()  # (..., N, N)
        _check_not_nilpotent(M, op.description)
        if side == "left":
            M = M.transpose(-1, -2)
        values, vectors = eig(M, what=f"Perron vector of {op.description}")  # (..., N), (..., N, N) columns
        index = values.real.argmax(-1, keepdim=True)  # (..., 1)
        eigenvalue = values.real.gather(-1, index)[..., 0]  # (...)
        x = vectors.gather(-1, index.unsqueeze(-2).expand(*vectors.shape[:-1], 1))[..., 0].real  # (..., N)
        x, eigenvalue = x.to(op.dtype), eigenvalue.to(op.dtype)
    else:
        # Below ~ε of the dtype the L1 change of a sum-1 iterate is rounding noise and never
        # settles (float32 at tol 1e-10 ran all max_iter iterations), so the tolerance is floored.
        used_tol = max(tol, TOL_FLOOR_EPS * torch.finfo(op.dtype).eps)
        x = op.ones() / op.num_tokens  # (..., N)
        for iterations in range(1, max_iter + 1):
            y = _apply(op, x, side)
            total = y.sum(-1, keepdim=True)  # (..., 1)
            if bool((total <= 0).any()):  # 1ᵀAᵗ = 0: A is nilpotent (an exact zero for A ≥ 0)
                _raise_nilpotent(op.description, (total[..., 0] <= 0))
            y = y / total.clamp_min(torch.finfo(op.dtype).tiny)
            change = (y - x).abs().sum(-1)
            x = y
            if (change <= used_tol).all():
                break
        else:
            warnings.warn(
                f"perron_vector: power iteration did not reach tol={used_tol:g} in max_iter={max_iter} "
                f"(L1 change {float(change.max()):.3g}); the matrix may be periodic or have a small "
                "spectral gap", RuntimeWarning, stacklevel=2,
            )
        eigenvalue = _apply(op, x, side).sum(-1)  # x sums to 1, so 1ᵀ(xA) = λ at a fixed point
    x = _normalise(_fix_sign(x.to(op.dtype)), normalize)
    check_finite(x, "the Perron vector", f"Perron vector of {op.description} ({method})", vector=True)
    image = _apply(op, x, side)
    error = torch.linalg.vector_norm(image - eigenvalue.unsqueeze(-1) * x, dim=-1)  # (...)
    residual = error / torch.linalg.vector_norm(x, dim=-1)
    return PerronResult(
        vector=x, eigenvalue=eigenvalue, side=side, normalize=normalize, matrix=op.description,
        method=method, iterations=iterations, residual=residual, tol=used_tol,
    )


def eigenvalue_spectrum(A: SpectralOperator | Tensor, *, dense_limit: int = 4096) -> Tensor:
    """All eigenvalues, sorted by decreasing modulus, as a complex tensor ``(..., N)``.

    Dense LAPACK eigenvalues in float64 (O(N³), :func:`infsa_viz.linalg.eigvals`); for the app's spectrum plots.

    Raises:
        ValueError: if ``N > dense_limit`` (default 4096).
    """
    op = as_operator(A)
    if op.num_tokens > dense_limit:
        raise ValueError(
            f"N={op.num_tokens} tokens exceeds dense_limit={dense_limit} for a dense eigenvalue "
            "solve; use perron_vector(method='power') or spectral_radius for large N"
        )
    values = eigvals(op.dense(), what=f"eigenvalue spectrum of {op.description}")  # (..., N) complex128
    order = torch.argsort(values.abs(), dim=-1, descending=True, stable=True)
    return torch.gather(values, -1, order)


def linear_perron_estimate(q: Tensor, k: Tensor, *, eps: float = EPS) -> Tensor:
    """Linear-InfSA's estimate ``a (..., N)`` of the left Perron vector of ``Â``.

    Exactly ``linear_infsa_weights(q, k, eps=eps)[2]``, what the Linear-InfSA layer computes:
    ``a_j = ReLU(q̄·k_j) / (Σ_l ReLU(q̄·k_l) + ε)`` with ``q̄ = Σ_i (‖q_i‖/Σ‖q‖) q_i``.

    Args:
        q: queries ``(..., N, D)``.
        k: keys ``(..., N, D)``.
        eps: as in the layer.
    """
    return linear_infsa_weights(q, k, eps=eps)[2]
