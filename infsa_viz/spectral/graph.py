"""The token graph of one recorded attention layer, as a spectral operator.

What each variant applies is the attention class's own business
(:meth:`~infsa_viz.attention.Attention.graph`): softmax's row-stochastic ``P``, pure InfSA's
``Â``, Linear-InfSA's rank-one ``1·aᵀ``. ``matrix="infsa"`` reads every variant through InfSA's
``Â`` built from the layer's own ``q``, ``k``. ``head="mean"`` averages the heads' matrices (one
chain per layer) and their ``ρ``; an integer selects one head.
"""

from __future__ import annotations

from typing import Literal

from torch import Tensor

from ..attention import PureInfSAAttention
from ..capture import AttentionRecord
from .operators import SpectralOperator, mean_over_heads

__all__ = ["MATRICES", "UNLEARNED_GAMMA", "Head", "Matrix", "check_head", "layer_graph"]

Head = Literal["mean"] | int
Matrix = Literal["native", "infsa"]
MATRICES: tuple[str, ...] = ("native", "infsa")
#: Discount for the graph of a layer that learns no ``ρ`` (softmax) when the caller gives none:
#: a row-stochastic matrix has spectral radius 1, so a ``γ < 1`` must be chosen and stated.
UNLEARNED_GAMMA = 0.9


def check_head(head: Head, num_heads: int) -> None:
    """``ValueError`` unless ``head`` is ``"mean"`` or an index in ``[-H, H)``."""
    if head == "mean":
        return
    if isinstance(head, bool) or not isinstance(head, int) or not -num_heads <= head < num_heads:
        raise ValueError(f"head={head!r} must be 'mean' or a head index in [0, {num_heads})")


def layer_graph(
    record: AttentionRecord, *, head: Head = "mean", matrix: Matrix = "native", block_size: int | None = None,
) -> tuple[SpectralOperator, Tensor | None]:
    """The graph of one recorded layer as an operator with batch shape ``(B,)``, and its ``ρ``.

    Args:
        record: one layer's :class:`~infsa_viz.capture.AttentionRecord`.
        head: ``"mean"`` (mean of the heads' matrices) or a head index.
        matrix: ``"native"`` (what the layer applies) or ``"infsa"`` (``Â`` from its q, k).
        block_size: rows per block of the matrix-free operators (``None``: about 2 MiB).

    Returns:
        ``(operator, gamma)``: ``gamma`` is the learned ``ρ`` of that head (head mean for
        ``"mean"``) as a 0-d tensor, or ``None`` for layers that learn no discount.
    """
    check_head(head, record.q.shape[1])
    if matrix not in MATRICES:
        raise ValueError(f"matrix={matrix!r} must be one of {list(MATRICES)}")
    q, k = (record.q, record.k) if head == "mean" else (record.q[:, head], record.k[:, head])  # (B, [H,] N, D)
    attention = PureInfSAAttention if matrix == "infsa" else record.attention
    op = attention.graph(q, k, eps=record.eps, block_size=block_size)
    if head == "mean":
        op = mean_over_heads(op)
    gamma = None
    if record.rho is not None:
        gamma = record.rho.mean() if head == "mean" else record.rho[head]
    return op, gamma
