"""Raw attention maps and the random baseline, on the patch grid."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from ..capture import AttentionRecord, capture_attention

__all__ = ["attention_map", "random_map", "tokens_to_grid"]

HeadFusion = Literal["mean", "max", "min"]


def tokens_to_grid(values: Tensor, record: AttentionRecord) -> Tensor:
    """Per-token values ``(B, N)`` → patch-grid map ``(B, h, w)`` (prefix tokens dropped)."""
    if record.grid is None:
        raise ValueError("the record has no patch grid; capture it from a VisionTransformer")
    h, w = record.grid
    return values[:, record.num_prefix_tokens :].reshape(values.shape[0], h, w)


def _fuse(x: Tensor, how: str) -> Tensor:
    if how == "mean":
        return x.mean(1)
    if how == "max":
        return x.amax(1)
    if how == "min":
        return x.amin(1)
    raise ValueError(f"head_fusion={how!r} must be one of ['mean', 'max', 'min']")


def attention_map(
    model: nn.Module,
    images: Tensor,
    *,
    layer: int = -1,
    head: int | None = None,
    head_fusion: HeadFusion = "mean",
    row: Literal["cls", "mean"] = "cls",
    records: list[AttentionRecord] | None = None,
) -> Tensor:
    """Raw attention of one layer: the CLS row (or the mean row) of the matrix the layer applies.

    softmax: ``softmax(q kᵀ/√D)``; pure InfSA: ``Â``; Linear-InfSA: ``1·aᵀ`` (every row is ``a``).

    Args:
        layer: layer index (negative counts from the end; default the last layer).
        head: one head, or ``None`` to fuse heads with ``head_fusion``.
        row: ``"cls"`` (needs a CLS token) or ``"mean"`` (mean over all query rows).
        records: records from :func:`~infsa_viz.capture.capture_attention` (captured if omitted).

    Returns:
        ``(B, h, w)`` attention to each patch token.
    """
    if records is None:
        _, records = capture_attention(model, images)
    rec = _select_layer(records, layer)
    if row == "cls" and rec.num_prefix_tokens == 0:
        raise ValueError("row='cls' needs a model with a CLS token; this one mean-pools (use row='mean')")
    if row not in ("cls", "mean"):
        raise ValueError(f"row={row!r} must be 'cls' or 'mean'")
    A = rec.attention_matrix()  # (B, H, N, N)
    values = A[:, :, 0] if row == "cls" else A.mean(2)  # (B, H, N)
    values = values[:, _check_head(head, values.shape[1])][:, None] if head is not None else values
    return tokens_to_grid(_fuse(values, head_fusion), rec)


def _check_head(head: int, num_heads: int) -> int:
    if not -num_heads <= head < num_heads:
        raise ValueError(f"head={head} is out of range for {num_heads} heads")
    return head


def _select_layer(records: list[AttentionRecord], layer: int) -> AttentionRecord:
    if not -len(records) <= layer < len(records):
        raise ValueError(f"layer={layer} is out of range for a model with {len(records)} layers")
    return records[layer]


def random_map(images: Tensor, grid: tuple[int, int], *, seed: int = 0) -> Tensor:
    """Seeded uniform random map ``(B, h, w)``: the chance baseline for every metric."""
    g = torch.Generator().manual_seed(seed)
    return torch.rand(images.shape[0], *grid, generator=g)
