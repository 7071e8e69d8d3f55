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


def extendable_registries() -> tuple[dict, ...]:
    """Every registry a plugin module extends: map methods, metrics (with the figures and settings they
    declare), model formats, generated data sources and folder layouts. The one list a test restores."""
    from infsa_viz.data import BENCHMARKS, LAYOUTS
    from infsa_viz.formats import FORMATS
    from infsa_viz.maps import METHODS
    from infsa_viz.metrics import registry

    return (FORMATS, METHODS, registry.METRICS, registry.FIGURES, registry.SETTINGS, registry._OWNER, BENCHMARKS,
            LAYOUTS)


@pytest.fixture
def registries():
    """Snapshot every extendable registry (:func:`extendable_registries`) and restore it after the test,
    whatever the test registered or removed."""
    saved = [(r, dict(r)) for r in extendable_registries()]
    yield
    for target, content in saved:
        target.clear()
        target.update(content)


@pytest.fixture
def toy_plugin(registries):
    """Run examples/toy_plugin.py (one module registering a map method, a reference map, a metric and a
    model format); the registries are restored afterwards."""
    import runpy
    from pathlib import Path

    return runpy.run_path(str(Path(__file__).resolve().parents[1] / "examples" / "toy_plugin.py"))
