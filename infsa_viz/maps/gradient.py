"""Captum attributions on the same models, pooled to the patch grid.

Captum does the attribution work (IntegratedGradients, Saliency, InputXGradient, FeatureAblation
with a patch feature mask); these classes only pool pixel attributions to patches so they compare
with the attention maps on equal terms. Captum is an optional dependency
(``pip install 'infsa-viz[captum]'``), imported when one of these methods runs.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor

from ..estimate import Estimate, Workload, count_option
from ..forward import ForwardRecord
from .base import MapMethod, register

__all__ = ["InputXGradient", "IntegratedGradients", "Occlusion", "Saliency", "patch_feature_mask",
           "pool_to_patches"]


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


def _captum(class_name: str) -> Any:
    try:
        import captum.attr
    except ImportError:
        raise ValueError("gradient map methods need Captum: pip install 'infsa-viz[captum]'") from None
    return getattr(captum.attr, class_name)


def _reading(forward: ForwardRecord) -> Callable[[Tensor], Tensor]:
    """The model as Captum calls it: a call without gradients on the record's own inputs (Captum's
    clean evaluation before perturbing) reads the record's clean logits instead of running again."""
    def call(x: Tensor) -> Tensor:
        if not torch.is_grad_enabled() and x.shape == forward.inputs.shape and torch.equal(x, forward.inputs):
            return forward.logits.to(x.dtype)
        return forward.model(x)

    return call


class _CaptumMethod(MapMethod):
    """Shared shell: Captum class name, target handling and pooling to patches."""

    family = "gradient"
    explains_class = True
    signed = True
    captum_class: str
    reference = "Captum (Kokhlikyan et al. 2020)"

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        return Estimate(work.forward(grad=True), "one forward kept for the backward", forwards=2)

    def _compute(self, forward: ForwardRecord, options: dict[str, Any]) -> tuple[Tensor, dict[str, Any], None]:
        model = forward.model
        explainer = _captum(self.captum_class)(_reading(forward))
        x = forward.inputs.detach().clone().requires_grad_(True)
        attr = self._attribute(explainer, x, forward.explained, model.patch_size, options)  # (B, C, H, W) or (B, h, w)
        maps = attr if attr.dim() == 3 else pool_to_patches(attr.detach(), model.patch_size, absolute=not self.signed)
        return maps.detach(), {"captum": self.captum_class, "pooling": "sum over channels and patch pixels"}, None

    #: Keyword arguments of the plain call ``explainer.attribute(x, target=…, **call_options)``.
    call_options: dict[str, Any] = {}

    def _attribute(self, explainer: Any, x: Tensor, target: Tensor, patch_size: int,
                   options: dict[str, Any]) -> Tensor:
        """Pixel attributions ``(B, C, H, W)`` (or patch scores ``(B, h, w)``); the plain call by default."""
        return explainer.attribute(x, target=target, **self.call_options)


@register
class IntegratedGradients(_CaptumMethod):
    """Integrated gradients from a constant baseline (Sundararajan et al. 2017), summed per patch."""

    name = "integrated_gradients"
    description = "Captum IntegratedGradients, summed per patch"
    reference = "Sundararajan et al., Axiomatic Attribution for Deep Networks, ICML 2017"
    captum_class = "IntegratedGradients"
    defaults = {"n_steps": 32, "baseline": 0.0, "internal_batch_size": 64}
    cost = "n_steps forwards + backwards per image"

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        steps = count_option(options, "n_steps", 32)
        inner = work.with_batch(min(work.batch * steps, count_option(options, "internal_batch_size", 64)))
        return Estimate(inner.forward(grad=True), "a forward kept for the backward of internal_batch_size scaled inputs",
                        forwards=2 * steps, lower="fewer n_steps or a smaller internal_batch_size")

    def _attribute(self, explainer, x, target, patch_size, options):
        return explainer.attribute(x, baselines=options["baseline"], target=target, n_steps=options["n_steps"],
                                   method="riemann_trapezoid", internal_batch_size=options["internal_batch_size"])


@register
class Saliency(_CaptumMethod):
    """``|∂ logit / ∂ pixel|`` (Simonyan et al. 2014), summed per patch: non-negative."""

    name = "saliency"
    description = "Captum Saliency |d logit / d pixel|, summed per patch"
    reference = "Simonyan et al., Deep Inside Convolutional Networks, ICLR workshop 2014"
    captum_class = "Saliency"
    call_options = {"abs": True}
    signed = False
    cost = "1 forward + 1 backward"


@register
class InputXGradient(_CaptumMethod):
    """Input × gradient (Shrikumar et al. 2016), summed per patch."""

    name = "input_x_gradient"
    description = "Captum InputXGradient, summed per patch"
    reference = "Shrikumar et al., Not Just a Black Box, 2016"
    captum_class = "InputXGradient"
    in_default_report = False
    cost = "1 forward + 1 backward"


@register
class Occlusion(_CaptumMethod):
    """The drop of the target logit when one patch is replaced by ``baseline`` (FeatureAblation)."""

    name = "occlusion"
    description = "Captum FeatureAblation with a patch feature mask (logit drop)"
    reference = "Zeiler & Fergus 2014 (occlusion), Captum FeatureAblation"
    captum_class = "FeatureAblation"
    defaults = {"baseline": 0.0}
    cost = "1 + h·w forwards per image (16 perturbations per call)"

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        return Estimate(work.with_batch(16 * work.batch).forward(), "one forward of 16 occluded copies per image",
                        forwards=1 + work.patches, lower="a smaller input (fewer patches)")

    def _attribute(self, explainer, x, target, patch_size, options):
        mask = patch_feature_mask(tuple(x.shape[1:]), patch_size)  # type: ignore[arg-type]
        with torch.no_grad():
            attr = explainer.attribute(x.detach(), baselines=options["baseline"], target=target, feature_mask=mask,
                                       perturbations_per_eval=16)
        B, C, H, W = attr.shape  # the patch's score is spread to each of its pixels: take one per patch
        return attr[:, 0, ::patch_size, ::patch_size].reshape(B, H // patch_size, W // patch_size)
