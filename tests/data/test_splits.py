"""The one test split and labelled image sets (infsa_viz/data/splits.py)."""

from __future__ import annotations

import numpy as np
import pytest

from infsa_viz import data
from infsa_viz.data import TEST_SEED, TEST_SIZE, LabelledImages, generate_cluttered


def test_image_i_of_the_test_split_is_the_same_whatever_n():
    full = data.test_split()
    assert len(full) == TEST_SIZE and full.description["seed"] == TEST_SEED
    for n in (1, 5, 1000):
        part = data.test_split(n)
        assert len(part) == n and part.names[-1] == f"test:{n - 1}"
        np.testing.assert_array_equal(part.images, full.images[:n])
        np.testing.assert_array_equal(part.labels, full.labels[:n])
        for i in range(n):
            np.testing.assert_array_equal(part.boxes[i], full.boxes[i])
            np.testing.assert_array_equal(part.negative_boxes[i], full.negative_boxes[i])
    # ... and it is the generator's image i, asked for on its own.
    one = generate_cluttered(1, split="test", seed=TEST_SEED, start=1234)
    np.testing.assert_array_equal(one.images[0], full.images[1234])
    np.testing.assert_array_equal(one.target_boxes, full.boxes[1234])


def test_the_test_split_is_read_only_and_cached():
    full = data.test_split()
    assert data.test_split() is full
    with pytest.raises(ValueError):
        full.images[0, 0, 0] = 1


@pytest.mark.parametrize("n", [0, -1, TEST_SIZE + 1, 2.5, True])
def test_bad_sizes_are_refused(n):
    with pytest.raises(ValueError, match="n="):
        data.test_split(n)


def test_subset_keeps_images_labels_boxes_and_names_together():
    full = data.test_split(20)
    part = full.subset([7, 3])
    assert part.names == ["test:7", "test:3"]
    np.testing.assert_array_equal(part.images, full.images[[7, 3]])
    np.testing.assert_array_equal(part.boxes[1], full.boxes[3])
    assert part.description["indices"] == [7, 3]
    with pytest.raises(ValueError, match="out of range"):
        full.subset([20])


def test_labelled_images_checks_lengths():
    image = np.zeros((4, 4), np.uint8)
    with pytest.raises(ValueError, match="one entry per image"):
        LabelledImages(images=[image, image], labels=np.array([0]), boxes=[np.zeros((0, 4))])


def test_benchmarks_name_their_test_splits():
    from infsa_viz.data import BENCHMARKS, ClutteredDigitsConfig

    default = data.test_split(3)
    assert default.description["name"] == "cluttered-digits"
    assert default.description["settings_hash"] == ClutteredDigitsConfig().settings_hash()  # unchanged
    np.testing.assert_array_equal(data.test_split(3, benchmark="cluttered-digits").images, default.images)
    hard = BENCHMARKS["cluttered-digits-hard"]
    part = data.test_split(4, benchmark=hard.name)
    assert part.images.shape == (4, 96, 96) and part.description["seed"] == hard.test_seed
    one = generate_cluttered(1, split="test", seed=hard.test_seed, config=hard.config, start=3)
    np.testing.assert_array_equal(one.images[0], part.images[3])  # image i depends only on (split, seed, i)
    assert len(part.negative_boxes[0]) == hard.config.num_distractors
    assert hard.config.canvas_size // 8 == 12  # 144 tokens at patch 8
    with pytest.raises(ValueError, match="benchmark="):
        data.test_split(3, benchmark="cluttered-digits-easy")


def test_the_test_split_carries_each_distractors_class():
    from infsa_viz.data.cluttered import generate_cluttered
    from infsa_viz.data.splits import TEST_SEED

    part = data.test_split(5)
    sample = generate_cluttered(5, split="test", seed=TEST_SEED)
    np.testing.assert_array_equal(np.stack(part.negative_labels), sample.distractor_labels)
    np.testing.assert_array_equal(part.images, sample.images)  # the images are unchanged
    picked = part.subset([3, 1])
    np.testing.assert_array_equal(np.stack(picked.negative_labels), sample.distractor_labels[[3, 1]])


def test_negative_labels_need_one_class_per_negative_box():
    boxes = [np.zeros((1, 4))]
    with pytest.raises(ValueError, match="negative_labels"):
        data.LabelledImages(np.zeros((1, 4, 4), np.uint8), np.array([0]), boxes, [np.zeros((2, 4))],
                            negative_labels=[np.array([1])])
    with pytest.raises(ValueError, match="negative_labels"):
        data.LabelledImages(np.zeros((1, 4, 4), np.uint8), np.array([0]), boxes, negative_labels=[np.array([1])])
