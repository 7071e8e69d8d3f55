"""Read attention out of a model from outside: ``with record_attention(model) as rec: model(x)``.

Each attention layer hands the recorder what it really computed: the per-head queries and keys
(after projection) for every variant, ``ρ`` for InfSA layers, and ``α``, ``q̄`` and ``a`` for
Linear-InfSA. Dense ``N × N`` matrices are never stored; :class:`AttentionRecord` builds them
from ``q`` and ``k`` only when asked, so capture at 100k+ tokens stays O(N·D).

This works with the fused SDPA softmax path too: the softmax matrix is recomputed from q and k.
Models from other frameworks (transformers, timm, torchvision, the official InfSA code) are
converted to our modules by :func:`infsa_viz.load_model`, so capture never depends on the kernel
(eager, SDPA, flash) the source framework would have used. A module without our attention layers
is refused with one ``RuntimeError``; a capture is never empty or stale: :attr:`AttentionRecorder.layers`
raises unless the last forward pass recorded every layer, in order.
"""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import torch
from torch import Tensor, nn

from .attention import ATTENTION_REGISTRY, Attention
from .blockwise import EPS
from .functional import infsa_affinity, linear_infsa_weights

__all__ = [
    "AttentionRecord",
    "AttentionRecorder",
    "attention_layers",
    "capture_attention",
    "record_attention",
]


@dataclass
class AttentionRecord:
    """What one attention layer computed in one forward pass (tensors detached).

    Attributes:
        layer: index of the layer in the model (0 = first block).
        variant: the layer's attention variant (a key of ``ATTENTION_REGISTRY``).
        q: queries ``(B, H, N, D)``.
        k: keys ``(B, H, N, D)``.
        rho: the learned discount ``ρ`` per head ``(H,)``; ``None`` for softmax.
        num_prefix_tokens: leading non-patch tokens (1 with a CLS token, else 0).
        grid: patch grid ``(h, w)`` with ``h·w = N − num_prefix_tokens``; ``None`` if unknown.
        linear: for Linear-InfSA layers the ``(alpha (B,H,N), q_bar (B,H,D), a (B,H,N))`` the
            layer used; ``None`` for other variants (see :meth:`linear_estimate`).
    """

    layer: int
    variant: str
    q: Tensor
    k: Tensor
    rho: Tensor | None
    num_prefix_tokens: int = 0
    grid: tuple[int, int] | None = None
    eps: float = EPS
    linear: tuple[Tensor, Tensor, Tensor] | None = field(default=None, repr=False)

    @property
    def num_tokens(self) -> int:
        return self.q.shape[-2]

    @property
    def attention(self) -> type[Attention]:
        """The layer's attention class (it knows what the variant applies)."""
        return ATTENTION_REGISTRY[self.variant]

    def attention_matrix(self) -> Tensor:
        """The dense matrix this layer applies to ``v`` (without ``ρ``), ``(B, H, N, N)``.

        softmax: the row-stochastic ``softmax(q kᵀ/√D)``; pure InfSA: ``Â``; Linear-InfSA: the
        rank-1 operator ``1·aᵀ`` (every row equals ``a``). O(N²) memory: only for moderate N.
        """
        return self.attention.applied_matrix(self.q, self.k, eps=self.eps)

    def infsa_matrix(self) -> Tensor:
        """``Â = ReLU(q kᵀ)/‖ReLU(q kᵀ)‖_F`` from this layer's q and k, ``(B, H, N, N)``.

        Defined for every variant (for softmax layers it is the InfSA reading of the same q, k).
        """
        return infsa_affinity(self.q, self.k, eps=self.eps)

    def take(self, rows: Tensor) -> AttentionRecord:
        """The record of the images at ``rows`` ``(b,)`` (the batch dimension of ``q``, ``k`` and the
        Linear-InfSA tensors indexed; ``rho`` is per head and shared)."""
        linear = None if self.linear is None else tuple(t[rows] for t in self.linear)
        return dataclasses.replace(self, q=self.q[rows], k=self.k[rows], linear=linear)  # type: ignore[arg-type]

    @staticmethod
    def join(parts: Sequence[AttentionRecord]) -> AttentionRecord:
        """One layer's records of consecutive batches as one record of all their images, in order (the
        batch dimensions of ``q``, ``k`` and the Linear-InfSA tensors joined): :meth:`take`'s inverse.

        Raises:
            ValueError: no parts, or parts of different layers, variants or token counts.
        """
        if not parts:
            raise ValueError("parts is empty; expected at least one AttentionRecord")
        first = parts[0]
        for part in parts[1:]:
            if (part.layer, part.variant, part.q.shape[1:], part.k.shape[1:], part.num_prefix_tokens, part.grid) != (
                    first.layer, first.variant, first.q.shape[1:], first.k.shape[1:], first.num_prefix_tokens,
                    first.grid) or (part.linear is None) != (first.linear is None):
                raise ValueError(f"parts hold layer {part.layer} ({part.variant}, q {tuple(part.q.shape)}) beside "
                                 f"layer {first.layer} ({first.variant}, q {tuple(first.q.shape)}); expected records "
                                 "of one layer of one model")
        if len(parts) == 1:
            return first
        linear = None if first.linear is None else tuple(torch.cat([p.linear[i] for p in parts])  # type: ignore[index]
                                                         for i in range(len(first.linear)))
        return dataclasses.replace(first, q=torch.cat([p.q for p in parts]), k=torch.cat([p.k for p in parts]),
                                   linear=linear)  # type: ignore[arg-type]

    def linear_estimate(self) -> Tensor:
        """Linear-InfSA's vector ``a`` ``(B, H, N)`` from this layer's q and k (O(N·D))."""
        if self.linear is not None:
            return self.linear[2]
        return linear_infsa_weights(self.q, self.k, eps=self.eps)[2]


class AttentionRecorder:
    """Collects :class:`AttentionRecord` objects; returned by :func:`record_attention`.

    ``records`` holds one record per layer per forward call, in call order; ``layers`` holds the
    records of the most recent forward call, indexed by layer.
    """

    def __init__(self, num_layers: int) -> None:
        self.num_layers = num_layers
        self.records: list[AttentionRecord] = []
        self._grid: tuple[int, int] | None = None
        self._prefix = 0

    @property
    def layers(self) -> list[AttentionRecord]:
        """The records of the most recent forward pass, one per layer in order.

        Raises:
            RuntimeError: nothing was recorded, or the last pass did not reach every layer (an
                interrupted forward, or a call into part of the model): an incomplete capture is
                refused rather than mixed with records of an earlier pass.
        """
        if not self.records:
            raise RuntimeError(
                "no attention was captured: run the model inside `with record_attention(model)`"
            )
        last = self.records[-self.num_layers :]
        if [r.layer for r in last] != list(range(self.num_layers)):
            raise RuntimeError(
                f"incomplete attention capture: the last forward pass recorded layers "
                f"{[r.layer for r in last]} of {self.num_layers}; run the whole model inside the block"
            )
        return last

    def __getitem__(self, layer: int) -> AttentionRecord:
        return self.layers[layer]

    def __len__(self) -> int:
        return len(self.records)


def attention_layers(model: nn.Module) -> list[Attention]:
    """The model's attention modules in forward order; ``RuntimeError`` if it has none."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model has type {type(model).__name__}; expected a torch.nn.Module (load it with "
                        "infsa_viz.load_model)")
    layers = [m for m in model.modules() if isinstance(m, Attention)]
    if not layers:
        raise RuntimeError(
            f"{type(model).__name__} has no recordable attention: it contains no "
            "infsa_viz.model.attention.Attention module. Attention is read from our modules only; load "
            "transformers, timm, torchvision or official-InfSA checkpoints with infsa_viz.load_model, "
            "which converts them"
        )
    return layers


@contextmanager
def record_attention(model: nn.Module) -> Iterator[AttentionRecorder]:
    """Record every attention layer of ``model`` during the forward passes run in the block.

    Example:
        >>> with record_attention(model) as rec:
        ...     logits = model(images)
        >>> rec[0].infsa_matrix().shape  # (B, H, N, N)

    Raises:
        RuntimeError: if ``model`` has no :class:`~infsa_viz.model.attention.Attention` module.
    """
    layers = attention_layers(model)
    index = {id(m): i for i, m in enumerate(layers)}
    recorder = AttentionRecorder(len(layers))
    patch = getattr(model, "patch_size", None)
    recorder._prefix = int(getattr(model, "num_prefix_tokens", 0))

    def on_input(_module: nn.Module, args: tuple[Any, ...]) -> None:
        x = args[0] if args else None
        if patch is not None and isinstance(x, Tensor) and x.dim() == 4:
            recorder._grid = (x.shape[-2] // patch, x.shape[-1] // patch)

    def on_attention(module: Attention, values: dict[str, Any]) -> None:
        linear = None
        if "a" in values:
            linear = tuple(values[name].detach() for name in ("alpha", "q_bar", "a"))
        rho = module.rho()
        recorder.records.append(
            AttentionRecord(
                layer=index[id(module)],
                variant=module.variant,
                q=values["q"].detach(),
                k=values["k"].detach(),
                rho=None if rho is None else rho.detach(),
                num_prefix_tokens=recorder._prefix,
                grid=recorder._grid,
                eps=getattr(module, "eps", EPS),
                linear=linear,  # type: ignore[arg-type]
            )
        )

    handle = model.register_forward_pre_hook(on_input)
    previous = [m.recorder for m in layers]
    for m in layers:
        m.recorder = on_attention
    try:
        yield recorder
    finally:
        handle.remove()
        for m, prev in zip(layers, previous):
            m.recorder = prev


def capture_attention(model: nn.Module, images: Tensor) -> tuple[Tensor, list[AttentionRecord]]:
    """Run ``model(images)`` without gradients; return ``(logits (B, classes), records per layer)``."""
    with torch.no_grad(), record_attention(model) as rec:
        logits = model(images)
    return logits, rec.layers
