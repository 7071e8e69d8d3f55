"""Energy pointing game, relevance rank accuracy and complexity on analytic maps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from infsa_viz.metrics import (
    UndefinedMetricWarning,
    box_mass_share,
    complexity,
    relevance_rank_accuracy,
)


def test_mass_share_counts_positive_mass_in_the_box():
    maps = np.zeros((1, 4, 4))
    maps[0, 0, 0], maps[0, 3, 3], maps[0, 1, 1] = 3.0, 1.0, -5.0  # negative mass is ignored
    box = [np.array([[0, 0, 4, 4]])]  # exactly patch (0, 0) of a 16-px image
    assert box_mass_share(maps, box, image_size=16)[0] == pytest.approx(0.75)
    half = [np.array([[0, 0, 2, 4]])]  # half of patch (0, 0)
    assert box_mass_share(maps, half, image_size=16)[0] == pytest.approx(3.0 * 8 / 16 / 4.0)


def test_mass_share_is_nan_without_positive_mass():
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(box_mass_share(-np.ones((1, 2, 2)), [np.array([[0, 0, 4, 4]])], image_size=8)[0])


def test_rank_accuracy_perfect_inverse_and_ties():
    box = [np.array([[0, 0, 8, 8]])]  # patches (0,0),(0,1),(1,0),(1,1) of a 4x4 grid, 16-px image
    inside = np.zeros((1, 4, 4))
    inside[0, :2, :2] = 1.0
    assert relevance_rank_accuracy(inside, box, image_size=16)[0] == pytest.approx(1.0)
    assert relevance_rank_accuracy(1 - inside, box, image_size=16)[0] == pytest.approx(0.0)
    flat = np.ones((1, 4, 4))  # every pixel tied: expected share = box share
    assert relevance_rank_accuracy(flat, box, image_size=16)[0] == pytest.approx(0.25)


def test_complexity_of_one_hot_and_flat_maps():
    one_hot = np.zeros((1, 3, 3))
    one_hot[0, 1, 2] = -2.0
    values = complexity(np.concatenate([one_hot, np.ones((1, 3, 3))]))
    assert values[0] == pytest.approx(0.0) and values[1] == pytest.approx(math.log(9))
    assert math.isnan(complexity(np.zeros((1, 2, 2)))[0])


def test_mask_forms_equal_the_box_forms_on_box_masks():
    from infsa_viz.metrics import boxes_to_mask, mask_mass_share, mask_rank_accuracy

    rng = np.random.default_rng(3)
    maps = rng.normal(size=(5, 4, 4))
    boxes = [np.array([[1, 2, 9, 15]]), np.array([[0, 0, 16, 4]]), np.array([[3, 3, 4, 4]]),
             np.array([[0, 0, 16, 16]]), np.array([[5, 0, 11, 7], [12, 12, 16, 16]])]
    masks = np.stack([boxes_to_mask(b, 16) for b in boxes])
    with pytest.warns(UndefinedMetricWarning):  # the box covering the image has no rank accuracy
        np.testing.assert_array_equal(mask_rank_accuracy(maps, masks), relevance_rank_accuracy(maps, boxes, image_size=16))
    np.testing.assert_array_equal(mask_mass_share(maps, masks), box_mass_share(maps, boxes, image_size=16))
    with pytest.raises(ValueError, match="masks"):
        mask_mass_share(maps, masks.astype(int))
