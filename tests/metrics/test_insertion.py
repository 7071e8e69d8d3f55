"""Deletion / insertion and positive / negative perturbation against loops written out here."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from infsa_viz.metrics import deletion_insertion, positive_negative_perturbation
from infsa_viz.metrics.insertion import blurred

PATCH = 4


def _copy(image, other, top, patch=PATCH):
    """``image`` with the patches ``top`` (flat indices on the grid) taken from ``other``."""
    out = image.clone()
    w = image.shape[-1] // patch
    for t in top:
        r, c = divmod(int(t), w)
        out[..., r * patch:(r + 1) * patch, c * patch:(c + 1) * patch] = other[..., r * patch:(r + 1) * patch,
                                                                               c * patch:(c + 1) * patch]
    return out


def test_deletion_insertion_follow_the_rise_definition(vit, images):
    rng = np.random.default_rng(0)
    maps = rng.random((2, 4, 4))  # distinct values: no ties
    labels = np.array([0, 2])
    x = images[:2]
    result = deletion_insertion(vit, x, maps, labels, patch_size=PATCH, steps=4, blur_sigma=1.5)
    blur = blurred(x, 1.5).float()
    for b in range(2):
        order = np.argsort(-maps[b].ravel())
        for k, n in enumerate([0, 4, 8, 12, 16]):
            with torch.no_grad():
                deleted = torch.softmax(vit(_copy(x[b:b + 1], blur[b:b + 1], order[:n])).double(), -1)[0, labels[b]]
                inserted = torch.softmax(vit(_copy(blur[b:b + 1], x[b:b + 1], order[:n])).double(), -1)[0, labels[b]]
            assert result.deletion[b, k] == pytest.approx(float(deleted), abs=1e-5)
            assert result.insertion[b, k] == pytest.approx(float(inserted), abs=1e-5)
    expected = ((result.deletion[:, 1:] + result.deletion[:, :-1]) / 2 * 0.25).sum(1)
    assert np.allclose(result.deletion_auc, expected)


def test_constant_image_gives_flat_curves(one_patch_model):
    x = torch.full((1, 1, 16, 16), 0.3)  # its blur is itself
    result = deletion_insertion(one_patch_model, x, np.random.default_rng(1).random((1, 4, 4)), [1],
                                patch_size=PATCH, steps=4)
    assert np.allclose(result.deletion, result.deletion[0, 0]) and np.allclose(result.insertion, result.deletion)


def test_positive_negative_follow_chefers_definition(one_patch_model):
    """Logit 1 = pixel sum of patch (2, 3), logit 0 = 5: class 1 wins while that patch is kept."""
    x = torch.ones(1, 1, 16, 16)
    maps = np.arange(16.0).reshape(1, 4, 4)
    maps[0, 2, 3] = 100.0  # the patch that matters is the most relevant
    result = positive_negative_perturbation(one_patch_model, x, maps, [1], patch_size=PATCH,
                                            fractions=(0.0, 0.5, 0.75))
    assert result.positive.tolist() == [[1.0, 0.0, 0.0]]  # removed at the first step
    assert result.negative.tolist() == [[1.0, 1.0, 1.0]]  # removed last, never within 75 %
    assert result.positive_auc[0] == pytest.approx((0.5 * 0.5) / 0.75)
    assert result.negative_auc[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="fractions"):
        positive_negative_perturbation(one_patch_model, x, maps, [1], patch_size=PATCH, fractions=(0.5, 0.2))
