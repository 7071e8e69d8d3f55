"""Captum attributions on the same models, pooled to the patch grid.

Captum does the attribution work (IntegratedGradients, Saliency, InputXGradient, FeatureAblation
with a patch feature mask); this module only pools the pixel attributions to patches so they can
be compared with the attention maps on equal terms. Captum is imported lazily.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

__all__ = ["CAPTUM_METHODS", "captum_map", "patch_feature_mask", "pool_to_patches"]

#: Our method name → Captum class name (in ``captum.attr``).
CAPTUM_METHODS: dict[str, str] = {
    "integrated_gradients": "IntegratedGradients",
    "saliency": "Saliency",
    "input_x_gradient": "InputXGradient",
    "occlusion": "FeatureAblation",
}


def patch_feature_mask(image_shape: tuple[int, int, int], patch_size: int) -> Tensor:
    """Captum feature mask ``(1, C, H, W)`` assigning every pixel its patch index (row-major)."""
    C, H, W = image_shape
    h, w = H // patch_size, W // patch_size
    ids = torch.arange(h * w).reshape(h, w)
    ids = ids.repeat_interleave(patch_size, 0).repeat_interleave(patch_size, 1)  # (H, W)
    return ids.expand(1, C, H, W).contiguous()


def pool_to_patches(attr: Tensor, patch_size: int, *, absolute: bool = False) -> Tensor:
    """Sum pixel attributions ``(B, C, H, W)`` over channels and each patch → ``(B, h, w)``."""
    B, C, H, W = attr.shape
    a = attr.abs() if absolute else attr
    p = patch_size
    return a.sum(1).reshape(B, H // p, p, W // p, p).sum((2, 4))


def captum_map(
    model: nn.Module,
    images: Tensor,
    method: str,
    *,
    targets: Tensor,
    patch_size: int,
    n_steps: int = 32,
    baseline: float = 0.0,
    internal_batch_size: int | None = 64,
    **_: Any,
) -> Tensor:
    """Attribution map ``(B, h, w)`` from a Captum method, pooled to patches.

    Args:
        model: classifier returning logits.
        images: ``(B, C, H, W)`` normalised images.
        method: a key of :data:`CAPTUM_METHODS`.
        targets: class index per image ``(B,)``.
        patch_size: the ViT patch side (pooling unit and occlusion unit).
        n_steps: IntegratedGradients steps (default 32, Riemann-trapezoid).
        baseline: baseline value (normalised space; 0 = dataset mean) for IG and occlusion.
        internal_batch_size: IG's internal batching.

    Returns:
        ``(B, h, w)``: signed patch sums for IG / InputXGradient / occlusion (the drop in the
        target logit when the patch is replaced by ``baseline``), absolute sums for Saliency.
    """
    import captum.attr as ca

    cls = getattr(ca, CAPTUM_METHODS[method])
    model.eval()
    x = images.detach().clone().requires_grad_(method != "occlusion")
    targets = targets.to(torch.int64)
    if method == "integrated_gradients":
        attr = cls(model).attribute(x, baselines=baseline, target=targets, n_steps=n_steps,
                                    method="riemann_trapezoid", internal_batch_size=internal_batch_size)
    elif method == "saliency":
        attr = cls(model).attribute(x, target=targets, abs=True)
    elif method == "input_x_gradient":
        attr = cls(model).attribute(x, target=targets)
    else:
        mask = patch_feature_mask(tuple(images.shape[1:]), patch_size)  # type: ignore[arg-type]
        with torch.no_grad():
            attr = cls(model).attribute(x, baselines=baseline, target=targets, feature_mask=mask,
                                        perturbations_per_eval=16)
        # FeatureAblation spreads the patch's score to each of its pixels: take one per patch.
        B, C, H, W = attr.shape
        p = patch_size
        return attr[:, 0, ::p, ::p].reshape(B, H // p, W // p).detach()
    return pool_to_patches(attr.detach(), patch_size, absolute=method == "saliency")
