"""Planted cued-digits classifiers whose reliance is known by construction: one reads only the cue,
one is blind to it."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from infsa_viz import ViTConfig
from infsa_viz.data import BENCHMARKS, GLYPHS

SPEC = BENCHMARKS["cued-digits-p100"]


class _Planted(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.config = ViTConfig(img_size=48, in_chans=1, patch_size=8, num_classes=10,
                                preprocessing=SPEC.preprocessing)
        self.patch_size = 8
        self.register_buffer("glyphs", torch.tensor(GLYPHS, dtype=torch.float32)[:, None])  # (10, 1, 7, 7)

    def pixels(self, x: torch.Tensor) -> torch.Tensor:
        mean, std = self.config.preprocessing.mean[0], self.config.preprocessing.std[0]
        return (x * std + mean) * 255  # (B, 1, 48, 48)

    def glyph_hits(self, pixels: torch.Tensor) -> torch.Tensor:
        """``(B, 10, 42, 42)`` where glyph ``c`` lies in full ink (the cue's intensity)."""
        ink = (pixels >= SPEC.config.cue_intensity - 0.5).float()
        hits = F.conv2d(ink, self.glyphs)
        return (hits >= self.glyphs.sum(dim=(1, 2, 3))[None, :, None, None] - 0.5).float()


class CueReader(_Planted):
    """Reads only the cue: logit ``c`` is ``gain`` where glyph ``c`` appears in full ink, else 0."""

    def __init__(self, gain: float = 6.0) -> None:
        super().__init__()
        self.gain = gain

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gain * self.glyph_hits(self.pixels(x)).flatten(2).amax(-1)  # (B, 10)


class CueBlind(_Planted):
    """Blind to the cue: the ink (pixels >= 128; the background photo stays below 64) with every window
    holding a full-ink glyph painted black, then a seeded random linear read-out of the 8 × 8 patch
    means of that ink decides (the digits matter, the cue only where a digit's ink enters its window)."""

    def __init__(self, seed: int, gain: float = 20.0) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.register_buffer("weights", torch.randn(10, 36, generator=generator) * gain)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pixels = self.pixels(x)
        found = self.glyph_hits(pixels).amax(1, keepdim=True)  # (B, 1, 42, 42)
        window = F.conv_transpose2d(found, torch.ones(1, 1, 7, 7)) > 0  # (B, 1, 48, 48)
        seen = torch.where(window, torch.zeros_like(pixels), (pixels >= 128).float())
        return F.avg_pool2d(seen, 8).flatten(1) @ self.weights.T  # (B, 10)
