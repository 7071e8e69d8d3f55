"""Baselines that never look at the model: a seeded random map (the floor of every metric) and the
model-ignorant controls (an edge map, the image intensity).

A method that does not beat a map computed from the pixels alone shows nothing about the model it
explains (XAI-TRIS, Clark, Oliveira, Wilming & Haufe 2024; Adebayo et al., NeurIPS 2018 and ICLR
2022). The controls are registered with the role ``"model_ignorant"`` and stay out of
``--references`` (name them in ``--methods``): the shortcut evaluation
(:mod:`infsa_viz.stats.shortcut`) shows them in every table.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..estimate import Estimate
from .base import MapMethod, register

__all__ = ["EdgeMap", "IntensityMap", "RandomMap", "patch_means"]


@register
class RandomMap(MapMethod):
    """Seeded uniform noise on the patch grid: the chance level of every metric."""

    name = "random"
    family = "baseline"
    role = "floor"
    description = "seeded uniform noise: the chance baseline"
    defaults = {"seed": 0}
    seeded = True
    cost = "none"

    def estimate(self, work, options):
        return Estimate(4.0 * work.batch * work.patches, "one number per patch", forwards=0)

    def _compute(self, forward, options):
        p, images = forward.model.patch_size, forward.inputs
        generator = torch.Generator().manual_seed(options["seed"])
        maps = torch.rand(images.shape[0], images.shape[-2] // p, images.shape[-1] // p, generator=generator)
        return maps, {"distribution": "uniform [0, 1) per patch, torch.Generator seeded by seed"}, None


def patch_means(pixels: torch.Tensor, patch_size: int) -> torch.Tensor:
    """``(B, H, W)`` pixel values → ``(B, H/p, W/p)`` their mean over each patch (a trailing partial
    patch is dropped, as the model's patch embedding drops it)."""
    return F.avg_pool2d(pixels[:, None].double(), patch_size)[:, 0].float()


def _grey(inputs: torch.Tensor) -> torch.Tensor:
    """``(B, C, H, W)`` → ``(B, H, W)`` the channel mean (the model's normalised input)."""
    return inputs.detach().double().mean(dim=1)


@register
class EdgeMap(MapMethod):
    """Model-ignorant control: the Sobel gradient magnitude of the input, averaged over each patch."""

    name = "edge"
    family = "baseline"
    role = "model_ignorant"
    in_default_report = False
    description = ("model-ignorant control (reads only the image): Sobel gradient magnitude of the channel-mean "
                   "input, zero padding, patch means")
    reference = "an edge detector as a baseline, as in XAI-TRIS (Clark et al. 2024)"
    cost = "none (two 3x3 convolutions of the input)"

    def estimate(self, work, options):
        return Estimate(24.0 * work.batch * work.pixels, "three (B, H, W) float64 planes", forwards=0)

    def _compute(self, forward, options):
        grey = _grey(forward.inputs)[:, None]  # (B, 1, H, W)
        gx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]], dtype=torch.float64)
        kernels = torch.stack([gx, gx.T])[:, None]  # (2, 1, 3, 3)
        grad = F.conv2d(grey, kernels, padding=1)  # (B, 2, H, W)
        magnitude = grad.pow(2).sum(dim=1).sqrt()  # (B, H, W)
        return patch_means(magnitude, forward.model.patch_size), {
            "reference": self.description, "kernel": "Sobel 3x3, |∇| = sqrt(gx² + gy²)"}, None


@register
class IntensityMap(MapMethod):
    """Model-ignorant control: the input's intensity above its darkest pixel, averaged over each patch."""

    name = "intensity"
    family = "baseline"
    role = "model_ignorant"
    in_default_report = False
    description = ("model-ignorant control (reads only the image): channel-mean input minus its minimum over the "
                   "image, patch means (bright patches first)")
    reference = "the image as its own explanation (cf. Adebayo et al., NeurIPS 2018)"
    cost = "none (reads the input)"

    def estimate(self, work, options):
        return Estimate(16.0 * work.batch * work.pixels, "two (B, H, W) float64 planes", forwards=0)

    def _compute(self, forward, options):
        grey = _grey(forward.inputs)  # (B, H, W)
        lifted = grey - grey.flatten(1).min(dim=1).values[:, None, None]
        return patch_means(lifted, forward.model.patch_size), {
            "reference": self.description, "offset": "each image's minimum, so every value is >= 0"}, None
