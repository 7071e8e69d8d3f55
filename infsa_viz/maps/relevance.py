"""Class-specific transformer explanations from attention gradients and relevance:
Chefer et al.'s generic attention explainability, AttnLRP and Grad-CAM on the token grid.

All three explain a class (``target``) and run one forward and one backward per batch, through
:func:`~infsa_viz.maps._explicit.explicit_attention` (the layers' own matrices, made dense for
``N = 37`` tokens, with gradients).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from ..estimate import Estimate, Workload
from ..model.capture import attention_layers
from ._explicit import explicit_attention, target_logits
from .base import MapMethod, register, select_layer, tokens_to_grid
from .gradient import pool_to_patches

__all__ = ["AttnLRP", "CheferGeneric", "GradCAM", "chefer_relevance"]


def chefer_relevance(attentions: list[Tensor], gradients: list[Tensor]) -> Tensor:
    """Chefer et al. (ICCV 2021) Eq. 5–6: ``R ← R + Ē·R``, ``Ē = E_h[(∇A ⊙ A)⁺]``, from ``R = I``.

    Args:
        attentions: per layer ``(B, H, N, N)``, in layer order.
        gradients: per layer ``∂y_t/∂A`` ``(B, H, N, N)``.

    Returns:
        ``(B, N, N)`` relevance; row 0 is the CLS token's.
    """
    B, _, N, _ = attentions[0].shape
    R = torch.eye(N, dtype=torch.float64).expand(B, N, N).clone()
    for A, grad in zip(attentions, gradients):
        weighted = (grad.double() * A.double()).clamp_min(0).mean(1)  # (B, N, N)
        R = R + weighted @ R
    return R


def _gradients(model: nn.Module, images: Tensor, target: Tensor, *, lrp: bool = False,
               inputs: list[Tensor] | None = None) -> tuple[list[Tensor], list[Tensor], list[Tensor]]:
    """``(A per layer, ∂y_t/∂A per layer, ∂y_t/∂inputs)`` of one forward + one backward."""
    with torch.enable_grad(), explicit_attention(model, lrp=lrp) as store:
        logits = model(images)
        wrt = [*store, *(inputs or [])]
        grads = torch.autograd.grad(target_logits(logits, target), wrt, allow_unused=True)
    L = len(store)
    grads = [torch.zeros_like(t) if g is None else g for t, g in zip(wrt, grads)]
    return [a.detach() for a in store], list(grads[:L]), list(grads[L:])


@register
class CheferGeneric(MapMethod):
    """Generic attention-model explainability: gradient-weighted attention accumulated over layers.

    ``R = I``; for each layer ``R ← R + E_h[(∇A ⊙ A)⁺]·R``; the map is the CLS row of ``R``
    over the patch tokens (Chefer, Gur & Wolf, ICCV 2021, Eqs. 5–6 for self-attention).
    """

    name = "chefer2021"
    family = "gradient"
    description = "gradient-weighted attention relevance accumulated over layers (Chefer et al. 2021)"
    reference = ("Chefer, Gur & Wolf, Generic Attention-model Explainability for Interpreting Bi-Modal and "
                 "Encoder-Decoder Transformers, ICCV 2021")
    explains_class = True
    reads_operator = True
    cost = "1 forward + 1 backward per image; L dense N×N products"

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        return Estimate(work.forward(grad=True, explicit=True) + work.layers * work.square()
                        + work.square(2 * 2 + 2, heads=False, itemsize=8) + work.square(2, itemsize=8),
                        "a forward with every layer's (B, H, N, N) attention and its gradient, and float64 "
                        "(B, N, N) relevance products", forwards=2)

    def _compute(self, forward, options):
        model, images, target = forward.model, forward.inputs, forward.explained
        _need_cls(model, self.name)
        attentions, gradients, _ = _gradients(model, images, target)
        R = chefer_relevance(attentions, gradients)  # (B, N, N)
        record = _grid_record(model, images)
        return tokens_to_grid(R[:, 0].float(), record), {"rule": "R <- R + mean_h[(dA * A)+] R, CLS row"}, None


@register
class AttnLRP(MapMethod):
    """AttnLRP: layer-wise relevance propagation through attention (Achtibat et al., ICML 2024).

    Input × gradient under the AttnLRP rules (:mod:`infsa_viz.maps._explicit`), summed over the
    pixels of each patch. Signed. Conservative where no softmax and no bias absorb relevance:
    pixels + position embedding + CLS token then sum to the target logit.
    """

    name = "attn_lrp"
    family = "gradient"
    description = "AttnLRP relevance (input x modified gradient), summed per patch"
    reference = "Achtibat et al., AttnLRP: Attention-Aware Layer-Wise Relevance Propagation for Transformers, ICML 2024"
    explains_class = True
    signed = True
    reads_operator = True
    cost = "1 forward + 1 backward per image"

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        return Estimate(work.forward(grad=True, explicit=True) + 3 * work.layers * work.square(),
                        "a forward with every layer's (B, H, N, N) attention, its halved-gradient copies and its "
                        "gradient", forwards=2)

    def _compute(self, forward, options):
        model, target = forward.model, forward.explained
        x = forward.inputs.detach().clone().requires_grad_(True)
        _, _, (grad,) = _gradients(model, x, target, lrp=True, inputs=[x])
        relevance = (x.detach() * grad).float()  # (B, C, H, W)
        maps = pool_to_patches(relevance, model.patch_size)
        metadata = {"rules": "LayerNorm/normalisers: identity (divisor constant); GELU: identity; "
                             "q k^T, A v, q_bar k: uniform (1/2 each); softmax: gradient x input; linear: epsilon=0",
                    "pooling": "sum over channels and patch pixels"}
        return maps, metadata, None


@register
class GradCAM(MapMethod):
    """Grad-CAM on the token grid (Selvaraju et al. 2017, the ViT reading of Chefer et al. 2021).

    The activations are the normalised tokens entering layer ``layer``'s attention (default the
    last: the patch tokens after the last block do not reach a CLS head); channel weights are the
    mean gradient of the target logit over the patch tokens; the map is
    ``ReLU(Σ_c w_c · act_{n,c})`` on the patch grid.
    """

    name = "grad_cam"
    family = "gradient"
    description = "Grad-CAM on the patch tokens entering a chosen layer's attention"
    reference = "Selvaraju et al., Grad-CAM, ICCV 2017; ViT token-grid reading as in Chefer et al., CVPR 2021"
    defaults = {"layer": -1}
    per_layer = True
    explains_class = True
    cost = "1 forward + 1 backward per image"

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        return Estimate(work.forward(grad=True), "one forward kept for the backward", forwards=2)

    def _compute(self, forward, options):
        model, images, target = forward.model, forward.inputs, forward.explained
        layers = attention_layers(model)
        module = select_layer(layers, options["layer"])  # type: ignore[arg-type]
        seen: list[Tensor] = []

        def keep(_module: nn.Module, args: tuple[Any, ...]) -> None:
            seen.append(args[0])

        handle = module.register_forward_pre_hook(keep)
        try:
            with torch.enable_grad():
                logits = model(images)
                (grad,) = torch.autograd.grad(target_logits(logits, target), seen[-1:])
        finally:
            handle.remove()
        act = seen[-1].detach()  # (B, N, C)
        prefix = int(getattr(model, "num_prefix_tokens", 0))
        weights = grad[:, prefix:].mean(1, keepdim=True)  # (B, 1, C)
        cam = torch.relu((weights * act).sum(-1))  # (B, N)
        record = _grid_record(model, images)
        metadata = {"layer": layers.index(module), "activations": "tokens entering the layer's attention (after norm)",
                    "weights": "mean gradient over patch tokens"}
        return tokens_to_grid(cam.float(), record), metadata, None


class _Grid:
    """The two fields :func:`tokens_to_grid` reads, without capturing attention."""

    def __init__(self, prefix: int, grid: tuple[int, int]) -> None:
        self.num_prefix_tokens = prefix
        self.grid = grid


def _grid_record(model: nn.Module, images: Tensor) -> Any:
    p = model.patch_size
    return _Grid(int(getattr(model, "num_prefix_tokens", 0)), (images.shape[-2] // p, images.shape[-1] // p))


def _need_cls(model: nn.Module, name: str) -> None:
    if int(getattr(model, "num_prefix_tokens", 0)) == 0:
        raise ValueError(f"method {name!r} reads the CLS row; this model mean-pools and has no CLS token")
