"""Fixtures of the metrics tests: tiny models built here, seeded inputs, hand-made curves."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from infsa_viz import ViTConfig, VisionTransformer
from infsa_viz.metrics import PerturbationCurves

SIZE, PATCH = 16, 4  # 16x16 images, 4x4 grid of 4-pixel patches
GRID = SIZE // PATCH


class OnePatchModel(nn.Module):
    """Two classes: logit 0 = ``bias``, logit 1 = pixel sum of patch ``(row, col)``."""

    def __init__(self, *, patch_size: int = PATCH, row: int = 2, col: int = 3, bias: float = 5.0) -> None:
        super().__init__()
        self.patch_size, self.row, self.col, self.bias = patch_size, row, col, bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p, r, c = self.patch_size, self.row, self.col
        s = x[:, :, r * p:(r + 1) * p, c * p:(c + 1) * p].sum(dim=(1, 2, 3))  # (B,)
        return torch.stack([torch.full_like(s, self.bias), s], dim=1)  # (B, 2)


@pytest.fixture(autouse=True)
def _one_thread():
    """One intra-op thread: the many tiny forward passes here only slow down with more (and
    crawl when the CPUs are shared); restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def one_patch_model() -> OnePatchModel:
    return OnePatchModel().eval()


@pytest.fixture
def vit() -> VisionTransformer:
    config = ViTConfig(img_size=SIZE, in_chans=1, patch_size=PATCH, embed_dim=16, depth=2, num_heads=2, num_classes=3)
    return VisionTransformer(config).eval()


@pytest.fixture
def images() -> torch.Tensor:
    """``(6, 1, 16, 16)`` seeded normal images."""
    return torch.from_numpy(np.random.default_rng(1).normal(size=(6, 1, SIZE, SIZE)).astype(np.float32))


@pytest.fixture
def tied_maps() -> np.ndarray:
    """``(6, 4, 4)`` maps with values in {0, 1, 2}: many ties."""
    return np.random.default_rng(2).integers(0, 3, size=(6, GRID, GRID)).astype(np.float64)


@pytest.fixture
def boxes() -> list[np.ndarray]:
    """Target boxes for the 6 images (one or two boxes each)."""
    return [
        np.array([[2, 3, 9, 12]]),
        np.array([[0, 0, 5, 5], [10, 10, 16, 14]]),
        np.array([[4, 4, 12, 12]]),
        np.array([[8, 0, 16, 8]]),
        np.array([[1, 9, 7, 15]]),
        np.array([[5, 2, 11, 7], [3, 3, 6, 6]]),
    ]


def make_curve(probs, *, order: str = "morf", correct=None, fractions=None) -> PerturbationCurves:
    """A hand-made :class:`PerturbationCurves` (probabilities ``(B, K + 1)``)."""
    probs = np.asarray(probs, dtype=np.float64)
    B, points = probs.shape
    fractions = np.linspace(0.0, 1.0, points) if fractions is None else np.asarray(fractions, dtype=np.float64)
    targets = np.zeros(B, dtype=np.int64)
    correct = np.ones(B, dtype=bool) if correct is None else np.asarray(correct)
    return PerturbationCurves(
        order=order, fractions=fractions, removed=np.arange(points), probs=probs, targets=targets,
        predicted=np.where(correct, 0, 1), explained=targets, protocol={"order": order},
    )


@pytest.fixture
def curve_factory():
    return make_curve
