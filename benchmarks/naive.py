"""The paper's formulas written out densely, for the side-by-side in ``python -m benchmarks throughput``.

Each operator is computed the way the equations read, forming the full ``N × N`` matrix it applies
to ``V`` (this is the baseline our fused, blockwise and O(N) paths are measured against; they must
give the same output):

* softmax: ``A = softmax(Q Kᵀ / √d)``, output ``A V``;
* pure InfSA (Roffo & Palmer, eq. for Â): ``S = ReLU(Q Kᵀ)``, ``Â = S / ‖S‖_F``, output ``ρ Â V``;
* Linear-InfSA: ``α_i = ‖q_i‖ / Σ_l ‖q_l‖``, ``q̄ = Σ_i α_i q_i``,
  ``a_j = ReLU(q̄·k_j) / Σ_l ReLU(q̄·k_l)``, and the operator it implies, the rank-one ``1 aᵀ``
  (every row ``a``), formed and applied: ``ρ (1 aᵀ) V``.

The projections are the given layer's own (same weights), so outputs can be compared directly.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from infsa_viz.model import Attention, LinearInfSAAttention, PureInfSAAttention, SoftmaxAttention

__all__ = ["NaiveAttention", "naive_matrix"]


def naive_matrix(variant: str, q: Tensor, k: Tensor, eps: float) -> Tensor:
    """The dense ``(B, H, N, N)`` matrix the variant applies to ``V`` (without ``ρ``), from the formulas."""
    if variant == SoftmaxAttention.variant:
        return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if variant == PureInfSAAttention.variant:
        s = torch.relu(q @ k.transpose(-2, -1))
        return s / (torch.sqrt((s * s).sum(dim=(-2, -1), keepdim=True)) + eps)
    if variant == LinearInfSAAttention.variant:
        norms = torch.sqrt((q * q).sum(-1))  # (B, H, N)
        alpha = norms / (norms.sum(-1, keepdim=True) + eps)
        q_bar = (alpha.unsqueeze(-1) * q).sum(-2)  # (B, H, D)
        s = torch.relu((k * q_bar.unsqueeze(-2)).sum(-1))  # (B, H, N)
        a = s / (s.sum(-1, keepdim=True) + eps)
        return torch.ones_like(a).unsqueeze(-1) * a.unsqueeze(-2)  # 1 aᵀ, (B, H, N, N)
    raise ValueError(f"variant={variant!r} has no naive formula; expected one of softmax, pure_infsa, linear_infsa")


class NaiveAttention(nn.Module):
    """``layer``'s projections around the dense formula of its variant (:func:`naive_matrix`)."""

    def __init__(self, layer: Attention) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: Tensor) -> Tensor:  # x: (B, N, C)
        layer = self.layer
        B, N, C = x.shape
        q, k, v = layer.qkv(x).reshape(B, N, 3, layer.num_heads, layer.head_dim).permute(2, 0, 3, 1, 4)
        a = naive_matrix(layer.variant, q, k, getattr(layer, "eps", 0.0))  # (B, H, N, N)
        out = a @ v  # (B, H, N, D)
        rho = layer.rho()
        if rho is not None:
            out = rho.view(1, -1, 1, 1) * out
        return layer.proj(out.transpose(1, 2).reshape(B, N, C))
