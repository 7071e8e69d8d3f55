"""Attention read as a flow network or a Markov chain: attention flow (max-flow on the layered
token graph) and Transition Attention Maps (a Markov chain weighted by integrated gradients)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..estimate import Estimate, Workload, count_option
from ._explicit import explicit_attention, target_logits
from .attention import FUSIONS, fuse_heads
from .base import MapMethod, register, tokens_to_grid

__all__ = ["AttentionFlow", "TransitionAttentionMaps", "attention_flow", "residual_attention"]

#: Capacities are scaled to integers for scipy's max-flow (relative resolution 1e-9 of a row).
FLOW_SCALE = 10**9
#: The most max-flow work per image, ``L · N³`` (``N`` problems on ``L · N²`` edges): about a minute
#: on one CPU core (measured about 2e7 per second at 37 to 257 tokens; 1,025 tokens at L = 4 is 4.3e9).
MAX_FLOW_WORK = 1e9


def residual_attention(A: Tensor) -> Tensor:
    """``0.5·A + 0.5·I`` re-normalised to rows summing to 1, for ``A (B, N, N)`` (as in rollout)."""
    eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    mixed = 0.5 * A + 0.5 * eye
    return mixed / mixed.sum(-1, keepdim=True).clamp_min(torch.finfo(A.dtype).tiny)


def attention_flow(layers: list[np.ndarray], *, sink: int = 0) -> np.ndarray:
    """Max-flow from each input token to output token ``sink`` (Abnar & Zuidema, ACL 2020).

    The layered graph has a node per (layer boundary ``0..L``, token); layer ``l``'s matrix gives
    edges ``(l, j) → (l + 1, i)`` of capacity ``A_l[i, j]`` (token ``i`` reads token ``j``).
    Solved with :func:`scipy.sparse.csgraph.maximum_flow` (Dinic) on capacities scaled by
    :data:`FLOW_SCALE` and rounded to integers.

    Args:
        layers: ``L`` matrices ``(N, N)`` (one image; rows = output tokens), in layer order.
        sink: the output token (0 = CLS).

    Returns:
        ``(N,) float64`` flow value from each input token.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    L = len(layers)
    N = layers[0].shape[0]
    rows, cols, caps = [], [], []
    for l, A in enumerate(layers):
        i, j = np.nonzero(A > 0)
        rows.append(l * N + j)
        cols.append((l + 1) * N + i)
        caps.append(np.rint(A[i, j] * FLOW_SCALE).astype(np.int64))
    size = (L + 1) * N
    graph = csr_matrix((np.concatenate(caps), (np.concatenate(rows), np.concatenate(cols))), shape=(size, size))
    graph.sum_duplicates()
    graph.data = graph.data.astype(np.int64)  # scipy needs integer capacities
    target = L * N + sink
    return np.array([maximum_flow(graph, j, target).flow_value / FLOW_SCALE for j in range(N)])


@register
class AttentionFlow(MapMethod):
    """Attention flow: max-flow from each patch token to the CLS output on the layered graph of
    head-mean attention with the residual (``0.5·A + 0.5·I``, rows re-normalised)."""

    name = "attention_flow"
    family = "attention"
    description = "max-flow from each patch to the CLS output through all layers (Abnar & Zuidema 2020)"
    reference = "Abnar & Zuidema, Quantifying Attention Flow in Transformers, ACL 2020"
    defaults = {"head": "mean", "add_residual": True}
    reads_attention = True
    reads_operator = True
    cost = ("1 forward per image, then N max-flow problems per image on (L+1)·N nodes and L·N² edges "
            "(scipy Dinic, CPU; O(V²E) worst case each)")

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        edges = work.layers * float(work.tokens) ** 2
        return Estimate(work.forward() + work.capture() + work.square(2 * work.layers, heads=False, itemsize=8)
                        + work.square() + 64 * edges,
                        "every layer's (N, N) float64 matrix and the layered graph's L·N² edges",
                        work=work.layers * float(work.tokens) ** 3, limit=MAX_FLOW_WORK,
                        limit_what="its max-flow work L·N³ per image (N max-flow problems on L·N² edges)",
                        lower="a smaller input (fewer tokens): attention flow is meant for small token graphs")

    def _compute(self, forward, options):
        records, images = forward.attention, forward.inputs
        if records[0].num_prefix_tokens == 0:
            raise ValueError("attention_flow ends at the CLS token; this model mean-pools and has no CLS token")
        head = options["head"]
        if head not in FUSIONS:
            raise ValueError(f"head={head!r} must be one of {list(FUSIONS)} (heads are fused per layer)")
        mats = []
        for record in records:
            A = fuse_heads(record.attention_matrix(), head).double()  # (B, N, N)
            mats.append(residual_attention(A) if options["add_residual"] else A)
        flows = torch.stack([
            torch.from_numpy(attention_flow([m[b].numpy() for m in mats])) for b in range(images.shape[0])
        ])  # (B, N)
        metadata = {"graph": "layered: (l, j) -> (l+1, i) with capacity A_l[i, j]", "sink": "CLS after the last layer",
                    "solver": f"scipy maximum_flow (dinic), capacities x {FLOW_SCALE} rounded"}
        return tokens_to_grid(flows.float(), records[0]), metadata, None


@register
class TransitionAttentionMaps(MapMethod):
    """Transition Attention Maps (Yuan et al. 2021): the CLS state of a Markov chain over the
    layers' head-mean attention, weighted by the integrated gradient of the last attention.

    State: ``s = Ā_L[0]``; for ``l = L−1, …, start_layer + 1`` (1-based): ``s ← s + s·Ā_l``.
    Weight: ``w = E_h[(1/m Σ_k ∂y_t/∂A_L^h |_{α_k·x})⁺]``, CLS row, ``α_k = linspace(0, 1, m)``
    (``m = steps``, as the authors' code). Map: ``s ⊙ w`` on the patch tokens.
    """

    name = "tam"
    family = "gradient"
    description = "transition attention maps: Markov-chain state weighted by integrated attention gradients"
    reference = ("Yuan, Li, Xiong, Cao & Dou, Explaining Information Flow Inside Vision Transformers Using Markov "
                 "Chain, NeurIPS 2021 XAI4Debugging workshop")
    defaults = {"steps": 20, "start_layer": 0}
    explains_class = True
    reads_attention = True
    reads_operator = True
    cost = "steps + 1 forwards + steps backwards per image"

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        return Estimate(work.forward(grad=True, explicit=True) + work.layers * work.square()
                        + work.square(2, itemsize=8) + work.square(work.layers + 2, heads=False, itemsize=8),
                        "a forward with every layer's (B, H, N, N) attention and its gradient, float64 head means",
                        forwards=1 + 2 * count_option(options, "steps", 20), lower="fewer steps")

    def _compute(self, forward, options):
        model, images, target = forward.model, forward.inputs, forward.explained
        steps, start = options["steps"], options["start_layer"]
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps={steps!r} must be an integer >= 1")
        records = forward.attention
        L = len(records)
        if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start < L:
            raise ValueError(f"start_layer={start!r} must be an integer in [0, {L})")
        if records[0].num_prefix_tokens == 0:
            raise ValueError("tam reads the CLS row; this model mean-pools and has no CLS token")
        mats = [r.attention_matrix().mean(1).double() for r in records]  # (B, N, N) per layer
        state = mats[-1][:, :1]  # (B, 1, N)
        for A in reversed(mats[start:L - 1]):
            state = state + state @ A
        total = torch.zeros(records[-1].q.shape[:2] + mats[-1].shape[-2:], dtype=torch.float64)  # (B, H, N, N)
        for k in np.linspace(0, 1, steps):  # as the reference code: alpha in linspace(0, 1, steps)
            with torch.enable_grad(), explicit_attention(model) as store:
                logits = model(images * float(k))
                (grad,) = torch.autograd.grad(target_logits(logits, target), [store[-1]])
            total = total + grad.double()
        weight = (total / steps).clamp_min(0).mean(1)[:, :1]  # (B, 1, N)
        tokens = (state * weight)[:, 0]  # (B, N)
        metadata = {"state": f"CLS row of the last layer, then s <- s + s A_l for layers {L - 2}..{start}",
                    "weight": f"head mean of the positive part of the mean attention gradient over {steps} scalings linspace(0, 1)"}
        return tokens_to_grid(tokens.float(), records[0]), metadata, None
