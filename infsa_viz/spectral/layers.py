"""Maps across layers: attention rollout and the Neumann-across-layers series.

Product order: layer ``1`` is the first block. ``Â⁽ᵗ⁾ ⋯ Â⁽¹⁾`` maps input tokens (columns) to
the tokens after block ``t`` (rows), so the first layer stands rightmost, as in
``x⁽ᵗ⁾ = Â⁽ᵗ⁾ ⋯ Â⁽¹⁾ x⁽⁰⁾``. A row of the product (CLS row, or the mean row) says how much each
input token contributes to that output token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

import torch
from torch import Tensor

from ..capture import AttentionRecord
from .markov import Start, _start_label, start_vector
from .operators import SpectralOperator, as_operator
from .radius import GammaLike, as_gamma

__all__ = ["NeumannResult", "fuse_heads", "neumann_across_layers", "rollout"]

HeadFusion = Literal["mean", "max", "min"]


def fuse_heads(A: Tensor, how: HeadFusion = "mean") -> Tensor:
    """Fuse heads of ``A (B, H, N, N)`` into ``(B, N, N)`` by mean, max or min."""
    if how not in ("mean", "max", "min"):
        raise ValueError(f"head_fusion={how!r} must be one of ['mean', 'max', 'min']")
    if A.dim() != 4:
        raise ValueError(f"attention has shape {tuple(A.shape)}; expected (B, H, N, N)")
    if how == "mean":
        return A.mean(dim=1)
    return A.amax(dim=1) if how == "max" else A.amin(dim=1)


def _layer_matrix(layer: AttentionRecord | Tensor, matrix: str) -> Tensor:
    if isinstance(layer, AttentionRecord):
        return layer.attention_matrix() if matrix == "native" else layer.infsa_matrix()
    if isinstance(layer, Tensor):
        return layer
    raise TypeError(f"layers must hold AttentionRecord or (B, H, N, N) tensors, got {type(layer).__name__}")


def rollout(
    layers: Sequence[AttentionRecord | Tensor],
    *,
    head_fusion: HeadFusion = "mean",
    add_residual: bool = True,
    matrix: Literal["native", "infsa"] = "native",
) -> Tensor:
    """Attention rollout (Abnar & Zuidema, ACL 2020): ``R = Ã⁽ᴸ⁾ ⋯ Ã⁽¹⁾``.

    Per layer: fuse heads, ``Ã = 0.5·A + 0.5·I`` (residual, when ``add_residual``), re-normalise
    rows to sum 1 (all-zero rows stay zero), then multiply, later layers on the left.

    Args:
        layers: records (in layer order) or ``(B, H, N, N)`` tensors.
        head_fusion: ``"mean"`` (default), ``"max"`` or ``"min"`` over heads.
        add_residual: add the identity for the skip connection (default ``True``).
        matrix: for records: ``"native"`` (softmax ``P``, pure ``Â``, Linear-InfSA ``1·aᵀ``) or
            ``"infsa"`` (``Â`` from each layer's q, k).

    Returns:
        ``(B, N, N)``; row ``i`` is output token ``i``'s mix of input tokens (``R[:, 0]`` for CLS).

    Example:
        >>> rollout([torch.eye(2).expand(1, 1, 2, 2)]).shape
        torch.Size([1, 2, 2])
    """
    if matrix not in ("native", "infsa"):
        raise ValueError(f"matrix={matrix!r} must be 'native' or 'infsa'")
    if len(layers) == 0:
        raise ValueError("layers is empty; rollout needs at least one layer")
    fused_layers = []
    for layer in layers:
        fused = fuse_heads(_layer_matrix(layer, matrix), head_fusion)  # (B, N, N)
        fused = fused.double() if fused.dtype == torch.float64 else fused.float()
        if add_residual:
            eye = torch.eye(fused.shape[-1], dtype=fused.dtype, device=fused.device)
            fused = 0.5 * fused + 0.5 * eye
        fused_layers.append(fused / fused.sum(-1, keepdim=True).clamp_min(torch.finfo(fused.dtype).tiny))
    result = fused_layers[0]
    for fused in fused_layers[1:]:
        if fused.shape != result.shape:
            raise ValueError(f"layer shapes differ: {tuple(result.shape)} vs {tuple(fused.shape)}")
        result = fused @ result.to(fused.dtype)  # (B, N, N), later layers on the left
    return result


@dataclass
class NeumannResult:
    """``sᵀ Σ_{t=1..L} (γ₁⋯γ_t) A⁽ᵗ⁾ ⋯ A⁽¹⁾`` (plus ``sᵀ`` with ``include_start``).

    Attributes:
        vector: ``(*batch, N)`` the map over input tokens.
        gammas: per-layer discounts, each ``(*batch)``.
        matrices: per-layer operator descriptions.
        start: the read-out row (``"cls"``, ``"uniform"`` = mean row, an index or ``"tensor"``).
        include_start: whether the ``t = 0`` term ``sᵀ`` is added.
    """

    vector: Tensor
    gammas: list[Tensor]
    matrices: list[str]
    start: str
    include_start: bool

    def metadata(self) -> dict[str, Any]:
        return {
            "quantity": "Neumann across layers s^T sum_t (g_1...g_t) A^(t)...A^(1)",
            "matrix": self.matrices,
            "side": "left (row vector read-out)",
            "gamma": [g.flatten()[0].item() if bool((g == g.flatten()[0]).all()) else g.flatten().tolist()
                      for g in self.gammas],
            "start": self.start,
            "include_start": self.include_start,
            "order": "layer 1 rightmost: A^(t)...A^(1)",
        }

    def describe(self) -> str:
        m = self.metadata()
        return (
            f"Neumann series across {len(self.gammas)} layers read from start={m['start']} "
            f"with gammas {m['gamma']} (include_start={m['include_start']}) on {m['matrix'][0]}"
        )


def neumann_across_layers(
    operators: Sequence[SpectralOperator | Tensor],
    gammas: GammaLike | Sequence[GammaLike],
    start: Start = "cls",
    *,
    include_start: bool = False,
) -> NeumannResult:
    """``m = sᵀ Σ_{t=1..L} (γ₁ γ₂ ⋯ γ_t) A⁽ᵗ⁾ ⋯ A⁽¹⁾`` with vector products only.

    With one ``γ`` for every layer the coefficient is ``γᵗ``. Computed by Horner's rule from the
    top layer down: ``x ← γ_l (s + x)ᵀ A⁽ˡ⁾`` for ``l = L, …, 1``, i.e. ``L`` row-vector products
    (``O(L·N)`` for rank-one Linear-InfSA operators, blockwise ``O(L·N²)`` for InfSA), never an
    ``N × N`` product of layers.

    Args:
        operators: per-layer operators or ``(..., N, N)`` tensors, first layer first, all with
            the same batch shape (fuse or select heads beforehand).
        gammas: one discount for all layers, or one per layer (float or tensor broadcastable to
            the batch shape).
        start: read-out row: ``"cls"`` (token 0, default), ``"uniform"`` (the mean row), an index
            or a tensor ``(..., N)``.
        include_start: add the ``t = 0`` term ``sᵀ`` (default ``False``).

    Returns:
        :class:`NeumannResult` with ``vector (*batch, N)``.
    """
    ops = [as_operator(op) for op in operators]
    if not ops:
        raise ValueError("operators is empty; the series needs at least one layer")
    first = ops[0]
    for index, op in enumerate(ops):
        if op.batch_shape != first.batch_shape or op.num_tokens != first.num_tokens:
            raise ValueError(
                f"layer {index} has batch {tuple(op.batch_shape)} and N={op.num_tokens}; expected "
                f"batch {tuple(first.batch_shape)} and N={first.num_tokens} like layer 0"
            )
    if isinstance(gammas, (list, tuple)):
        if len(gammas) != len(ops):
            raise ValueError(f"gammas has {len(gammas)} entries; expected one per layer ({len(ops)})")
        per_layer = list(gammas)
    else:
        per_layer = [gammas] * len(ops)
    g = [as_gamma(value, first.batch_shape, dtype=first.dtype, device=first.device, name=f"gammas[{i}]")
         for i, value in enumerate(per_layer)]
    s = start_vector(start, first.batch_shape, first.num_tokens, dtype=first.dtype, device=first.device)
    x = torch.zeros_like(s)  # (..., N)
    for op, gamma in zip(reversed(ops), reversed(g)):
        x = gamma.unsqueeze(-1) * op.rmatvec(s + x)  # (..., N)
    return NeumannResult(
        vector=x + s if include_start else x,
        gammas=g,
        matrices=[op.description for op in ops],
        start=_start_label(start),
        include_start=include_start,
    )
