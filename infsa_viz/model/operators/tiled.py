"""Pure InfSA's and softmax's token graphs applied from ``q`` and ``k`` in tiles, never formed.

* :class:`InfSAOperator` is pure InfSA's ``Â = ReLU(q kᵀ) / (‖ReLU(q kᵀ)‖_F + ε)`` applied with the
  attention layer's own kernel (:func:`~infsa_viz.model.blockwise.tiled_relu_product`); the Frobenius
  norm is accumulated over the same tiles, so memory is ``O(tile + N)`` per (batch, head), never
  ``O(N²)``.
* :class:`SoftmaxOperator` is the row-stochastic ``softmax(q kᵀ/√D)``, also in tiles (the row
  normalisers are streamed over key tiles once and cached).

Both are importable from :mod:`infsa_viz.model.operators` and :mod:`infsa_viz.spectral` too.
"""

from __future__ import annotations

import math
from abc import abstractmethod

import torch
from torch import Tensor

from ..blockwise import EPS, tile_sizes, tiled_relu_product
from .base import SpectralOperator, compute_dtype

__all__ = ["InfSAOperator", "SoftmaxOperator"]


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

    Products run over tiles (:func:`~infsa_viz.model.blockwise.tile_sizes`: about 2²⁰ numbers per tile
    across the batch, at most :data:`~infsa_viz.model.blockwise.KEY_BLOCK` key columns), so a tile of
    ``k`` stays in cache while every query block passes over it; ``block_size`` sets the rows.
    """

    def __init__(self, q: Tensor, k: Tensor, *, block_size: int | None = None,
                 key_block_size: int | None = None) -> None:
        _check_qk(q, k)
        self.dtype = compute_dtype(q.dtype)
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

    Matches :func:`infsa_viz.model.functional.infsa_affinity` (same ``ε``), but keeps float64 inputs in
    float64. Each product recomputes ``ReLU(q kᵀ)`` one tile at a time with the attention layer's
    kernel (:func:`~infsa_viz.model.blockwise.tiled_relu_product`), so extra memory is one tile (about
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
