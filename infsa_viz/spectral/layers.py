"""Across layers: the Neumann series ``sᵀ Σ_t (γ₁⋯γ_t) A⁽ᵗ⁾ ⋯ A⁽¹⁾`` with vector products only.

Product order: layer ``1`` is the first block. ``Â⁽ᵗ⁾ ⋯ Â⁽¹⁾`` maps input tokens (columns) to
the tokens after block ``t`` (rows), so the first layer stands rightmost, as in
``x⁽ᵗ⁾ = Â⁽ᵗ⁾ ⋯ Â⁽¹⁾ x⁽⁰⁾``. A row of the product (CLS row, or the mean row) says how much each
input token contributes to that output token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch import Tensor

from ..model.operators import SpectralOperator, as_operator
from .markov import Start, _start_label, start_vector
from .radius import GammaLike, as_gamma

__all__ = ["NeumannResult", "neumann_across_layers"]


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
