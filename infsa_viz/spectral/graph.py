"""The token graph of one recorded attention layer, as a spectral operator.

What each variant applies is the attention class's own business
(:meth:`~infsa_viz.model.attention.Attention.graph`): softmax's row-stochastic ``P``, pure InfSA's
``Â``, Linear-InfSA's rank-one ``1·aᵀ``. ``matrix="infsa"`` reads every variant through InfSA's
``Â`` built from the layer's own ``q``, ``k``. ``head="mean"`` averages the heads' matrices (one
chain per layer) and their ``ρ``; an integer selects one head.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from ..model.attention import PureInfSAAttention
from ..model.capture import AttentionRecord
from ..model.operators import SpectralOperator, mean_over_heads

__all__ = ["MATRICES", "UNLEARNED_GAMMA", "Discount", "Head", "Matrix", "check_head", "layer_graph", "resolve_discount"]

Head = Literal["mean"] | int
Matrix = Literal["native", "infsa"]
MATRICES: tuple[str, ...] = ("native", "infsa")
#: Discount for the graph of a layer that learns no ``ρ`` (softmax) when the caller gives none:
#: a row-stochastic matrix has spectral radius 1, so a ``γ < 1`` must be chosen and stated.
UNLEARNED_GAMMA = 0.9


@dataclass(frozen=True, eq=False)
class Discount:
    """The discount ``γ`` of one layer's graph and where it came from.

    Attributes:
        value: ``γ``: a float, or a tensor broadcasting against the graph's batch (a learned ``ρ``).
        source: ``"given"`` (the caller chose it), ``"learned rho"`` (the layer's ``ρ``: the head's,
            or the mean of the heads' for the head-mean graph) or ``"0.9 (the layer learns no rho)"``.
    """

    value: float | Tensor
    source: str

    @property
    def learned(self) -> bool:
        return self.source == "learned rho"

    def as_float(self) -> float:
        """``γ`` as one float (the mean where it varies, e.g. over a batch)."""
        return float(torch.as_tensor(self.value, dtype=torch.float64).mean())


def resolve_discount(rho: Tensor | None, given: float | Tensor | None = None, *, head: Head = "mean") -> Discount:
    """The one rule for ``γ``: the given value; else the layer's learned ``ρ`` (that head's, or the
    heads' mean for ``head="mean"``); else :data:`UNLEARNED_GAMMA` for a layer that learns none.

    Every reader (map methods, the spectral summary, the app) calls this, so the default is
    written once.

    Args:
        rho: the layer's learned discount per head ``(H,)`` (or a scalar), or ``None``.
        given: the caller's ``γ`` (``None``: not chosen).
        head: ``"mean"`` or a head index (which ``ρ`` a per-head graph uses).
    """
    if given is not None:
        if not isinstance(given, Tensor) and (isinstance(given, bool) or not isinstance(given, (int, float))):
            raise ValueError(f"gamma={given!r} is invalid; expected a number")
        return Discount(given, "given")
    if rho is not None:
        value = rho.mean() if head == "mean" or rho.numel() == 1 else rho[head]
        return Discount(value, "learned rho")
    return Discount(UNLEARNED_GAMMA, f"{UNLEARNED_GAMMA} (the layer learns no rho)")


def check_head(head: Head, num_heads: int) -> None:
    """``ValueError`` unless ``head`` is ``"mean"`` or an index in ``[-H, H)``."""
    if head == "mean":
        return
    if isinstance(head, bool) or not isinstance(head, int) or not -num_heads <= head < num_heads:
        raise ValueError(f"head={head!r} must be 'mean' or a head index in [0, {num_heads})")


def layer_graph(
    record: AttentionRecord, *, head: Head = "mean", matrix: Matrix = "native", block_size: int | None = None,
    gamma: float | Tensor | None = None,
) -> tuple[SpectralOperator, Discount]:
    """The graph of one recorded layer as an operator with batch shape ``(B,)``, and its discount.

    Args:
        record: one layer's :class:`~infsa_viz.model.capture.AttentionRecord`.
        head: ``"mean"`` (mean of the heads' matrices) or a head index.
        matrix: ``"native"`` (what the layer applies) or ``"infsa"`` (``Â`` from its q, k).
        block_size: rows per block of the matrix-free operators (``None``: about 2 MiB).
        gamma: the caller's discount (``None``: the default rule of :func:`resolve_discount`).

    Returns:
        ``(operator, discount)``: the :class:`Discount` of that graph (:func:`resolve_discount`).
    """
    check_head(head, record.q.shape[1])
    if matrix not in MATRICES:
        raise ValueError(f"matrix={matrix!r} must be one of {list(MATRICES)}")
    q, k = (record.q, record.k) if head == "mean" else (record.q[:, head], record.k[:, head])  # (B, [H,] N, D)
    attention = PureInfSAAttention if matrix == "infsa" else record.attention
    op = attention.graph(q, k, eps=record.eps, block_size=block_size)
    if head == "mean":
        op = mean_over_heads(op)
    return op, resolve_discount(record.rho, gamma, head=head)
