"""Common properties of every metric (range, invariances, batching) and analytic toy cases.

Each entry of ``METRICS`` turns ``(maps (B, h, w), data)`` into per-image scores ``(B,)``. The
invariance each one should have is stated with it: scores that depend on the map only through
its ranking (MoRF/LeRF orders, ROC/PR-AUC on patches or nearest-upsampled pixels, the pointing
game on nearest-upsampled pixels) are invariant to any strictly increasing transform; through
bilinear upsampling only positive scaling is (interpolation does not commute with non-linear
transforms).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
import torch

from infsa_viz.metrics import (
    aopc,
    box_auc,
    boxes_to_mask,
    lerf_auc,
    morf_aoc,
    perturbation_curves,
    pointing_game,
    removal_order,
)

PATCH, SIZE = 4, 16


@dataclass(frozen=True)
class Case:
    compute: Callable[..., np.ndarray]
    low: float
    high: float
    invariance: str  # "monotone" (any strictly increasing transform) or "scale" (positive scaling)
    atol: float = 1e-6  # batching tolerance: float32 forward passes differ in the last bits


def _curve(score, order, **options):
    def compute(maps, data, batch_size=256):
        curve = perturbation_curves(data["model"], data["images"], maps, data["targets"], patch_size=PATCH,
                                    order=order, steps=8, batch_size=batch_size)
        return score(curve, select="all", **options).per_image
    return compute


def _box(field, **options):
    def compute(maps, data):
        return getattr(box_auc(maps, data["boxes"], image_size=SIZE, **options), field)
    return compute


def _pointing(**options):
    def compute(maps, data):
        return pointing_game(maps, data["boxes"], image_size=SIZE, **options).hits
    return compute


METRICS = {
    "morf_aoc": Case(_curve(morf_aoc, "morf", clip=True), 0.0, 100.0, "monotone", atol=1e-4),
    "lerf_auc": Case(_curve(lerf_auc, "lerf", clip=True), 0.0, 100.0, "monotone", atol=1e-4),
    "aopc": Case(_curve(aopc, "morf"), -1.0, 1.0, "monotone"),
    "box_roc_auc[bilinear]": Case(_box("roc_auc"), 0.0, 1.0, "scale"),
    "box_roc_auc[nearest]": Case(_box("roc_auc", upsample="nearest"), 0.0, 1.0, "monotone"),
    "box_roc_auc[patch]": Case(_box("roc_auc", level="patch"), 0.0, 1.0, "monotone"),
    "box_pr_auc[bilinear]": Case(_box("pr_auc"), 0.0, 1.0, "scale"),
    "box_pr_auc[nearest]": Case(_box("pr_auc", upsample="nearest"), 0.0, 1.0, "monotone"),
    "box_pr_auc[patch]": Case(_box("pr_auc", level="patch"), 0.0, 1.0, "monotone"),
    "pointing_game[bilinear]": Case(_pointing(), 0.0, 1.0, "scale"),
    "pointing_game[nearest]": Case(_pointing(upsample="nearest"), 0.0, 1.0, "monotone"),
}
TRANSFORMS = {
    "monotone": lambda m: np.exp(2.0 * m) + m**3,
    "scale": lambda m: 4.0 * m,
}


@pytest.fixture
def data(vit, images, boxes):
    return {"model": vit, "images": images, "targets": np.array([0, 1, 2, 0, 1, 2]), "boxes": boxes}


@pytest.fixture(params=["continuous", "tied"])
def maps(request, tied_maps):
    if request.param == "tied":
        return tied_maps
    return np.random.default_rng(3).normal(size=tied_maps.shape)


def _subset(data, index):
    return {**data, "images": data["images"][index], "targets": data["targets"][index],
            "boxes": [data["boxes"][i] for i in index]}


@pytest.mark.parametrize("name", METRICS)
def test_range(name, maps, data):
    case = METRICS[name]
    values = case.compute(maps, data)
    assert values.shape == (6,) and np.isfinite(values).all()
    assert (values >= case.low).all() and (values <= case.high).all()


@pytest.mark.parametrize("name", METRICS)
def test_invariance_to_increasing_transform(name, maps, data):
    case = METRICS[name]
    np.testing.assert_allclose(case.compute(TRANSFORMS[case.invariance](maps), data), case.compute(maps, data),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", METRICS)
def test_batch_order_invariance(name, maps, data):
    case = METRICS[name]
    perm = np.array([3, 0, 5, 1, 4, 2])
    np.testing.assert_allclose(case.compute(maps[perm], _subset(data, perm)), case.compute(maps, data)[perm],
                               rtol=0, atol=case.atol)


@pytest.mark.parametrize("name", METRICS)
def test_batched_equals_unbatched(name, maps, data):
    case = METRICS[name]
    single = np.concatenate([case.compute(maps[i:i + 1], _subset(data, [i])) for i in range(6)])
    np.testing.assert_allclose(case.compute(maps, data), single, rtol=0, atol=case.atol)


@pytest.mark.parametrize("name", ["morf_aoc", "lerf_auc", "aopc"])
def test_forward_batch_size_does_not_change_scores(name, tied_maps, data):
    case = METRICS[name]
    np.testing.assert_allclose(case.compute(tied_maps, data, batch_size=1),
                               case.compute(tied_maps, data, batch_size=1000), rtol=0, atol=case.atol)


def test_unclipped_scores_stay_within_their_analytic_bounds(tied_maps, data):
    curves = perturbation_curves(data["model"], data["images"], tied_maps, data["targets"], patch_size=PATCH,
                                 order="both", steps=8)
    p0 = curves["morf"].probs[:, 0]
    morf = morf_aoc(curves["morf"], select="all").per_image
    lerf = lerf_auc(curves["lerf"], select="all").per_image
    assert (morf <= 100).all() and (morf >= 100 * (1 - 1 / p0)).all()
    assert (lerf >= 0).all() and (lerf <= 100 / p0).all()


# Analytic toy cases ---------------------------------------------------------------------------

def _peak_image() -> torch.Tensor:
    x = torch.from_numpy(np.random.default_rng(0).random((1, 1, SIZE, SIZE)).astype(np.float32))
    x[:, :, 8:12, 12:16] = 1.0  # patch (2, 3): logit 1 = 16 > bias 5
    return x


def test_model_reading_one_patch_morf_and_lerf(one_patch_model):
    x = _peak_image()
    peaked = np.zeros((1, 4, 4))
    peaked[0, 2, 3] = 1.0
    p0, removed = 1 / (1 + np.exp(5 - 16)), 1 / (1 + np.exp(5 - 0))  # sigmoid(16 - 5), sigmoid(0 - 5)
    q = removed / p0
    morf = perturbation_curves(one_patch_model, x, peaked, [1], patch_size=PATCH, order="morf")
    np.testing.assert_allclose(morf.probs[0], [p0] + [removed] * 20)  # drop at the first step
    f1 = morf.fractions[1]  # 1/16: round(16/20) = 1 patch
    expected = 100 * (1 - (1 + q) / 2 * f1 - q * (1 - f1))
    aoc = morf_aoc(morf).mean
    assert aoc == pytest.approx(expected) and aoc > 95

    reversed_curve = perturbation_curves(one_patch_model, x, -peaked, [1], patch_size=PATCH, order="morf")
    last = 1 - reversed_curve.fractions[-2]  # 1/16: the patch goes with the last step
    assert morf_aoc(reversed_curve).mean == pytest.approx(100 * (1 - q) / 2 * last) and morf_aoc(reversed_curve).mean < 5

    lerf = perturbation_curves(one_patch_model, x, peaked, [1], patch_size=PATCH, order="lerf")
    assert lerf_auc(lerf).mean == pytest.approx(100 - 100 * (1 - q) / 2 * last)
    assert aopc(morf).mean == pytest.approx(20 * (p0 - removed) / 21)


def test_tie_breaking_is_determined_by_the_seed(one_patch_model):
    x = _peak_image()
    flat = np.zeros((1, 4, 4))  # every patch tied: the removal order is the seeded permutation
    runs = {}
    for seed in (0, 1, 2, 0):
        curve = perturbation_curves(one_patch_model, x, flat, [1], patch_size=PATCH, steps=16, seed=seed)
        position = int(np.flatnonzero(removal_order(flat, seed=seed)[0] == 2 * 4 + 3)[0])
        dropped = curve.probs[0] < 0.5
        assert not dropped[:position + 1].any() and dropped[position + 1:].all()
        runs.setdefault(seed, curve.probs)
        np.testing.assert_array_equal(runs[seed], curve.probs)
    assert len({int(np.argmax(probs[0] < 0.5)) for probs in runs.values()}) > 1  # seeds differ


def test_box_indicator_map_scores_one(boxes):
    indicator = np.stack([boxes_to_mask(b, SIZE) for b in boxes]).astype(float)
    result = box_auc(indicator, boxes, image_size=SIZE)
    np.testing.assert_array_equal(result.roc_auc, 1.0)
    np.testing.assert_array_equal(result.pr_auc, 1.0)
    assert pointing_game(indicator, boxes, image_size=SIZE, ties="first", tolerance=0).accuracy == 1.0


def test_patch_aligned_indicator_token_map_scores_one():
    token = np.zeros((1, 4, 4))
    token[0, 1:3, 0:2] = 1.0
    box = [np.array([[0, 4, 8, 12]])]
    for options in ({"upsample": "nearest"}, {"level": "patch"}):
        result = box_auc(token, box, image_size=SIZE, **options)
        assert result.roc_auc[0] == 1.0 and result.pr_auc[0] == 1.0


def test_constant_map_is_chance(boxes):
    result = box_auc(np.ones((6, 4, 4)), boxes, image_size=SIZE)
    np.testing.assert_allclose(result.roc_auc, 0.5)
    positive = [boxes_to_mask(b, SIZE).mean() for b in boxes]
    np.testing.assert_allclose(result.pr_auc, positive)
    np.testing.assert_allclose(result.positive_fraction, positive)
