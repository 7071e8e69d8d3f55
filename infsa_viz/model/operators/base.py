"""The interface every token-graph operator implements: :class:`SpectralOperator`.

An operator is a batch of ``N × N`` matrices seen through products with vectors
(``matvec(x) = A x``, ``rmatvec(x) = xᵀ A``); the spectral solvers need nothing else. The
operators themselves are in :mod:`infsa_viz.model.operators.dense` (dense, rank-one, head mean) and
:mod:`infsa_viz.model.operators.tiled` (pure InfSA and softmax from ``q`` and ``k``, in tiles).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch
from torch import Tensor

__all__ = ["DENSE_BUDGET", "SpectralOperator", "compute_dtype", "convergence"]

#: ``"auto"`` solvers go dense only while the whole batch of matrices holds at most this many
#: numbers (256 MiB in float64).
DENSE_BUDGET = 2**25


def convergence(iterations: int, residual: Tensor, tol: float | None) -> dict[str, Any]:
    """How a solver ended, for a result's metadata: iterations, largest relative residual, tolerance."""
    return {"iterations": iterations, "max_residual": float(residual.max()) if residual.numel() else 0.0, "tol": tol}


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype operators compute in: float64 for float64 tensors, float32 otherwise."""
    return torch.float64 if dtype == torch.float64 else torch.float32


class SpectralOperator(ABC):
    """A batch of ``N × N`` matrices seen through products with vectors.

    Attributes:
        batch_shape: leading dimensions, e.g. ``(B, H)``.
        num_tokens: ``N``.
        nonnegative: all entries are ``≥ 0`` (enables Perron–Frobenius bounds).
        row_stochastic: every row sums to one (then the spectral radius is exactly 1).
        description: which matrix this is, in words (copied into every result).
    """

    batch_shape: torch.Size
    num_tokens: int
    dtype: torch.dtype
    device: torch.device
    nonnegative: bool = True
    row_stochastic: bool = False
    description: str = "matrix"

    @abstractmethod
    def matvec(self, x: Tensor) -> Tensor:
        """``A x`` for ``x (..., N)`` → ``(*batch_shape, N)``."""

    @abstractmethod
    def rmatvec(self, x: Tensor) -> Tensor:
        """``xᵀ A`` for ``x (..., N)`` → ``(*batch_shape, N)``."""

    @abstractmethod
    def dense(self) -> Tensor:
        """The matrix itself, ``(*batch_shape, N, N)`` (O(N²) memory: moderate N only)."""

    def row_sums(self) -> Tensor:
        """``A 1``, shape ``(*batch_shape, N)``."""
        return self.matvec(self.ones())

    def col_sums(self) -> Tensor:
        """``1ᵀ A``, shape ``(*batch_shape, N)``."""
        return self.rmatvec(self.ones())

    def norm_bound(self) -> Tensor:
        """An induced-norm upper bound on the spectral radius, shape ``batch_shape``.

        Default (non-negative operators): ``min(max row sum, max column sum)``, i.e.
        ``min(‖A‖_∞, ‖A‖_1)``.
        """
        return torch.minimum(self.row_sums().amax(-1), self.col_sums().amax(-1))

    def exact_radius(self) -> Tensor | None:
        """The spectral radius when it is known in closed form or cheap, else ``None``."""
        if self.row_stochastic:
            return torch.ones(self.batch_shape, dtype=self.dtype, device=self.device)
        return None

    def fits_dense(self, limit: int) -> bool:
        """``N ≤ limit`` and the dense batch holds at most :data:`DENSE_BUDGET` numbers."""
        n = self.num_tokens
        return n <= limit and self.batch_shape.numel() * n * n <= DENSE_BUDGET

    def ones(self) -> Tensor:
        return torch.ones(*self.batch_shape, self.num_tokens, dtype=self.dtype, device=self.device)

    def _vector(self, x: Tensor, name: str = "x") -> Tensor:
        """Broadcast ``x`` to ``(*batch_shape, N)`` in the compute dtype."""
        shape = (*self.batch_shape, self.num_tokens)
        try:
            return torch.broadcast_to(x.to(self.dtype), shape)
        except RuntimeError:
            raise ValueError(
                f"{name} has shape {tuple(x.shape)}; expected a vector broadcastable to {shape}"
            ) from None
