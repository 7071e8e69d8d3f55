"""Small samples of the built-in formats (:attr:`~infsa_viz.formats.ModelFormat.sample`): one tiny
random-weight model written in each format's own layout, so that a check over :data:`FORMATS`
(``tests/test_conformance.py``, the bad-input sweep) needs no list of formats of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import torch
from torch import Tensor

from ..io import atomic_write
from ..model.config import ViTConfig
from ..model.vit import VisionTransformer

__all__ = ["SAMPLE_HEADS", "sample_model", "write_state"]

#: Heads per layer of :func:`sample_model` (state-dict samples pass it as ``?num_heads=``).
SAMPLE_HEADS = 2


def sample_model(variant: str = "softmax") -> VisionTransformer:
    """A 16×16 RGB ViT of 2 blocks, 16 wide, 3 classes, LayerNorm ε 1e-6 (what every state-dict format
    assumes), with seeded random weights (the global RNG is left as it was)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        config = ViTConfig(img_size=16, in_chans=3, patch_size=4, embed_dim=16, depth=2, num_heads=SAMPLE_HEADS,
                           num_classes=3, attention=variant, norm_eps=1e-6)  # timm's and torchvision's ε
        return VisionTransformer(config).eval()


def write_state(path: Path, state: Mapping[str, Tensor]) -> Path:
    """Write ``state`` as a ``.safetensors`` file (atomically); returns ``path``."""
    from safetensors.torch import save

    atomic_write(path, save({k: v.detach().contiguous() for k, v in state.items()}, metadata={"format": "pt"}))
    return path
