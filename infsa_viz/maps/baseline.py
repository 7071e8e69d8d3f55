"""The chance baseline: a seeded random map."""

from __future__ import annotations

import torch

from ..estimate import Estimate
from .base import MapMethod, register

__all__ = ["RandomMap"]


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
