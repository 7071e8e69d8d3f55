"""Token-graph operators: apply an ``N × N`` attention matrix without necessarily forming it.

Every spectral routine (visits, absorption, Perron vectors, Neumann-across-layers) takes either a
dense tensor ``(..., N, N)`` or one of these operators, so the same solver runs on every variant:

* :class:`DenseOperator` wraps a dense matrix.
* :class:`InfSAOperator` is pure InfSA's ``Â = ReLU(q kᵀ) / (‖ReLU(q kᵀ)‖_F + ε)`` applied from
  ``q`` and ``k`` in tiles (the attention layer's own kernel,
  :func:`~infsa_viz.blockwise.tiled_relu_product`); the Frobenius norm is accumulated over the
  same tiles, so memory is ``O(tile + N)`` per (batch, head), never ``O(N²)``.
* :class:`SoftmaxOperator` is the row-stochastic ``softmax(q kᵀ/√D)``, also in tiles (the row
  normalisers are streamed over key tiles once and cached).
* :class:`RankOneOperator` is Linear-InfSA's ``1 · aᵀ`` (every row equals ``a``): ``O(N)``.
* :func:`mean_over_heads` averages an operator over its last batch dimension (the heads).

Convention: ``matvec(x) = A x`` and ``rmatvec(x) = xᵀ A`` for vectors ``x (..., N)``
broadcastable to ``(*batch_shape, N)``. Operators compute in ``float64`` when given float64
tensors and in ``float32`` otherwise.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

import torch
from torch import Tensor

from ..blockwise import EPS, tile_sizes, tiled_relu_product

__all__ = [
    "DenseOperator",
    "convergence",
    "InfSAOperator",
    "RankOneOperator",
    "SoftmaxOperator",
    "SpectralOperator",
    "as_operator",
    "mean_over_heads",
]

#: ``"auto"`` solvers go dense only while the whole batch of matrices holds at most this many
#: numbers (256 MiB in float64).
DENSE_BUDGET = 2**25


def convergence(iterations: int, residual: Tensor, tol: float | None) -> dict[str, Any]:
    """How a solver ended, for a result's metadata: iterations, largest relative residual, tolerance."""
    return {"iterations": iterations, "max_residual": float(residual.max()) if residual.numel() else 0.0, "tol": tol}


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
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


def _check_qk(q: Tensor, k: Tensor) -> None:
    if not isinstance(q, Tensor) or not isinstance(k, Tensor):
        raise TypeError(f"q and k must be tensors, got {type(q).__name__} and {type(k).__name__}")
    if q.dim() < 2 or q.shape != k.shape:
        raise ValueError(
            f"q {tuple(q.shape)} and k {tuple(k.shape)} must have the same shape (..., N, D)"
        )


def _check_block_size(block_size: int | None) -> int | None:
    if block_size is None:
        return None
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size={block_size!r} must be a positive integer or None")
    return block_size


class _BlockwiseQK(SpectralOperator):
    """Shared machinery: a ``q kᵀ``-based matrix computed in tiles of ``rows × cols`` entries.

    Products run over tiles (:func:`~infsa_viz.blockwise.tile_sizes`: about 2²⁰ numbers per tile
    across the batch, at most :data:`~infsa_viz.blockwise.KEY_BLOCK` key columns), so a tile of
    ``k`` stays in cache while every query block passes over it; ``block_size`` sets the rows.
    """

    def __init__(self, q: Tensor, k: Tensor, *, block_size: int | None = None,
                 key_block_size: int | None = None) -> None:
        _check_qk(q, k)
        self.dtype = _compute_dtype(q.dtype)
        self.device = q.device
        self.q = q.detach().to(self.dtype)  # (..., N, D)
        self.k = k.detach().to(self.dtype)  # (..., N, D)
        self.k_t = self.k.transpose(-2, -1)  # (..., D, N)
        self.batch_shape = q.shape[:-2]
        self.num_tokens = q.shape[-2]
        self.block_size, self.key_block_size = tile_sizes(
            self.batch_shape.numel(), self.num_tokens, block_size=_check_block_size(block_size),
            key_block_size=key_block_size)

    @abstractmethod
    def _tile(self, i0: int, i1: int, j0: int, j1: int) -> Tensor:
        """Entries ``[i0:i1, j0:j1]`` of the matrix, ``(*batch_shape, i1 − i0, j1 − j0)``."""

    def _ranges(self, size: int | None = None) -> list[tuple[int, int]]:
        n, b = self.num_tokens, size or self.block_size
        return [(i, min(i + b, n)) for i in range(0, n, b)]

    def matvec(self, x: Tensor) -> Tensor:
        x = self._vector(x).unsqueeze(-1).contiguous()  # (..., N, 1)
        out = torch.zeros_like(x)
        for i0, i1 in self._ranges():
            for j0, j1 in self._ranges(self.key_block_size):
                out[..., i0:i1, :] += self._tile(i0, i1, j0, j1) @ x[..., j0:j1, :]
        return out.squeeze(-1)

    def rmatvec(self, x: Tensor) -> Tensor:
        x = self._vector(x).unsqueeze(-2).contiguous()  # (..., 1, N)
        out = torch.zeros_like(x)
        for i0, i1 in self._ranges():
            for j0, j1 in self._ranges(self.key_block_size):
                out[..., j0:j1] += x[..., i0:i1] @ self._tile(i0, i1, j0, j1)
        return out.squeeze(-2)

    def dense(self) -> Tensor:
        return self._tile(0, self.num_tokens, 0, self.num_tokens)  # (..., N, N)


class InfSAOperator(_BlockwiseQK):
    """Pure InfSA's ``Â = ReLU(q kᵀ) / (‖ReLU(q kᵀ)‖_F + ε)``, applied matrix-free.

    Matches :func:`infsa_viz.attention.infsa_affinity` (same ``ε``), but keeps float64 inputs in
    float64. Each product recomputes ``ReLU(q kᵀ)`` one tile at a time with the attention layer's
    kernel (:func:`~infsa_viz.blockwise.tiled_relu_product`), so extra memory is one tile (about
    2²⁰ numbers) plus ``O(N)``; ``xᵀÂ`` runs the same kernel on ``ReLU(k qᵀ) x``.

    Since ``‖Â‖_F ≤ 1``, the spectral radius is ``< 1`` and ``(I − γÂ)⁻¹`` exists for every
    ``γ ≤ 1`` (the learned ``ρ`` of an InfSA layer always qualifies).

    Args:
        q: queries ``(..., N, D)``.
        k: keys ``(..., N, D)``.
        eps: added to the Frobenius norm, as in the layer.
        block_size: query rows per tile; ``None`` (default): tiles of about 2²⁰ numbers.
        key_block_size: key columns per tile; ``None`` (default): ``min(N, 2048)``.
    """

    description = "pure InfSA Â = ReLU(q kᵀ)/(‖ReLU(q kᵀ)‖_F + ε)"

    def __init__(
        self, q: Tensor, k: Tensor, *, eps: float = EPS, block_size: int | None = None,
        key_block_size: int | None = None,
    ) -> None:
        super().__init__(q, k, block_size=block_size, key_block_size=key_block_size)
        self.eps = float(eps)
        self._norm: Tensor | None = None

    def _tile(self, i0: int, i1: int, j0: int, j1: int) -> Tensor:
        scores = (self.q[..., i0:i1, :] @ self.k_t[..., j0:j1]).relu_()  # (..., b, c)
        return scores * self._scale().unsqueeze(-1)

    def _product(self, a: Tensor, b: Tensor, x: Tensor) -> Tensor:
        """``ReLU(a bᵀ) x`` for ``x (..., N)`` by the attention's tiled kernel; caches ``‖S‖_F``."""
        x = self._vector(x).unsqueeze(-1).contiguous()  # (..., N, 1); a stride-0 batch slows bmm
        out, norm = tiled_relu_product(a, b, x, self.block_size, self.key_block_size)
        if self._norm is None:
            self._norm = norm  # the same sum of squares over every tile, in either orientation
        return out.squeeze(-1)

    def frobenius_norm(self) -> Tensor:
        """``‖ReLU(q kᵀ)‖_F`` per batch element, accumulated over tiles; shape ``batch_shape``."""
        if self._norm is None:
            self._product(self.q, self.k, self.ones())
        return self._norm

    def _scale(self) -> Tensor:
        return (1.0 / (self.frobenius_norm() + self.eps)).unsqueeze(-1)  # (..., 1)

    def matvec(self, x: Tensor) -> Tensor:
        return self._product(self.q, self.k, x) * self._scale()  # S x / (‖S‖ + ε)

    def rmatvec(self, x: Tensor) -> Tensor:
        return self._product(self.k, self.q, x) * self._scale()  # Sᵀ x = ReLU(k qᵀ) x

    def norm_bound(self) -> Tensor:
        """``‖Â‖_F = ‖S‖_F / (‖S‖_F + ε) < 1`` (Frobenius norm bounds the spectral radius)."""
        norm = self.frobenius_norm()
        return norm / (norm + self.eps)


class SoftmaxOperator(_BlockwiseQK):
    """Row-stochastic softmax attention ``P = softmax(q kᵀ / √D)``, applied in tiles.

    The row normalisers ``log Σ_j exp(q_i·k_j/√D)`` are streamed over key tiles once
    (:meth:`log_normalizer`, cached); every product then recomputes ``exp(logits − lse)`` tile by
    tile, so no row of ``N`` numbers per query block is needed.

    Its spectral radius is exactly 1, so ``(I − γP)⁻¹`` needs ``γ < 1``; its stationary
    distribution is the left Perron vector.

    Args:
        q: queries ``(..., N, D)``.
        k: keys ``(..., N, D)``.
        block_size: query rows per tile; ``None`` (default): tiles of about 2²⁰ numbers.
        key_block_size: key columns per tile; ``None`` (default): ``min(N, 2048)``.
    """

    description = "softmax P = softmax(q kᵀ/√D) (row-stochastic)"
    row_stochastic = True

    def __init__(self, q: Tensor, k: Tensor, *, block_size: int | None = None,
                 key_block_size: int | None = None) -> None:
        super().__init__(q, k, block_size=block_size, key_block_size=key_block_size)
        self.scale = q.shape[-1] ** -0.5
        self._lse: Tensor | None = None

    def _logits(self, i0: int, i1: int, j0: int, j1: int) -> Tensor:
        return (self.q[..., i0:i1, :] @ self.k_t[..., j0:j1]) * self.scale  # (..., b, c)

    def log_normalizer(self) -> Tensor:
        """``log Σ_j exp(q_i·k_j/√D)`` per row, ``(*batch_shape, N)``, streamed over key tiles (cached)."""
        if self._lse is None:
            lse = torch.full((*self.batch_shape, self.num_tokens), -math.inf, dtype=self.dtype, device=self.device)
            for i0, i1 in self._ranges():
                for j0, j1 in self._ranges(self.key_block_size):
                    tile = torch.logsumexp(self._logits(i0, i1, j0, j1), dim=-1)  # (..., b)
                    lse[..., i0:i1] = torch.logaddexp(lse[..., i0:i1], tile)
            self._lse = lse
        return self._lse

    def _tile(self, i0: int, i1: int, j0: int, j1: int) -> Tensor:
        return (self._logits(i0, i1, j0, j1) - self.log_normalizer()[..., i0:i1, None]).exp_()

    def row_sums(self) -> Tensor:
        return self.ones()

    def norm_bound(self) -> Tensor:
        return torch.ones(self.batch_shape, dtype=self.dtype, device=self.device)


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
        self.dtype = _compute_dtype(a.dtype)
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
        self.dtype = _compute_dtype(A.dtype)
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
        radius = torch.linalg.eigvals(self.A.double()).abs().amax(-1)
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
