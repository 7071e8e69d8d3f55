"""One-call spectral maps of a model, on the patch grid, for scripts and the app.

Each ``model_*`` function runs ``capture_attention(model, images)`` once, builds the graph of
one layer (or of all layers), computes over **all** ``N`` tokens (CLS included), and only then
drops the prefix (CLS) tokens and reshapes the rest to the patch grid ``(B, h, w)``. The map is
not renormalised after the drop; the full token vector stays in :attr:`SpectralMap.tokens`.

The graph of each variant (``matrix="native"``):

* softmax: the row-stochastic ``P``; its left Perron vector is the stationary distribution,
  and visits need a user ``gamma < 1`` (``ρ(P) = 1``, no learned ``ρ``);
* pure InfSA: ``Â`` with the layer's learned ``ρ`` as ``γ``;
* Linear-InfSA: the rank-one ``1·aᵀ`` the layer applies, with its learned ``ρ``.

``matrix="infsa"`` uses ``Â`` built from the layer's own ``q``, ``k`` for every variant.
``head="mean"`` averages the heads' matrices (one chain per layer) and their ``ρ``; an int selects
one head.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, Sequence

import torch
from torch import Tensor, nn

from ..capture import AttentionRecord, capture_attention
from .layers import HeadFusion, neumann_across_layers, rollout
from .markov import Solver, expected_visits
from .operators import InfSAOperator, RankOneOperator, SoftmaxOperator, SpectralOperator, mean_over_heads
from .perron import Normalize, Side, perron_vector

__all__ = [
    "SpectralMap",
    "layer_operator",
    "model_linear_estimate",
    "model_neumann",
    "model_perron",
    "model_rollout",
    "model_visits",
]

Head = Literal["mean"] | int
Matrix = Literal["native", "infsa"]
StartRow = Literal["auto", "cls", "uniform"]


@dataclass
class SpectralMap:
    """A per-token map on the patch grid plus what it is.

    Attributes:
        map: ``(B, h, w)`` values of the patch tokens (prefix tokens dropped after computing).
        tokens: ``(B, N)`` the full vector, prefix (CLS) tokens first.
        metadata: method, layer(s), variant(s), head, matrix, side, γ, start, solver details.
    """

    map: Tensor
    tokens: Tensor
    metadata: dict[str, Any]

    def describe(self) -> str:
        """One line: which quantity of which matrix, side and γ."""
        return str(self.metadata.get("description", self.metadata))


def _check_head(head: Head, num_heads: int) -> None:
    if head == "mean":
        return
    if isinstance(head, bool) or not isinstance(head, int) or not -num_heads <= head < num_heads:
        raise ValueError(f"head={head!r} must be 'mean' or a head index in [0, {num_heads})")


def _check_matrix(matrix: Matrix) -> None:
    if matrix not in ("native", "infsa"):
        raise ValueError(f"matrix={matrix!r} must be 'native' or 'infsa'")


def layer_operator(
    record: AttentionRecord, *, head: Head = "mean", matrix: Matrix = "native",
    block_size: int | None = None,
) -> tuple[SpectralOperator, Tensor | None]:
    """The graph of one recorded layer as an operator with batch shape ``(B,)``, and its ``ρ``.

    Args:
        record: one layer's :class:`~infsa_viz.capture.AttentionRecord`.
        head: ``"mean"`` (mean of the heads' matrices) or a head index.
        matrix: ``"native"`` (what the layer applies) or ``"infsa"`` (``Â`` from its q, k).
        block_size: rows per block of the matrix-free operators (``None``: about 2 MiB).

    Returns:
        ``(operator, gamma)``: ``gamma`` is the learned ``ρ`` of that head (head mean for
        ``"mean"``) as a 0-d tensor, or ``None`` for softmax layers.
    """
    _check_head(head, record.q.shape[1])
    _check_matrix(matrix)
    pick = (lambda t: t) if head == "mean" else (lambda t: t[:, head])  # (B, H, ...) → (B, ...)
    q, k = pick(record.q), pick(record.k)
    op: SpectralOperator
    if matrix == "infsa" or record.variant == "pure_infsa":
        op = InfSAOperator(q, k, eps=record.eps, block_size=block_size)
    elif record.variant == "softmax":
        op = SoftmaxOperator(q, k, block_size=block_size)
    else:
        op = RankOneOperator(pick(record.linear_estimate()))
    if head == "mean":
        op = mean_over_heads(op)
    gamma = None
    if record.rho is not None:
        gamma = record.rho.mean() if head == "mean" else record.rho[head]
    return op, gamma


def _select(records: Sequence[AttentionRecord], layer: int) -> AttentionRecord:
    if isinstance(layer, bool) or not isinstance(layer, int) or not -len(records) <= layer < len(records):
        raise ValueError(
            f"layer={layer!r} must be an index in [0, {len(records)}) (negatives count from the end)"
        )
    return records[layer]


def _start(start: StartRow, record: AttentionRecord) -> str:
    if start not in ("auto", "cls", "uniform"):
        raise ValueError(f"start={start!r} must be 'auto', 'cls' or 'uniform'")
    if start == "auto":
        return "cls" if record.num_prefix_tokens else "uniform"
    if start == "cls" and not record.num_prefix_tokens:
        raise ValueError("start='cls' needs a model with a CLS token (pool='cls'); use start='uniform'")
    return start


def _grid_map(tokens: Tensor, record: AttentionRecord, metadata: dict[str, Any]) -> SpectralMap:
    """Drop the prefix tokens of ``tokens (B, N)`` and reshape to ``(B, h, w)``."""
    prefix = record.num_prefix_tokens
    patches = tokens[:, prefix:]  # (B, h·w)
    grid = record.grid
    if grid is None:
        side = math.isqrt(patches.shape[-1])
        if side * side != patches.shape[-1]:
            raise ValueError(
                f"the model does not expose patch_size and {patches.shape[-1]} patches are not a square grid"
            )
        grid = (side, side)
    metadata = {**metadata, "prefix_tokens_dropped": prefix, "grid": list(grid)}
    return SpectralMap(map=patches.reshape(tokens.shape[0], *grid), tokens=tokens, metadata=metadata)


def _gamma_value(gamma: Tensor | float) -> float | list[float]:
    g = torch.as_tensor(gamma).detach().flatten()
    return float(g[0]) if bool((g == g[0]).all()) else g.tolist()


def model_visits(
    model: nn.Module, images: Tensor, *, layer: int = -1, head: Head = "mean",
    gamma: float | Tensor | None = None, start: StartRow = "auto", matrix: Matrix = "native",
    include_start: bool = True, solver: Solver = "auto", tol: float = 1e-10, block_size: int | None = None,
) -> SpectralMap:
    """Expected visits ``sᵀ(I − γA)⁻¹`` of one layer's graph, on the patch grid.

    Args:
        model: an InfSA-viz model (any module with :class:`~infsa_viz.attention.Attention` layers).
        images: ``(B, C, H, W)``.
        layer: layer index (default ``-1``, the last).
        head: ``"mean"`` (default) or a head index.
        gamma: discount; default the layer's learned ``ρ`` (required for softmax layers).
        start: ``"cls"``, ``"uniform"`` or ``"auto"`` (default: CLS if the model has one).
        matrix: ``"native"`` (default) or ``"infsa"``.
        include_start: count the ``t = 0`` visit (default ``True``).
        solver, tol, block_size: see :func:`~infsa_viz.spectral.markov.expected_visits`.

    Returns:
        :class:`SpectralMap` ``(B, h, w)``.

    Raises:
        ValueError: bad options, no ``gamma`` for a softmax layer, or ``γ·ρ(A) ≥ 1``.
    """
    _, records = capture_attention(model, images)
    record = _select(records, layer)
    op, learned = layer_operator(record, head=head, matrix=matrix, block_size=block_size)
    source = "user" if gamma is not None else "learned rho"
    if gamma is None:
        if learned is None:
            raise ValueError(
                f"layer {record.layer} is {record.variant} and has no learned rho: pass gamma < 1 "
                "(the row-stochastic softmax matrix has spectral radius 1)"
            )
        gamma = learned
    start_row = _start(start, record)
    result = expected_visits(op, gamma, start_row, include_start=include_start, solver=solver,
                             tol=tol)
    meta = {**result.metadata(), "method": "visits", "layer": record.layer, "variant": record.variant,
            "head": head, "gamma": _gamma_value(result.gamma),
            "gamma_source": source,
            "description": f"layer {record.layer} ({record.variant}), head {head}: {result.describe()}"}
    return _grid_map(result.visits, record, meta)


def model_perron(
    model: nn.Module, images: Tensor, *, layer: int = -1, head: Head = "mean", side: Side = "left",
    matrix: Matrix = "native", normalize: Normalize = "sum",
    method: Literal["auto", "dense", "power"] = "auto",
) -> SpectralMap:
    """Perron vector of one layer's graph on the patch grid (left = stationary for softmax).

    Args:
        model, images, layer, head, matrix: as in :func:`model_visits`.
        side: ``"left"`` (default) or ``"right"``.
        normalize: ``"sum"`` (default, over all N tokens before the CLS drop) or ``"l2"``.
        method: see :func:`~infsa_viz.spectral.perron.perron_vector`.
    """
    _, records = capture_attention(model, images)
    record = _select(records, layer)
    op, _ = layer_operator(record, head=head, matrix=matrix)
    result = perron_vector(op, side=side, normalize=normalize, method=method)
    meta = {**result.metadata(), "method": "perron", "layer": record.layer, "variant": record.variant,
            "head": head, "eigenvalue": result.eigenvalue.tolist(),
            "description": f"layer {record.layer} ({record.variant}), head {head}: {result.describe()}"}
    return _grid_map(result.vector, record, meta)


def model_linear_estimate(
    model: nn.Module, images: Tensor, *, layer: int = -1, head: Head = "mean"
) -> SpectralMap:
    """Linear-InfSA's Perron estimate ``a`` from one layer's q, k (any variant), on the grid.

    ``head="mean"`` averages the heads' ``a`` (each sums to 1, so the mean does too).
    """
    _, records = capture_attention(model, images)
    record = _select(records, layer)
    _check_head(head, record.q.shape[1])
    a = record.linear_estimate()  # (B, H, N)
    tokens = a.mean(1) if head == "mean" else a[:, head]
    meta = {"method": "linear_estimate", "layer": record.layer, "variant": record.variant, "head": head,
            "matrix": "Linear-InfSA a = ReLU(q_bar k^T)/sum, from the layer's q, k",
            "side": "left (estimate of the left Perron vector of A_hat)", "normalize": "sum",
            "description": f"layer {record.layer} ({record.variant}), head {head}: Linear-InfSA estimate a "
                           "of the left Perron vector of Â"}
    return _grid_map(tokens, record, meta)


def model_rollout(
    model: nn.Module, images: Tensor, *, head_fusion: HeadFusion = "mean", add_residual: bool = True,
    matrix: Matrix = "native", start: StartRow = "auto",
) -> SpectralMap:
    """Attention rollout over all layers, read from the CLS row or the mean row.

    See :func:`~infsa_viz.spectral.layers.rollout` (dense ``N × N`` per layer).
    """
    _check_matrix(matrix)
    _, records = capture_attention(model, images)
    start_row = _start(start, records[0])
    joint = rollout(records, head_fusion=head_fusion, add_residual=add_residual, matrix=matrix)  # (B, N, N)
    tokens = joint[:, 0] if start_row == "cls" else joint.mean(1)
    meta = {"method": "rollout", "layers": len(records), "variants": [r.variant for r in records],
            "head_fusion": head_fusion, "add_residual": add_residual, "matrix": matrix, "start": start_row,
            "side": "row of R = A'(L)...A'(1)",
            "description": f"attention rollout over {len(records)} layers ({matrix} matrices, heads fused by "
                           f"{head_fusion}, residual={add_residual}), {start_row} row"}
    return _grid_map(tokens, records[0], meta)


def model_neumann(
    model: nn.Module, images: Tensor, *, gamma: float | Tensor | Sequence[float | Tensor] | None = None,
    head: Head = "mean", start: StartRow = "auto", matrix: Matrix = "native", include_start: bool = False,
    block_size: int | None = None,
) -> SpectralMap:
    """Neumann series across layers ``sᵀ Σ_t (γ₁⋯γ_t) A⁽ᵗ⁾⋯A⁽¹⁾`` on the patch grid.

    Args:
        gamma: one discount for all layers or one per layer; default each layer's learned ``ρ``
            (head mean), which softmax layers lack (then ``gamma`` is required).
        head, start, matrix, block_size: as in :func:`model_visits`.
        include_start: add the ``t = 0`` term ``sᵀ`` (default ``False``).
    """
    _, records = capture_attention(model, images)
    start_row = _start(start, records[0])
    pairs = [layer_operator(r, head=head, matrix=matrix, block_size=block_size) for r in records]
    if gamma is None:
        missing = [r.layer for r, (_, g) in zip(records, pairs) if g is None]
        if missing:
            raise ValueError(f"layers {missing} have no learned rho (softmax): pass gamma < 1")
        gammas: Any = [g for _, g in pairs]
    else:
        gammas = gamma
    result = neumann_across_layers([op for op, _ in pairs], gammas, start_row, include_start=include_start)
    meta = {**result.metadata(), "method": "neumann", "layers": len(records),
            "variants": [r.variant for r in records], "head": head,
            "gamma_source": "learned rho" if gamma is None else "user",
            "description": f"head {head}: {result.describe()}"}
    return _grid_map(result.vector, records[0], meta)
