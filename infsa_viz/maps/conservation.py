"""Relevance conservation of AttnLRP, measured: how much relevance each stage of the model passes on.

Layer-wise relevance propagation starts from the explained logit and hands relevance backwards;
a conservative rule passes on what it receives. :func:`relevance_conservation` runs the AttnLRP
pass of :class:`~infsa_viz.maps.relevance.AttnLRP` (the rules of :mod:`infsa_viz.maps._explicit`)
and reads the relevance ``R(t) = Σ t ⊙ ∂*y/∂t`` (input × modified gradient) of every tensor a stage
begins and ends with:

* ``embedding``: the pixels in, the first block's input tokens out;
* ``block i``: the block's input tokens in, its output tokens out;
* ``head``: the last block's output in, the explained logit ``y`` out (its relevance is its value);
* ``overall``: the pixels in, the logit out.

Two things absorb relevance by design, and each is measured where it happens, not inferred:

* **biases** (every ``bias`` parameter: the linear layers and LayerNorm's ``β``): the ε-rule with
  ε = 0 gives a bias ``b`` the relevance ``Σ b ⊙ ∂*y/∂b``, which no input receives;
* **softmax** (its class declares ``lrp_conserves = False``): AttnLRP's rule for softmax
  (gradient × input, Achtibat et al. 2024, Prop. 3.1) is a first-order Taylor expansion whose
  bias term keeps ``R(A) − R(q) − R(k)`` of what reaches the attention matrix ``A``. The InfSA rules
  (normalisers constant, the uniform rule on ``q kᵀ`` and ``q̄·k``) pass on all of it: for them the
  same difference is measured and reported as a check, never added back.

The position embeddings and prefix tokens (the model's own ``(1, n, C)`` parameters) are inputs of
the model beside the pixels; their relevance is read the same way.

Per stage, ``error = |R_in − R_out| / |R_out|`` is the raw conservation error (what a reader of the
map sees) and ``error_accounted = |R_in + absorbed − R_out| / |R_out|`` the error left once the
measured sinks are counted: the leak of the rules themselves, at the level of rounding for every
variant (docs/metrics.md states the figures).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from ..estimate import Estimate, Workload, check_estimate
from ..forward import ForwardRecord, check_classes
from ..model.attention import Attention
from ..model.fingerprint import require_graph
from ..targets import Target
from ._explicit import explicit_attention

__all__ = ["ConservationReport", "StageConservation", "relevance_conservation"]

DTYPES = {"float32": torch.float32, "float64": torch.float64}


@dataclass(frozen=True, eq=False)
class StageConservation:
    """Relevance into and out of one stage, per image.

    Attributes:
        name: ``"embedding"``, ``"block i"``, ``"head"`` or ``"overall"``.
        relevance_in: ``(B,)`` relevance of what the stage starts from (for the embedding and overall: the pixels).
        relevance_out: ``(B,)`` relevance of what it ends with (for the head and overall: the logit's value).
        bias: ``(B,)`` relevance its biases absorb.
        constants: ``(B,)`` relevance of the model's position embeddings and prefix tokens (embedding, overall).
        attention: ``(B,)`` ``R(A) − R(q) − R(k)`` of its attention layers: absorbed by softmax's rule;
            for the InfSA rules a measured check (zero up to rounding).
        attention_absorbs: whether ``attention`` is counted as a sink (the layer's rule declares it is
            not conservative: softmax).
    """

    name: str
    relevance_in: Tensor
    relevance_out: Tensor
    bias: Tensor
    constants: Tensor
    attention: Tensor
    attention_absorbs: bool

    @property
    def absorbed(self) -> Tensor:
        """``(B,)`` the measured sinks: biases, constants and (softmax) the attention rule's bias term."""
        return self.bias + self.constants + (self.attention if self.attention_absorbs else 0.0)

    @property
    def error(self) -> Tensor:
        """``(B,)`` raw relative error ``|R_in − R_out| / |R_out|`` (sinks not counted)."""
        return (self.relevance_in - self.relevance_out).abs() / self.relevance_out.abs()

    @property
    def error_accounted(self) -> Tensor:
        """``(B,)`` ``|R_in + absorbed − R_out| / |R_out|``: what the rules themselves lose."""
        return (self.relevance_in + self.absorbed - self.relevance_out).abs() / self.relevance_out.abs()

    def for_image(self, index: int) -> dict[str, Any]:
        """JSON-able record of image ``index``."""
        value = (lambda t: _float(t[index]))
        return {"stage": self.name, "relevance_in": value(self.relevance_in), "relevance_out": value(self.relevance_out),
                "absorbed_by_biases": value(self.bias), "constants": value(self.constants),
                "attention_rule": value(self.attention), "attention_rule_absorbs": self.attention_absorbs,
                "error": value(self.error), "error_accounted": value(self.error_accounted)}


def _float(t: Tensor) -> float | None:
    v = float(t)
    return float(f"{v:.6g}") if math.isfinite(v) else None


@dataclass(frozen=True, eq=False)
class ConservationReport:
    """The conservation of one AttnLRP pass: every stage and the whole model, per image.

    Attributes:
        dtype: the precision the pass ran in (``"float32"`` or ``"float64"``).
        target: ``(B,)`` the explained classes.
        logit: ``(B,)`` the explained logits.
        stages: embedding, every block, head, in forward order.
        overall: pixels in, logit out, every sink of the model counted.
    """

    dtype: str
    target: Tensor
    logit: Tensor
    stages: list[StageConservation]
    overall: StageConservation

    @property
    def blocks(self) -> list[StageConservation]:
        return [s for s in self.stages if s.name.startswith("block")]

    def max_error(self, *, accounted: bool = True, blocks_only: bool = True) -> float:
        """The largest relative error over images and stages (the blocks only by default)."""
        stages = self.blocks if blocks_only else [*self.stages, self.overall]
        errors = torch.stack([s.error_accounted if accounted else s.error for s in stages])
        return float(errors.max())

    def for_image(self, index: int) -> dict[str, Any]:
        """JSON-able record of image ``index``."""
        blocks = self.blocks
        worst = (lambda key: _float(torch.stack([getattr(s, key)[index] for s in blocks]).max()) if blocks else None)
        return {"dtype": self.dtype, "target": int(self.target[index]), "logit": _float(self.logit[index]),
                "blocks_max_error": worst("error"), "blocks_max_error_accounted": worst("error_accounted"),
                "rule": "AttnLRP (maps/_explicit.py); error = |R_in - R_out| / |R_out|, error_accounted adds the "
                        "measured sinks (biases, position embeddings and prefix tokens, softmax's Taylor bias)",
                "stages": [s.for_image(index) for s in self.stages], "overall": self.overall.for_image(index)}


def _token_constants(model: nn.Module) -> list[nn.Parameter]:
    """The model's own ``(1, n, C)`` parameters: position embeddings, CLS / distillation / register tokens."""
    return [p for p in model._parameters.values() if p is not None and p.dim() == 3 and p.shape[0] == 1]


def relevance_conservation(model: nn.Module | ForwardRecord, images: Tensor | None = None, *,
                           target: Target | str | int | Tensor | None = None, labels: Any = None,
                           dtype: str = "float64") -> ConservationReport:
    """Measure how much relevance each stage of an AttnLRP pass conserves (see the module docstring).

    Args:
        model: a :class:`~infsa_viz.model.vit.VisionTransformer` (with ``images``) or a
            :class:`~infsa_viz.forward.ForwardRecord` (its images and explained classes).
        images: ``(B, C, H, W)`` preprocessed images, with a model only.
        target: with a model only: the class to explain (as :meth:`MapMethod.attribute
            <infsa_viz.maps.MapMethod.attribute>`; default the prediction).
        labels: with a model only: ``(B,)`` labels, for ``target="label"``.
        dtype: ``"float64"`` (default: a float64 copy of the model) or ``"float32"``.

    Returns:
        A :class:`ConservationReport`.

    Raises:
        ValueError: bad ``dtype``, a model without ``blocks``, a layer whose class does not describe what it
            computes (:func:`~infsa_viz.model.fingerprint.require_graph`), or a pass that does not fit in memory.
    """
    if dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r} must be one of {list(DTYPES)}")
    if isinstance(model, ForwardRecord):
        if images is not None or target is not None or labels is not None:
            raise ValueError("a ForwardRecord carries its images, labels and target; pass none of them")
        record = model
    elif not isinstance(images, Tensor) or images.dim() != 4:
        raise ValueError(f"images has type {type(images).__name__}; expected a (B, C, H, W) tensor with a model "
                         "(or pass a ForwardRecord alone)")
    elif isinstance(target, Tensor):
        config = getattr(model, "config", None)
        classes = check_classes(target, images.shape[0], getattr(config, "num_classes", None))
        record = ForwardRecord(model, images, labels=labels, classes=classes)
    else:
        record = ForwardRecord(model, images, labels=labels, target=target)
    net, classes = record.model, record.explained
    if not isinstance(getattr(net, "blocks", None), nn.ModuleList):
        raise ValueError(f"{type(net).__name__} has no blocks (nn.ModuleList); the conservation check reads "
                         "a VisionTransformer's blocks")
    require_graph(net, what="the AttnLRP conservation check")  # the pass rebuilds each layer from its class
    work = Workload.of(net, record.inputs)
    if work is not None:
        from .relevance import AttnLRP

        base = AttnLRP().estimate(work, {})
        scale = DTYPES[dtype].itemsize / 4
        params = sum(p.numel() for p in net.parameters()) * DTYPES[dtype].itemsize
        check_estimate(Estimate(base.bytes * scale + params, f"{base.what}, in {dtype}, and the model's copy"),
                       work, subject="the AttnLRP conservation check", fewer="fewer images per call")
    target_dtype = DTYPES[dtype]
    first = next(net.parameters())
    net = net if first.dtype == target_dtype else copy.deepcopy(net).to(target_dtype)
    x = record.inputs.detach().to(target_dtype).clone().requires_grad_(True)
    return _measure(net, x, classes.to(x.device), dtype)


def _measure(model: nn.Module, x: Tensor, classes: Tensor, dtype: str) -> ConservationReport:
    blocks = list(model.blocks)
    state: dict[str, Any] = {"stage": "embedding"}
    ins: list[Tensor] = []
    outs: list[Tensor] = []
    stage_of: dict[int, str] = {}
    biases = {id(m): m._parameters["bias"] for m in model.modules()
              if isinstance(m._parameters.get("bias"), nn.Parameter)}
    seen_qk: dict[int, list[Tensor]] = {}
    attention_block = {id(a): i for i, b in enumerate(blocks) for a in b.modules() if isinstance(a, Attention)}
    hooks = []
    for i, block in enumerate(blocks):
        def enter(_m, args, i=i):
            state["stage"] = f"block {i}"
            ins.append(args[0])

        def leave(_m, _args, out):
            state["stage"] = "head"
            outs.append(out)

        hooks += [block.register_forward_pre_hook(enter), block.register_forward_hook(leave)]
    def place(module: nn.Module, _args: Any, _out: Any) -> None:
        stage_of.setdefault(id(module), state["stage"])  # the stage it first ran in

    hooks += [m.register_forward_hook(place) for m in model.modules() if id(m) in biases]
    layers = [m for m in model.modules() if isinstance(m, Attention)]
    previous = [m.recorder for m in layers]

    def keep(module: Attention, values: dict[str, Any]) -> None:
        seen_qk[id(module)] = [values["q"], values["k"]]

    for m in layers:
        m.recorder = keep
    try:
        with torch.enable_grad(), explicit_attention(model, lrp=True) as store:
            logits = model(x)
    finally:
        for h in hooks:
            h.remove()
        for m, prev in zip(layers, previous):
            m.recorder = prev
    if len(ins) != len(blocks) or len(store) != len(layers):
        raise RuntimeError("the conservation check saw an incomplete forward (a block or an attention layer did not run)")
    constants = _token_constants(model)
    bias_list = list(biases.items())
    qk = [t for m in layers for t in seen_qk[id(m)]]
    wrt = [x, *ins, *outs, *store, *qk, *(b for _, b in bias_list), *constants]
    B = x.shape[0]
    rows: list[list[float]] = []
    batched = 1 + 2 * len(blocks) + len(store) + len(qk)  # x, block inputs and outputs, A, q, k: (B, ...)
    for b in range(B):  # one backward per image: the shared parameters' relevance is then that image's
        grads = torch.autograd.grad(logits[b, classes[b]], wrt, retain_graph=b < B - 1, allow_unused=True)
        rows.append([0.0 if g is None else float(((t[b] * g[b]).sum() if j < batched else (t * g).sum()).detach())
                     for j, (t, g) in enumerate(zip(wrt, grads))])
    R = torch.tensor(rows, dtype=torch.float64)  # (B, len(wrt))
    pos = 0

    def take(n: int) -> Tensor:
        nonlocal pos
        out = R[:, pos : pos + n]
        pos += n
        return out

    pixels = take(1)[:, 0]
    block_in, block_out, attn_R, qk_R = take(len(blocks)), take(len(blocks)), take(len(store)), take(len(qk))
    bias_R, const_R = take(len(bias_list)), take(len(constants))
    logit = logits.detach().gather(1, classes.view(-1, 1))[:, 0].double()
    zero = torch.zeros(B, dtype=torch.float64)

    def biases_of(stage: str) -> Tensor:
        cols = [j for j, (key, _) in enumerate(bias_list) if stage_of.get(key) == stage]
        return bias_R[:, cols].sum(-1) if cols else zero

    stages = [StageConservation("embedding", pixels, block_in[:, 0], biases_of("embedding"), const_R.sum(-1), zero, False)]
    lost = attn_R - (qk_R[:, 0::2] + qk_R[:, 1::2])  # (B, layers): R(A) − R(q) − R(k)
    absorbing = [j for j, m in enumerate(layers) if not type(m).lrp_conserves]
    for i in range(len(blocks)):
        mine = [j for j, m in enumerate(layers) if attention_block.get(id(m)) == i]
        absorbs = any(j in absorbing for j in mine)
        stages.append(StageConservation(f"block {i}", block_in[:, i], block_out[:, i], biases_of(f"block {i}"), zero,
                                        lost[:, mine].sum(-1) if mine else zero, absorbs))
    stages.append(StageConservation("head", block_out[:, -1], logit, biases_of("head"), zero, zero, False))
    # overall: softmax layers' loss is a sink; where no layer absorbs, the InfSA layers' loss is shown as the check
    overall = StageConservation("overall", pixels, logit, bias_R.sum(-1), const_R.sum(-1),
                                lost[:, absorbing].sum(-1) if absorbing else lost.sum(-1), bool(absorbing))
    return ConservationReport(dtype=dtype, target=classes.cpu(), logit=logit, stages=stages, overall=overall)
