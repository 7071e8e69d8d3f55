"""Tests of infsa_viz/metrics/localisation.py and upsample.py: box AUCs, pointing game, resizing."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score, roc_auc_score

from infsa_viz.metrics import (
    UndefinedMetricWarning,
    box_auc,
    boxes_to_mask,
    pointing_game,
    upsample_map,
)


def test_boxes_to_mask_exclusive_corners():
    mask = boxes_to_mask(np.array([[1, 2, 3, 5]]), (6, 4))
    expected = np.zeros((6, 4), bool)
    expected[2:5, 1:3] = True
    np.testing.assert_array_equal(mask, expected)
    assert not boxes_to_mask(np.zeros((0, 4)), 5).any()
    assert boxes_to_mask([0, 0, 99, 99], 3).all()  # clipped to the image


def test_upsample_map_modes_and_types():
    maps = np.arange(4.0).reshape(1, 2, 2)
    nearest = upsample_map(maps, 4, mode="nearest")
    np.testing.assert_array_equal(nearest[0], np.kron(maps[0], np.ones((2, 2))))
    assert nearest.dtype == np.float32
    bilinear = upsample_map(torch.from_numpy(maps), (4, 6))
    assert isinstance(bilinear, torch.Tensor) and bilinear.shape == (1, 4, 6) and bilinear.dtype == torch.float32
    assert bilinear[0, 0, 0] == 0.0 and bilinear[0, -1, -1] == 3.0  # corners keep the corner tokens
    with pytest.raises(ValueError, match="mode='cubic'"):
        upsample_map(maps, 4, mode="cubic")
    with pytest.raises(ValueError, match="size=0"):
        upsample_map(maps, 0)


def test_box_auc_matches_sklearn_per_image(boxes):
    maps = np.random.default_rng(0).random((6, 4, 4))
    result = box_auc(maps, boxes, image_size=16)
    pixels = upsample_map(maps, 16)
    for i in range(6):
        labels = boxes_to_mask(boxes[i], 16).ravel()
        assert result.roc_auc[i] == pytest.approx(roc_auc_score(labels, pixels[i].ravel()))
        assert result.pr_auc[i] == pytest.approx(average_precision_score(labels, pixels[i].ravel()))
    assert isinstance(result.roc_auc_mean, float) and result.roc_auc_mean == pytest.approx(result.roc_auc.mean())
    assert result.n_undefined == 0 and result.negatives_roc_auc is None
    json.dumps(result.protocol)


def test_patch_level_threshold():
    # Box covers columns 0..5 of a 16-pixel image with 4-pixel patches: patch column 1 is half inside.
    maps = np.random.default_rng(0).random((1, 4, 4))
    box = [np.array([[0, 0, 6, 16]])]
    half = box_auc(maps, box, image_size=16, level="patch")
    labels = np.zeros((4, 4), bool)
    labels[:, :2] = True
    assert half.roc_auc[0] == pytest.approx(roc_auc_score(labels.ravel(), maps[0].ravel()))
    strict = box_auc(maps, box, image_size=16, level="patch", patch_positive_fraction=0.75)
    labels[:, 1] = False
    assert strict.roc_auc[0] == pytest.approx(roc_auc_score(labels.ravel(), maps[0].ravel()))
    assert half.protocol["upsample"] is None and half.protocol["level"] == "patch"


def test_box_auc_undefined_images_are_nan_counted_and_warned():
    maps = np.random.default_rng(0).random((3, 4, 4))
    boxes = [np.array([[0, 0, 8, 8]]), np.zeros((0, 4)), np.array([[0, 0, 16, 16]])]
    with pytest.warns(UndefinedMetricWarning, match="2 of 3"):
        result = box_auc(maps, boxes, image_size=16)
    assert np.isnan(result.roc_auc[1:]).all() and np.isnan(result.pr_auc[1:]).all()
    assert result.n_undefined == 2 and result.roc_auc_mean == pytest.approx(result.roc_auc[0])


def test_negatives_boxes_only_reported():
    maps = np.zeros((1, 16, 16))
    maps[0, :8, :8] = 2.0  # target
    maps[0, 8:, 8:] = 1.0  # distractor scores above the background but below the target
    target, distractor = [np.array([[0, 0, 8, 8]])], [np.array([[8, 8, 16, 16]])]
    plain = box_auc(maps, target, image_size=16)
    result = box_auc(maps, target, image_size=16, negatives_boxes=distractor)
    assert result.roc_auc[0] == plain.roc_auc[0] == 1.0
    assert result.negatives_roc_auc[0] == 1.0 and result.negatives_roc_auc_mean == 1.0
    swapped = box_auc(maps, distractor, image_size=16, negatives_boxes=target)
    assert swapped.negatives_roc_auc[0] == 0.0


def test_pointing_game_tolerance_and_scaling():
    maps = np.zeros((1, 48, 48))
    maps[0, 20, 30] = 1.0  # peak 3 px right of the box (x1 - 1 = 27)
    box = [np.array([[10, 10, 28, 28]])]
    default = pointing_game(maps, box, image_size=48)
    assert default.protocol["tolerance"] == pytest.approx(15 * 48 / 224)  # 3.21 px
    assert default.hits[0] == 1.0 and default.accuracy == 1.0
    assert pointing_game(maps, box, image_size=48, tolerance=2.9).hits[0] == 0.0
    maps[0, 20, 30], maps[0, 30, 30] = 0.0, 1.0  # 3 px right and 3 px below the corner: distance 4.24
    assert pointing_game(maps, box, image_size=48).hits[0] == 0.0
    assert pointing_game(maps, box, image_size=48, tolerance=4.25).hits[0] == 1.0


def test_pointing_game_ties_any_or_first():
    maps = np.zeros((1, 8, 8))
    maps[0, 0, 0] = maps[0, 6, 6] = 1.0  # first maximum outside, second inside
    box = [np.array([[5, 5, 8, 8]])]
    assert pointing_game(maps, box, image_size=8, tolerance=0).hits[0] == 1.0
    assert pointing_game(maps, box, image_size=8, tolerance=0, ties="first").hits[0] == 0.0


def test_pointing_game_without_boxes_is_nan_not_a_hit():
    maps = np.random.default_rng(0).random((2, 4, 4))
    maps[1, 0, 0] = 2.0  # the maximum falls in the second image's box
    with pytest.warns(UndefinedMetricWarning, match="target boxes covering no or every pixel"):
        result = pointing_game(maps, [np.zeros((0, 4)), np.array([[0, 0, 8, 8]])], image_size=16)
    assert np.isnan(result.hits[0]) and result.hits[1] == 1.0
    assert result.n_undefined == 1 and result.accuracy == 1.0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda m, b: box_auc(m, b, image_size=16, level="token"), "level='token'"),
        (lambda m, b: box_auc(m, b, image_size=16, upsample="area"), "upsample='area'"),
        (lambda m, b: box_auc(m, b, image_size=16, patch_positive_fraction=0), "patch_positive_fraction=0"),
        (lambda m, b: box_auc(m, b, image_size=16, patch_positive_fraction=1.5), "patch_positive_fraction=1.5"),
        (lambda m, b: box_auc(m, b, image_size=(15, 15), level="patch"), "dividing"),
        (lambda m, b: box_auc(m, b, image_size=2), "at most the image size"),
        (lambda m, b: box_auc(m, b[:1], image_size=16), "one per image"),
        (lambda m, b: box_auc(m, [np.array([[5, 0, 2, 4]])] * 2, image_size=16), "x0 <= x1"),
        (lambda m, b: box_auc(m, [np.array([[0, 0, 2]])] * 2, image_size=16), r"boxes\[0\] has shape"),
        (lambda m, b: box_auc(m[0], b, image_size=16), "maps has shape"),
        (lambda m, b: box_auc(m, b, image_size=16, negatives_boxes=b[:1]), "negatives_boxes has 1"),
        (lambda m, b: pointing_game(m, b, image_size=16, tolerance=-1), "tolerance=-1"),
        (lambda m, b: pointing_game(m, b, image_size=16, ties="all"), "ties='all'"),
        (lambda m, b: pointing_game(m, b, image_size="16"), "image_size='16'"),
    ],
)
def test_invalid_inputs_raise_value_error(call, match):
    maps = np.random.default_rng(0).random((2, 4, 4))
    boxes = [np.array([[0, 0, 8, 8]]), np.array([[4, 4, 12, 12]])]
    with pytest.raises(ValueError, match=match):
        call(maps, boxes)


@pytest.mark.parametrize("box", [[10, 10, 10, 20], [0, 0, 48, 48], [60, 60, 70, 70], [-5, -5, 60, 60]])
def test_degenerate_boxes_mean_the_same_to_every_box_metric(box):
    """Empty, outside or whole-image target boxes: undefined (nan) for AUC, pointing and curves alike."""
    import warnings

    from infsa_viz.metrics import box_curves

    maps = torch.rand(1, 6, 6)
    boxes = [np.array([box], float)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(box_auc(maps, boxes, image_size=48).roc_auc[0])
        assert np.isnan(pointing_game(maps, boxes, image_size=48).hits[0])
        assert box_curves(maps, boxes, image_size=48)[0] is None
