"""Shared fixtures: seeded, CPU-only, small."""

from __future__ import annotations

import pytest
import torch

from infsa_viz import VARIANTS, ViTConfig, VisionTransformer


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def tiny_config(variant: str, **changes) -> ViTConfig:
    """A ViT small enough for unit tests (16×16 images, 16 tokens + CLS)."""
    base = dict(img_size=16, in_chans=1, patch_size=4, embed_dim=16, depth=2, num_heads=2,
                num_classes=3, attention=variant)
    base.update(changes)
    return ViTConfig(**base)


@pytest.fixture
def make_config():
    """Factory fixture: ``make_config(variant, **changes)`` → a tiny :class:`ViTConfig`."""
    return tiny_config


@pytest.fixture(params=VARIANTS)
def variant(request) -> str:
    return request.param


@pytest.fixture
def tiny_model(variant: str) -> VisionTransformer:
    return VisionTransformer(tiny_config(variant)).eval()
