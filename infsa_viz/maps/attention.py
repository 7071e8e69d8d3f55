"""Maps read from the attention matrices themselves: one layer's row, and attention rollout."""

from __future__ import annotations

from typing import Any, Literal, Sequence

import torch
from torch import Tensor

from ..estimate import TILE_BYTES, Estimate, Workload
from ..forward import ForwardRecord
from ..model.capture import AttentionRecord
from ..model.operators.base import DENSE_BUDGET
from .base import MapMethod, register, select_layer, tokens_to_grid

__all__ = ["AttentionMap", "Rollout", "fuse_heads", "rollout"]

HeadFusion = Literal["mean", "max", "min"]
FUSIONS: tuple[str, ...] = ("mean", "max", "min")


def fuse_heads(A: Tensor, how: HeadFusion = "mean") -> Tensor:
    """Fuse heads of ``A (B, H, ...)`` into ``(B, ...)`` by mean, max or min."""
    if how not in FUSIONS:
        raise ValueError(f"head={how!r} must be one of {list(FUSIONS)} or a head index")
    if how == "mean":
        return A.mean(dim=1)
    return A.amax(dim=1) if how == "max" else A.amin(dim=1)


def _pick_heads(values: Tensor, head: HeadFusion | int) -> Tensor:
    """``(B, H, ...)`` → ``(B, ...)``: one head by index, or the heads fused."""
    if isinstance(head, int) and not isinstance(head, bool):
        if not -values.shape[1] <= head < values.shape[1]:
            raise ValueError(f"head={head} is out of range for {values.shape[1]} heads")
        return values[:, head]
    return fuse_heads(values, head)


@register
class AttentionMap(MapMethod):
    """Raw attention of one layer: a row of the matrix the layer applies, heads fused or one head.

    softmax: ``softmax(q kᵀ/√D)``; pure InfSA: ``Â``; Linear-InfSA: ``1·aᵀ`` (every row is ``a``).
    ``row="cls"`` reads what the CLS token attends to (needs a CLS token), ``"mean"`` the mean row.
    The row is read from the dense ``(B, H, N, N)`` matrix while it holds at most
    :data:`~infsa_viz.model.operators.base.DENSE_BUDGET` numbers, and matrix-free above (``sᵀA``
    from ``q`` and ``k`` in tiles, :meth:`~infsa_viz.model.attention.Attention.graph`): the same row to
    float tolerance, in ``O(tile + N)`` memory.
    """

    name = "attention"
    family = "attention"
    description = "raw attention of one layer: CLS (or mean) row, heads fused"
    reference = "the attention matrix itself (e.g. Dosovitskiy et al. 2021, Fig. 6)"
    defaults = {"layer": -1, "head": "mean", "row": "cls"}
    per_layer = True
    reads_attention = True
    reads_operator = True
    cost = "1 forward; one N×N matrix per head of the chosen layer (matrix-free row above DENSE_BUDGET numbers)"

    @staticmethod
    def _dense(work: Workload) -> bool:
        return work.batch * work.heads * work.tokens**2 <= DENSE_BUDGET

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        base = work.forward() + work.capture()
        if self._dense(work):
            return Estimate(base + work.square(2), "one forward, every layer's q, k and a (B, H, N, N) matrix with "
                                                   "its scores")
        return Estimate(base + TILE_BYTES + work.vectors(2 * work.heads),
                        "one forward, every layer's q, k and the row from q, k in tiles (matrix-free)")

    def _compute(self, forward, options):
        record = select_layer(forward.attention, options["layer"])
        row = options["row"]
        if row not in ("cls", "mean"):
            raise ValueError(f"row={row!r} must be 'cls' or 'mean'")
        if row == "cls" and record.num_prefix_tokens == 0:
            raise ValueError("row='cls' needs a model with a CLS token; this one mean-pools (use row='mean')")
        metadata = {"variant": record.variant, "layer": record.layer,
                    "matrix": f"what layer {record.layer} applies ({record.variant}), without rho"}
        B, H, N, _ = record.q.shape
        if B * H * N * N <= DENSE_BUDGET:
            A = record.attention_matrix()  # (B, H, N, N)
            values = A[:, :, 0] if row == "cls" else A.mean(2)  # (B, H, N)
        else:  # sᵀA from q and k in tiles: s = e_0 (the CLS row) or 1/N (the mean row)
            op = record.attention.graph(record.q, record.k, eps=record.eps)
            start = torch.zeros(N, dtype=op.dtype) if row == "cls" else torch.full((N,), 1.0 / N, dtype=op.dtype)
            if row == "cls":
                start[0] = 1.0
            values = op.rmatvec(start).to(record.q.dtype)  # (B, H, N)
            metadata["computed"] = "matrix-free: the row from q and k in tiles"
        tokens = _pick_heads(values, options["head"])  # (B, N)
        return tokens_to_grid(tokens, record), metadata, None


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
    discard_ratio: float = 0.0,
) -> Tensor:
    """Attention rollout (Abnar & Zuidema, ACL 2020): ``R = Ã⁽ᴸ⁾ ⋯ Ã⁽¹⁾``.

    Per layer: fuse heads, zero the ``discard_ratio`` share of smallest entries of the fused
    ``(N, N)`` matrix except ``A[0, 0]`` (as vit-explain does, Gildenblat 2020), ``Ã = 0.5·A + 0.5·I``
    (residual, when ``add_residual``), re-normalise rows to sum 1 (all-zero rows stay zero), then
    multiply, later layers on the left.

    Args:
        layers: records (in layer order) or ``(B, H, N, N)`` tensors.
        head_fusion: ``"mean"`` (default), ``"max"`` or ``"min"`` over heads.
        add_residual: add the identity for the skip connection (default ``True``).
        matrix: for records: ``"native"`` (softmax ``P``, pure ``Â``, Linear-InfSA ``1·aᵀ``) or
            ``"infsa"`` (``Â`` from each layer's q, k).
        discard_ratio: share in ``[0, 1)`` of each fused matrix's smallest entries set to 0
            (default 0: none; ties broken by position).

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
    if isinstance(discard_ratio, bool) or not isinstance(discard_ratio, (int, float)) or not 0 <= discard_ratio < 1:
        raise ValueError(f"discard_ratio={discard_ratio!r} must be a number in [0, 1)")
    result: Tensor | None = None
    for layer in layers:
        A = _layer_matrix(layer, matrix)
        if A.dim() != 4:
            raise ValueError(f"attention has shape {tuple(A.shape)}; expected (B, H, N, N)")
        fused = fuse_heads(A, head_fusion)  # (B, N, N)
        fused = fused.double() if fused.dtype == torch.float64 else fused.float()
        if discard_ratio > 0:
            fused = _discard_smallest(fused, discard_ratio)
        if add_residual:
            eye = torch.eye(fused.shape[-1], dtype=fused.dtype, device=fused.device)
            fused = 0.5 * fused + 0.5 * eye
        fused = fused / fused.sum(-1, keepdim=True).clamp_min(torch.finfo(fused.dtype).tiny)
        if result is not None and fused.shape != result.shape:
            raise ValueError(f"layer shapes differ: {tuple(result.shape)} vs {tuple(fused.shape)}")
        result = fused if result is None else fused @ result.to(fused.dtype)  # later layers on the left
    return result  # type: ignore[return-value]


def _discard_smallest(fused: Tensor, ratio: float) -> Tensor:
    """``(B, N, N)`` with the ``int(N² · ratio)`` smallest entries of each matrix set to 0, except
    entry ``(0, 0)`` (vit-explain's rule: the smallest are found among all entries, then (0, 0) kept)."""
    flat = fused.flatten(1).clone()  # (B, N·N)
    count = int(flat.shape[-1] * ratio)
    if count:
        order = torch.sort(flat, dim=-1, stable=True).indices[:, :count]  # (B, count), smallest first
        drop = torch.zeros_like(flat, dtype=torch.bool).scatter_(1, order, True)
        drop[:, 0] = False
        flat[drop] = 0
    return flat.reshape(fused.shape)


@register
class Rollout(MapMethod):
    """Attention rollout across all layers, read from the CLS row (or the mean row)."""

    name = "rollout"
    family = "attention"
    description = "attention rollout across layers (Abnar & Zuidema 2020)"
    reference = "Abnar & Zuidema, Quantifying Attention Flow in Transformers, ACL 2020"
    defaults = {"head": "mean", "add_residual": True, "matrix": "native", "start": "auto", "discard_ratio": 0.0}
    reads_attention = True
    reads_operator = True
    cost = "1 forward; one dense N×N product per layer"

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        per_layer = (work.square(3 if options.get("matrix") == "infsa" else 2) + work.square(6, heads=False)
                     + 4.0 * work.tokens**2)  # the scores, the head mean, the residual's identity and products
        if options.get("discard_ratio"):
            per_layer += work.square(5, heads=False)  # the sort's values, int64 indices and mask
        return Estimate(work.forward() + work.capture() + per_layer,
                        "every layer's q, k; per layer a (B, H, N, N) matrix and six (B, N, N) products",
                        lower="a smaller input (fewer tokens); rollout has no matrix-free path (neumann and visits do)")

    def _compute(self, forward: ForwardRecord, options: dict[str, Any]) -> tuple[Tensor, dict[str, Any], None]:
        from .spectral import start_row

        records = forward.attention
        start = start_row(options["start"], records[0])
        head = options["head"]
        if head not in FUSIONS:
            raise ValueError(f"head={head!r} must be one of {list(FUSIONS)} for rollout (heads are fused per layer)")
        joint = rollout(records, head_fusion=head, add_residual=options["add_residual"],
                        matrix=options["matrix"], discard_ratio=options["discard_ratio"])  # (B, N, N)
        tokens = joint[:, 0] if start == "cls" else joint.mean(1)
        metadata = {"variants": [r.variant for r in records], "start": start,
                    "side": "row of R = A'(L)...A'(1)"}
        return tokens_to_grid(tokens, records[0]), metadata, None
