"""Hand-built scenes and a classifier whose evidence is known (planted), for the evidence tests.

The scene is 16 × 16 with 4-pixel patches: every object is a solid block aligned to the patch grid,
so objects never share a patch and each object's visible pixels are its whole box.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from infsa_viz import Preprocessing, ViTConfig
from infsa_viz.data import Scene

SIZE, PATCH = 16, 4
# target (8×8, top left), distractor_1 (4×4, bottom right), distractor_2 (4×4, top right)
BOXES = np.array([[0, 0, 8, 8], [12, 12, 16, 16], [12, 0, 16, 4]])
VALUES = (200, 150, 100)


BACKGROUND_ONLY = np.array([0, 8, 8, 16])  # the bottom-left quarter holds no digit


def block_scene(background: int = 30, alternative: int = 10) -> Scene:
    """Three solid digits on a flat background (its alternative: a darker flat value)."""
    digits = tuple(np.full((y1 - y0, x1 - x0), v, np.uint8) for (x0, y0, x1, y1), v in zip(BOXES, VALUES, strict=True))
    return Scene(np.full((SIZE, SIZE), background, np.uint8), np.full((SIZE, SIZE), alternative, np.uint8),
                 digits, BOXES.copy(), np.array([1, 2, 3]))


class PlantedModel(nn.Module):
    """Two classes: logit 0 = 0, logit 1 = ``gain`` × (the mean input over one object's box − ``bias``)
    (for the background, object 3: over :data:`BACKGROUND_ONLY`).

    Its output depends only on that object's pixels; it carries the preprocessing contract
    (identity normalisation) that :func:`~infsa_viz.preprocess.prepare` reads.
    """

    def __init__(self, obj: int, *, gain: float = 8.0, bias: float = 0.0) -> None:
        super().__init__()
        self.config = ViTConfig(img_size=SIZE, in_chans=1, patch_size=PATCH, num_classes=2,
                                preprocessing=Preprocessing(mean=0.0, std=1.0))
        self.patch_size, self.box, self.gain = PATCH, (BOXES[obj] if obj < len(BOXES) else BACKGROUND_ONLY), gain
        self.bias = bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x0, y0, x1, y1 = (int(v) for v in self.box)
        s = self.gain * (x[:, :, y0:y1, x0:x1].mean(dim=(1, 2, 3)) - self.bias)  # (B,)
        return torch.stack([torch.zeros_like(s), s], dim=1)  # (B, 2)


def planted_data(n: int, *, seed: int = 0):
    """``n`` block scenes with seeded intensities (digits 120–255, backgrounds 0–60, an alternative
    background 0–60), label 1 and the target's box: data a :class:`PlantedModel` classifies."""
    from infsa_viz.data import LabelledImages

    rng = np.random.default_rng(seed)
    scenes = []
    for _ in range(n):
        values = rng.integers(120, 256, size=len(BOXES))
        digits = tuple(np.full((y1 - y0, x1 - x0), v, np.uint8)
                       for (x0, y0, x1, y1), v in zip(BOXES, values, strict=True))
        background, alternative = (np.full((SIZE, SIZE), v, np.uint8) for v in rng.integers(0, 61, size=2))
        scenes.append(Scene(background, alternative, digits, BOXES.copy(), np.array([1, 2, 3])))
    return LabelledImages(images=np.stack([s.render() for s in scenes]), labels=np.ones(n, np.int64),
                          boxes=[BOXES[:1].copy() for _ in scenes], negative_boxes=[BOXES[1:].copy() for _ in scenes],
                          negative_labels=[np.array([2, 3]) for _ in scenes], scenes=scenes)
