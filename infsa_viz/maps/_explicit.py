"""Attention with gradients, read from outside the model: the shared machinery of the
gradient-weighted attention methods (Chefer et al. 2021, TAM, Grad-CAM) and of AttnLRP.

:func:`explicit_attention` makes every attention layer of a model compute its matrix ``A``
``(B, H, N, N)`` densely (the same formula the layer's class states, ``applied_matrix``), keep it
on the autograd graph and hand it to the caller, so ``∂ logit / ∂A`` can be read. The layers'
own code (:mod:`infsa_viz.model.attention`) is not changed: the ``attend`` method of each module
instance is replaced for the duration of the ``with`` block and restored afterwards. The logits
are the model's own to float tolerance (a test checks it for every variant).

With ``lrp=True`` the forward keeps its values but changes its gradient so that input × gradient
is layer-wise relevance propagation with the AttnLRP rules (Achtibat et al., ICML 2024):

* linear layers and sums: ε-rule ≡ gradient × input (unchanged);
* element-wise non-linearities (GELU): identity rule, ``x · (f(x)/x).detach()``;
* normalisations (LayerNorm's ``1/σ``, InfSA's ``1/‖S‖_F``, Linear-InfSA's ``Σ_l`` and ``α``):
  the divisor is a constant (identity rule for the division);
* products of two activations (``q kᵀ``, ``A v``, ``q̄·k``): uniform rule, half of the
  relevance to each factor (``z = ½z + ½z.detach()`` halves both gradients);
* softmax: the true gradient times input (AttnLRP's deep-Taylor rule for softmax,
  ``R_i = x_i (R_i − s_i Σ_j R_j)``, is exactly that).

Without biases and softmax, relevance is conserved: it sums to the logit over the pixels, the
position embedding and the CLS token (tests/maps/test_relevance.py checks it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..model.attention import Attention
from ..model.blockwise import EPS
from ..model.capture import attention_layers
from ..model.functional import half_gradient
from ..model.vit import QuickGELU

__all__ = ["explicit_attention", "target_logits"]


def _layer_norm_lrp(module: nn.LayerNorm, x: Tensor) -> Tensor:
    """LayerNorm with ``1/σ`` a constant (identity rule), same value."""
    centred = x - x.mean(-1, keepdim=True)
    scale = torch.rsqrt(x.var(-1, unbiased=False, keepdim=True) + module.eps).detach()
    out = centred * scale
    if module.weight is not None:
        out = out * module.weight
    if module.bias is not None:
        out = out + module.bias
    return out


def _gelu_lrp(module: nn.GELU, x: Tensor) -> Tensor:
    """GELU with the identity rule: ``x · (gelu(x)/x).detach()`` (``gelu'(0) = ½`` at 0)."""
    y = F.gelu(x, approximate=module.approximate)
    ratio = torch.where(x == 0, torch.full_like(x, 0.5), y / torch.where(x == 0, torch.ones_like(x), x))
    return x * ratio.detach()


def _quick_gelu_lrp(_module: nn.Module, x: Tensor) -> Tensor:
    """CLIP's quick GELU with the identity rule: ``x · sigmoid(1.702 x).detach()``, same value."""
    return x * torch.sigmoid(1.702 * x).detach()


@contextmanager
def explicit_attention(model: nn.Module, *, lrp: bool = False) -> Iterator[list[Tensor]]:
    """Within the block, every forward appends each layer's dense ``A (B, H, N, N)`` (on the
    autograd graph, ``retain_grad`` set) to the yielded list, in layer order.

    Args:
        model: a model with :class:`~infsa_viz.model.attention.Attention` modules.
        lrp: also apply the AttnLRP gradient rules (module docstring) to the attention,
            LayerNorm and GELU modules.

    Raises:
        RuntimeError: the model has no attention module.
    """
    layers = attention_layers(model)
    store: list[Tensor] = []

    def make(module: Attention):
        def attend(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
            module._record(q=q, k=k)
            eps = getattr(module, "eps", EPS)
            A = module.lrp_matrix(q, k, eps=eps) if lrp else module.applied_matrix(q, k, eps=eps)
            if A.requires_grad:
                A.retain_grad()
            store.append(A)
            product = A.to(v.dtype) @ v  # (B, H, N, D)
            out = half_gradient(product) if lrp else product
            rho = module.rho()
            return out if rho is None else out * rho.to(v.dtype).view(1, -1, 1, 1)
        return attend

    patched: list[nn.Module] = []
    for m in layers:
        m.attend = make(m)  # type: ignore[method-assign]
        patched.append(m)
    if lrp:
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.forward = partial(_layer_norm_lrp, m)  # type: ignore[method-assign]
                patched.append(m)
            elif isinstance(m, nn.GELU):
                m.forward = partial(_gelu_lrp, m)  # type: ignore[method-assign]
                patched.append(m)
            elif isinstance(m, QuickGELU):
                m.forward = partial(_quick_gelu_lrp, m)  # type: ignore[method-assign]
                patched.append(m)
            elif isinstance(m, nn.Module) and type(m).__name__ in ("ReLU", "SiLU", "Tanh", "Sigmoid", "Softmax"):
                raise NotImplementedError(f"AttnLRP has no rule here for {type(m).__name__} modules")
    try:
        yield store
    finally:
        for m in patched:
            for attr in ("attend", "forward"):
                if attr in m.__dict__:
                    delattr(m, attr)


def target_logits(logits: Tensor, target: Tensor) -> Tensor:
    """``Σ_b logits[b, target[b]]``: one backward gives every image's own gradient."""
    return logits.gather(1, target.view(-1, 1).to(logits.device)).sum()
