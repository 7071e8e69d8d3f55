"""The attention formulas as functions of per-head queries and keys, without the layers.

:mod:`infsa_viz.model.attention` builds its modules on these; capture, spectral analysis and the maps
call them directly to rebuild the matrix a layer applied:

* :func:`softmax_matrix`: ``softmax(q kᵀ / √D)``, row-stochastic.
* :func:`infsa_affinity`: pure InfSA's ``Â = ReLU(q kᵀ) / (‖ReLU(q kᵀ)‖_F + ε)`` per (batch, head)
  (Roffo & Palmer, arXiv 2603.00175).
* :func:`linear_infsa_weights`: Linear-InfSA's ``α``, ``q̄`` and key scores ``a`` in O(N·D).
* :func:`half_gradient`: AttnLRP's uniform rule for a product of two activations.

All are importable from :mod:`infsa_viz.model` as well.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .blockwise import EPS

__all__ = [
    "accumulation_dtype",
    "check_qk",
    "half_gradient",
    "infsa_affinity",
    "linear_infsa_weights",
    "softmax_matrix",
]


def accumulation_dtype(dtype: torch.dtype) -> torch.dtype:
    """float64 stays float64; float32, bfloat16 and float16 compute in float32."""
    return torch.promote_types(dtype, torch.float32)


def half_gradient(z: Tensor) -> Tensor:
    """Same value, half the gradient: AttnLRP's uniform rule for a product of two activations
    (Achtibat et al., ICML 2024), so each factor of ``q kᵀ``, ``A v`` or ``q̄·k`` gets half the relevance."""
    return 0.5 * z + 0.5 * z.detach()


def check_qk(q: Tensor, k: Tensor) -> None:
    """Raise ``ValueError`` unless ``q`` and ``k`` are floating ``(..., N, D)`` tensors of one shape."""
    for name, t in (("q", q), ("k", k)):
        if not isinstance(t, Tensor) or not t.is_floating_point() or t.dim() < 2:
            kind = f"{t.dtype} tensor of shape {tuple(t.shape)}" if isinstance(t, Tensor) else type(t).__name__
            raise ValueError(f"{name} is a {kind}; expected a floating-point (..., N, D) tensor")
    if q.shape != k.shape:
        raise ValueError(f"q has shape {tuple(q.shape)} and k {tuple(k.shape)}; expected the same (..., N, D)")


def infsa_affinity(q: Tensor, k: Tensor, *, eps: float = EPS) -> Tensor:
    """Dense InfSA matrix ``Â = ReLU(q kᵀ) / (‖ReLU(q kᵀ)‖_F + ε)``, normalised per (B, H).

    Args:
        q: queries ``(..., N, D)``.
        k: keys ``(..., N, D)``.
        eps: added to the Frobenius norm so an all-zero affinity gives ``Â = 0``, not NaN.

    Returns:
        ``(..., N, N)`` non-negative matrix with Frobenius norm ≤ 1, in ``q``'s dtype. Computed in
        the input's dtype for float32 and float64 (float64 stays float64-accurate); half types
        (bfloat16, float16) are computed in float32, products included, and rounded at the end.
    """
    check_qk(q, k)
    acc = accumulation_dtype(q.dtype)
    scores = F.relu(q.to(acc) @ k.to(acc).transpose(-2, -1))  # (..., N, N)
    norm = torch.linalg.vector_norm(scores, dim=(-2, -1), keepdim=True)  # (..., 1, 1)
    return (scores / (norm + eps)).to(q.dtype)


def softmax_matrix(q: Tensor, k: Tensor) -> Tensor:
    """Row-stochastic softmax attention ``softmax(q kᵀ / √D)`` of shape ``(..., N, N)``.

    Half types (bfloat16, float16) are computed in float32 and rounded at the end, so large
    activations cannot overflow ``q kᵀ`` into ``inf`` (and the softmax into NaN).
    """
    check_qk(q, k)
    acc = accumulation_dtype(q.dtype)
    scale = q.shape[-1] ** -0.5
    return torch.softmax((q.to(acc) @ k.to(acc).transpose(-2, -1)) * scale, dim=-1).to(q.dtype)


def linear_infsa_weights(q: Tensor, k: Tensor, *, eps: float = EPS) -> tuple[Tensor, Tensor, Tensor]:
    """The three quantities Linear-InfSA computes, in O(N·D) time and O(D) extra state.

    Args:
        q: queries ``(..., N, D)``.
        k: keys ``(..., N, D)``.
        eps: added to both denominators (all-zero queries or affinities give zeros, not NaN).

    Returns:
        ``(alpha, q_bar, a)``: ``alpha (..., N)`` query weights ``‖q_i‖ / Σ‖q‖``, ``q_bar (..., D)``
        the weighted mean query, and ``a (..., N)`` the normalised key scores
        ``ReLU(q̄·k_j) / (Σ ReLU(q̄·k_l) + ε)``: Linear-InfSA's estimate of the Perron vector.
        Computed in float64 for float64 inputs and in float32 otherwise; returned in ``q``'s dtype.
    """
    check_qk(q, k)
    acc = accumulation_dtype(q.dtype)
    qf, kf = q.to(acc), k.to(acc)
    q_norm = torch.linalg.vector_norm(qf, dim=-1)  # (..., N)
    alpha = q_norm / (q_norm.sum(dim=-1, keepdim=True) + eps)  # (..., N)
    q_bar = (alpha.unsqueeze(-2) @ qf).squeeze(-2)  # (..., D)
    scores = F.relu((kf @ q_bar.unsqueeze(-1)).squeeze(-1))  # (..., N)
    a = scores / (scores.sum(dim=-1, keepdim=True) + eps)  # (..., N)
    return alpha.to(q.dtype), q_bar.to(q.dtype), a.to(q.dtype)
