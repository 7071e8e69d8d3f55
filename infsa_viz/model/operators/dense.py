"""Dense, rank-one and head-mean token-graph operators, and :func:`as_operator`.

Every spectral routine (visits, absorption, Perron vectors, Neumann-across-layers) takes either a
dense tensor ``(..., N, N)`` or one of these operators, so the same solver runs on every variant:

* :class:`DenseOperator` wraps a dense matrix.
* :class:`InfSAOperator` is pure InfSA's ``Â = ReLU(q kᵀ) / (‖ReLU(q kᵀ)‖_F + ε)`` and
  :class:`SoftmaxOperator` the row-stochastic ``softmax(q kᵀ/√D)``, both applied from ``q`` and
  ``k`` in tiles, never formed (:mod:`infsa_viz.model.operators.tiled`).
* :class:`RankOneOperator` is Linear-InfSA's ``1 · aᵀ`` (every row equals ``a``): ``O(N)``.
* :func:`mean_over_heads` averages an operator over its last batch dimension (the heads).

The interface, :class:`SpectralOperator`, is in :mod:`infsa_viz.model.operators.base`. Every
operator is importable from :mod:`infsa_viz.model.operators` and :mod:`infsa_viz.spectral`.

Convention: ``matvec(x) = A x`` and ``rmatvec(x) = xᵀ A`` for vectors ``x (..., N)``
broadcastable to ``(*batch_shape, N)``. Operators compute in ``float64`` when given float64
tensors and in ``float32`` otherwise.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ...linalg import eigvals
from .base import SpectralOperator, compute_dtype

__all__ = ["DenseOperator", "RankOneOperator", "as_operator", "mean_over_heads"]


class RankOneOperator(SpectralOperator):
    """Rank-one ``A = u aᵀ``; with ``u = 1`` (default) Linear-InfSA's operator ``1 · aᵀ``.

    ``xᵀA = (x·u) aᵀ``, so the left Perron vector is ``a`` and the right one is ``u``, with
    eigenvalue ``u·a`` (the only non-zero one). All products cost ``O(N)``.

    Args:
        a: row vector ``(..., N)`` (Linear-InfSA's normalised key scores).
        u: column vector ``(..., N)``; default all ones.
    """

    def __init__(self, a: Tensor, u: Tensor | None = None) -> None:
        if not isinstance(a, Tensor) or a.dim() < 1:
            raise ValueError(f"a must be a tensor of shape (..., N), got {type(a).__name__}")
        self.dtype = compute_dtype(a.dtype)
        self.device = a.device
        self.a = a.detach().to(self.dtype)  # (..., N)
        if u is None:
            self.u = torch.ones_like(self.a)
            self.description = "Linear-InfSA rank-1 1·aᵀ"
        else:
            if u.shape[-1] != a.shape[-1]:
                raise ValueError(f"u {tuple(u.shape)} and a {tuple(a.shape)} must share the last dim N")
            self.u = u.detach().to(self.dtype)
            self.a, self.u = torch.broadcast_tensors(self.a, self.u)
            self.description = "rank-1 u·aᵀ"
        self.batch_shape = self.a.shape[:-1]
        self.num_tokens = self.a.shape[-1]
        self.nonnegative = bool((self.a >= 0).all() and (self.u >= 0).all())
        self.unit_rows = u is None

    def matvec(self, x: Tensor) -> Tensor:
        x = self._vector(x)
        return self.u * (self.a * x).sum(-1, keepdim=True)  # (..., N)

    def rmatvec(self, x: Tensor) -> Tensor:
        x = self._vector(x)
        return (x * self.u).sum(-1, keepdim=True) * self.a  # (..., N)

    def dense(self) -> Tensor:
        return self.u.unsqueeze(-1) * self.a.unsqueeze(-2)  # (..., N, N)

    def exact_radius(self) -> Tensor:
        return (self.u * self.a).sum(-1).abs()

    def norm_bound(self) -> Tensor:
        return self.u.abs().amax(-1) * self.a.abs().sum(-1)  # ‖u aᵀ‖_∞


class DenseOperator(SpectralOperator):
    """A dense matrix ``A (..., N, N)`` behind the operator interface.

    Args:
        A: matrices ``(..., N, N)``; any real entries (Perron–Frobenius shortcuts are used only
            when all entries are non-negative).
        exact_limit: largest ``N`` for which :meth:`exact_radius` runs a dense eigenvalue solve.
    """

    def __init__(self, A: Tensor, *, exact_limit: int = 1024, description: str = "dense A") -> None:
        if not isinstance(A, Tensor):
            raise TypeError(f"A must be a torch.Tensor, got {type(A).__name__}")
        if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
            raise ValueError(f"A has shape {tuple(A.shape)}; expected square matrices (..., N, N)")
        self.dtype = compute_dtype(A.dtype)
        self.device = A.device
        self.A = A.detach().to(self.dtype)
        self.batch_shape = A.shape[:-2]
        self.num_tokens = A.shape[-1]
        self.nonnegative = bool((self.A >= 0).all())
        self.exact_limit = exact_limit
        self.description = description

    def matvec(self, x: Tensor) -> Tensor:
        return (self.A @ self._vector(x).unsqueeze(-1)).squeeze(-1)

    def rmatvec(self, x: Tensor) -> Tensor:
        return (self._vector(x).unsqueeze(-2) @ self.A).squeeze(-2)

    def dense(self) -> Tensor:
        return self.A

    def row_sums(self) -> Tensor:
        return self.A.sum(-1)

    def col_sums(self) -> Tensor:
        return self.A.sum(-2)

    def norm_bound(self) -> Tensor:
        absolute = self.A.abs()
        frobenius = torch.linalg.matrix_norm(self.A)
        return torch.minimum(frobenius, torch.minimum(absolute.sum(-1).amax(-1), absolute.sum(-2).amax(-1)))

    def exact_radius(self) -> Tensor | None:
        if self.num_tokens > self.exact_limit:
            return None
        radius = eigvals(self.A, what=f"spectral radius of {self.description}").abs().amax(-1)
        return radius.to(self.dtype)


class _HeadMeanOperator(SpectralOperator):
    """``(1/H) Σ_h A_h`` for an operator with batch shape ``(..., H)``; products stay matrix-free."""

    def __init__(self, inner: SpectralOperator) -> None:
        self.inner = inner
        self.batch_shape = inner.batch_shape[:-1]
        self.num_tokens = inner.num_tokens
        self.dtype = inner.dtype
        self.device = inner.device
        self.nonnegative = inner.nonnegative
        self.row_stochastic = inner.row_stochastic
        self.description = f"head mean of {inner.description}"

    def matvec(self, x: Tensor) -> Tensor:
        return self.inner.matvec(self._vector(x).unsqueeze(-2)).mean(-2)

    def rmatvec(self, x: Tensor) -> Tensor:
        return self.inner.rmatvec(self._vector(x).unsqueeze(-2)).mean(-2)

    def dense(self) -> Tensor:
        return self.inner.dense().mean(-3)

    def norm_bound(self) -> Tensor:
        # Every head's bound is the same kind of norm, so the triangle inequality applies.
        bound = self.inner.norm_bound().mean(-1)
        return torch.minimum(bound, super().norm_bound()) if self.nonnegative else bound


def mean_over_heads(op: SpectralOperator | Tensor) -> SpectralOperator:
    """Average an operator over its last batch dimension (heads): ``(..., H) → (...)``.

    Dense and rank-one (``1·aᵀ``) operators stay dense / rank-one (mean of ``a``); the others are
    wrapped and stay matrix-free.
    """
    op = as_operator(op)
    if len(op.batch_shape) < 1:
        raise ValueError(f"operator batch shape {tuple(op.batch_shape)} has no head dimension to average")
    if isinstance(op, DenseOperator):
        return DenseOperator(op.A.mean(-3), exact_limit=op.exact_limit,
                             description=f"head mean of {op.description}")
    if isinstance(op, RankOneOperator) and op.unit_rows:
        fused = RankOneOperator(op.a.mean(-2))
        fused.description = f"head mean of {op.description}"
        return fused
    return _HeadMeanOperator(op)


def as_operator(A: SpectralOperator | Tensor) -> SpectralOperator:
    """Return ``A`` if it is an operator, else wrap a dense ``(..., N, N)`` tensor."""
    if isinstance(A, SpectralOperator):
        return A
    if isinstance(A, Tensor):
        return DenseOperator(A)
    raise TypeError(f"A must be a torch.Tensor (..., N, N) or a SpectralOperator, got {type(A).__name__}")
