"""Pure InfSA without the ``N × N`` matrix: ``S·V`` and ``‖S‖_F`` in tiles, forward and backward.

Pure InfSA (Roffo & Palmer, arXiv 2603.00175) applies ``ρ · Â v`` with
``Â = S / (‖S‖_F + ε)`` and ``S = ReLU(q kᵀ)``. The Frobenius scale is one number per
(batch, head), so ``Â v = (S v) / (‖S‖_F + ε)``: both ``U = S v`` and ``‖S‖_F² = Σ S_ij²`` are sums
over tiles ``S[i₀:i₁, j₀:j₁]`` of ``S``, computed in **one pass** that never holds more than one
tile (``O(tile + N·D)`` memory instead of ``O(N²)``).

The backward pass (:class:`BlockwiseInfSA`, a ``torch.autograd.Function``) recomputes each tile
from ``q`` and ``k`` instead of storing ``S``. With upstream gradients ``G_U = ∂L/∂U`` and
``g_n = ∂L/∂‖S‖_F``, for ``M = q kᵀ``:

    ``∂L/∂S = G_U vᵀ + (g_n / ‖S‖_F) · S``,  ``∂L/∂M = ∂L/∂S ⊙ [M > 0]``,
    ``∂L/∂q = (∂L/∂M) k``,  ``∂L/∂k = (∂L/∂M)ᵀ q``,  ``∂L/∂v = Sᵀ G_U``,

each accumulated tile by tile. ``ρ`` and ``ε`` stay outside the function, in ordinary autograd,
so ``ρ`` learns as in the dense layer.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch
from torch import Tensor

__all__ = ["EPS", "KEY_BLOCK", "TILE_ELEMENTS", "blockwise_infsa", "tile_sizes", "tiled_relu_product"]

#: The ``ε`` of InfSA's normalisations (``‖S‖_F + ε``, ``Σ_j a_j + ε``): one value for the layers,
#: the kernels and the spectral operators, defined here, below all of them, so none imports another.
EPS = 1e-6

#: Default numbers per tile across the batch and heads (4 MiB in float32): cache-sized tiles were
#: the fastest on CPU (one attention layer at 16,385 tokens, 4 heads, D = 16).
TILE_ELEMENTS = 2**20
#: Default key columns per tile.
KEY_BLOCK = 2048


def _accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.promote_types(dtype, torch.float32)


def _check_size(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}={value!r} must be a positive integer or None")
    return value


def tile_sizes(batch: int, num_tokens: int, *, block_size: int | None = None,
               key_block_size: int | None = None) -> tuple[int, int]:
    """Query rows and key columns per tile.

    Args:
        batch: number of ``(batch, head)`` pairs computed together (``B·H``).
        num_tokens: ``N``.
        block_size: query rows per tile; ``None`` fills :data:`TILE_ELEMENTS` numbers.
        key_block_size: key columns per tile; ``None`` gives ``min(N, KEY_BLOCK)``.

    Returns:
        ``(rows, cols)``, each in ``[1, N]``.
    """
    cols = min(num_tokens, _check_size("key_block_size", key_block_size) or KEY_BLOCK)
    rows = _check_size("block_size", block_size) or max(1, TILE_ELEMENTS // max(1, batch * cols))
    return min(rows, num_tokens), cols


def _ranges(n: int, size: int) -> list[tuple[int, int]]:
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def _row_blocks(q: Tensor, k_t: Tensor, vk: Tensor, out: Tensor, blocks: list[tuple[int, int]],
                cols: int, inference: bool = False) -> Tensor:
    """Fill ``out`` for the query ``blocks``; return their ``Σ S_ij²`` per batch element."""
    d_v = out.shape[-1]
    squares = torch.zeros(q.shape[:-2], dtype=q.dtype, device=q.device)  # (...)
    key_tiles = _ranges(q.shape[-2], cols)
    with torch.inference_mode(inference), torch.no_grad():  # a worker thread starts in neither mode
        for i0, i1 in blocks:
            q_i = q[..., i0:i1, :]  # (..., b, D)
            block = None
            for j0, j1 in key_tiles:
                s = torch.relu_(q_i @ k_t[..., j0:j1])  # (..., b, c)
                part = s @ vk[..., j0:j1, :]  # (..., b, D_v + D)
                block = part if block is None else block.add_(part)
            out[..., i0:i1, :] = block[..., :d_v]
            squares += (q_i * block[..., d_v:]).sum(dim=(-2, -1))  # Σ_ij S_ij (q_i·k_j) = Σ_ij S_ij²
    return squares


def tiled_relu_product(q: Tensor, k: Tensor, v: Tensor, rows: int, cols: int) -> tuple[Tensor, Tensor]:
    """``U = ReLU(q kᵀ) v`` in ``v``'s dtype and ``‖ReLU(q kᵀ)‖_F`` in ≥ float32, over tiles of
    ``rows × cols`` entries (no autograd; :func:`blockwise_infsa` is the differentiable entry point).

    The norm costs no pass of its own: ``S_ij² = S_ij (q_i·k_j)`` (``S = ReLU(q kᵀ)``), so
    ``Σ_j S_ij² = q_i · (S k)_i`` and one product ``S [v | k]`` per tile gives both ``U`` and ``‖S‖_F²``.

    On CPU with ``torch.get_num_threads() > 1`` the query blocks are shared among that many Python
    threads, each running single-threaded tile products (torch releases the GIL): one parallel
    region per call instead of one per small tile, whose thread barriers dominated on a busy machine
    (one layer at 8,192 tokens on 2 loaded cores: 71 s wall with per-tile threading).
    """
    acc = _accumulation_dtype(v.dtype)
    q, k = q.detach().to(acc), k.detach().to(acc)
    vk = torch.cat([v.detach().to(acc), k], dim=-1)  # (..., N, D_v + D)
    out = torch.empty(v.shape, dtype=acc, device=v.device)  # (..., N, D_v)
    k_t = k.transpose(-2, -1)  # (..., D, N)
    blocks = _ranges(q.shape[-2], rows)
    threads = torch.get_num_threads() if q.device.type == "cpu" else 1
    workers = min(threads, len(blocks))
    inference = torch.is_inference_mode_enabled()
    if workers <= 1:
        squares = _row_blocks(q, k_t, vk, out, blocks, cols, inference)
    else:
        shares = [blocks[w::workers] for w in range(workers)]  # interleaved: equal work per thread
        torch.set_num_threads(1)
        try:
            with ThreadPoolExecutor(workers) as pool:
                parts = list(pool.map(lambda share: _row_blocks(q, k_t, vk, out, share, cols, inference),
                                      shares))
        finally:
            torch.set_num_threads(threads)
        squares = torch.stack(parts).sum(0)
    return out.to(v.dtype), squares.clamp_min_(0).sqrt()


class BlockwiseInfSA(torch.autograd.Function):
    """``(U, n) = (ReLU(q kᵀ) v, ‖ReLU(q kᵀ)‖_F)`` computed and differentiated in tiles."""

    @staticmethod
    def forward(ctx: Any, q: Tensor, k: Tensor, v: Tensor, rows: int, cols: int) -> tuple[Tensor, Tensor]:
        out, norm = tiled_relu_product(q, k, v, rows, cols)
        ctx.save_for_backward(q, k, v, norm)
        ctx.tiles = (rows, cols)
        return out, norm

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor | None, grad_norm: Tensor | None) -> tuple[Any, ...]:
        q, k, v, norm = ctx.saved_tensors
        rows, cols = ctx.tiles
        n = q.shape[-2]
        if grad_out is None:
            grad_out = torch.zeros_like(v)
        # g_n · S/‖S‖ (‖S‖ = 0 means S = 0, so the term vanishes)
        coef = torch.zeros_like(norm) if grad_norm is None else torch.where(
            norm > 0, grad_norm / norm.clamp_min(torch.finfo(norm.dtype).tiny), torch.zeros_like(norm))
        coef = coef.to(q.dtype)[..., None, None]  # (..., 1, 1)
        grad_q, grad_k, grad_v = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
        k_t = k.transpose(-2, -1)
        for i0, i1 in _ranges(n, rows):
            q_i, g_i = q[..., i0:i1, :], grad_out[..., i0:i1, :]  # (..., b, D)
            for j0, j1 in _ranges(n, cols):
                m = q_i @ k_t[..., j0:j1]  # (..., b, c)
                s = torch.relu(m)
                grad_v[..., j0:j1, :] += s.transpose(-2, -1) @ g_i
                grad_m = (g_i @ v[..., j0:j1, :].transpose(-2, -1)).add_(s * coef)  # ∂L/∂S
                grad_m.mul_(m > 0)  # ∂L/∂M
                grad_q[..., i0:i1, :] += grad_m @ k[..., j0:j1, :]
                grad_k[..., j0:j1, :] += grad_m.transpose(-2, -1) @ q_i
        return grad_q, grad_k, grad_v, None, None


def blockwise_infsa(q: Tensor, k: Tensor, v: Tensor, *, block_size: int | None = None,
                    key_block_size: int | None = None) -> tuple[Tensor, Tensor]:
    """``U = ReLU(q kᵀ) v`` and ``‖ReLU(q kᵀ)‖_F`` without forming the ``N × N`` matrix.

    Args:
        q: queries ``(..., N, D)``.
        k: keys ``(..., N, D)``.
        v: values ``(..., N, D_v)``.
        block_size: query rows per tile (default: tiles of :data:`TILE_ELEMENTS` numbers).
        key_block_size: key columns per tile (default ``min(N, KEY_BLOCK)``).

    Returns:
        ``(U, norm)``: ``U (..., N, D_v)`` in ``v``'s dtype and ``norm (...)`` in float32 (float64
        for float64 inputs); differentiable in ``q``, ``k`` and ``v`` (the backward pass recomputes
        the tiles). Pure InfSA's output is ``ρ · U / (norm + ε)``.

    Raises:
        ValueError: for mismatched shapes or an invalid tile size.

    Example:
        >>> q, k, v = torch.randn(3, 5, 2), torch.randn(3, 5, 2), torch.randn(3, 5, 2)
        >>> u, n = blockwise_infsa(q, k, v, block_size=2, key_block_size=3)
        >>> s = (q @ k.transpose(-2, -1)).relu()
        >>> torch.allclose(u, s @ v, atol=1e-6) and torch.allclose(n, s.norm(dim=(-2, -1)))
        True
    """
    if q.shape != k.shape or q.dim() < 2 or v.shape[:-1] != q.shape[:-1]:
        raise ValueError(f"q {tuple(q.shape)}, k {tuple(k.shape)} and v {tuple(v.shape)} must be (..., N, D) "
                         "with q and k of the same shape and v with the same leading dims and N")
    batch = q.shape[:-2].numel()
    rows, cols = tile_sizes(batch, q.shape[-2], block_size=block_size, key_block_size=key_block_size)
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return BlockwiseInfSA.apply(q, k, v, rows, cols)
    return tiled_relu_product(q, k, v, rows, cols)
