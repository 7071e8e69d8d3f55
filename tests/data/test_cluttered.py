"""Tests of the cluttered-digits generator (infsa_viz/data/cluttered.py)."""

import dataclasses

import numpy as np
import pytest

from infsa_viz.data import (
    PIXEL_MEAN,
    PIXEL_STD,
    ClutteredDigitsConfig,
    ClutteredSample,
    cluttered,
    cluttered_epoch,
    generate_cluttered,
    load_mnist_digits,
)

NO_BACKGROUND = ClutteredDigitsConfig(background="none")
ARRAY_FIELDS = [f.name for f in dataclasses.fields(ClutteredSample)]


@pytest.fixture(scope="module")
def sample():
    return generate_cluttered(600, split="train", seed=3)


def _all_boxes(s):
    return np.concatenate([s.target_boxes[:, None], s.distractor_boxes], axis=1)  # (n, K+1, 4)


def _assert_tight(patch):
    assert patch.any(axis=1)[[0, -1]].all() and patch.any(axis=0)[[0, -1]].all()


def test_shapes_and_dtypes(sample):
    n = len(sample)
    expected = {
        "images": ((n, 48, 48), np.uint8),
        "labels": ((n,), np.int64),
        "target_boxes": ((n, 4), np.int64),
        "distractor_boxes": ((n, 2, 4), np.int64),
        "distractor_labels": ((n, 2), np.int64),
        "target_masks": ((n, 48, 48), np.bool_),
        "target_indices": ((n,), np.int64),
        "distractor_indices": ((n, 2), np.int64),
    }
    assert set(expected) == set(ARRAY_FIELDS)
    for name, (shape, dtype) in expected.items():
        value = getattr(sample, name)
        assert value.shape == shape and value.dtype == dtype, name


def test_single_digit_box_is_exactly_the_ink_bounding_box():
    s = generate_cluttered(
        200, split="test", seed=0, config=dataclasses.replace(NO_BACKGROUND, num_distractors=0)
    )
    for image, (x0, y0, x1, y1), mask in zip(s.images, s.target_boxes, s.target_masks, strict=True):
        ys, xs = np.nonzero(image)
        assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == (x0, y0, x1, y1)
        assert mask.any() and not mask[:y0].any() and not mask[y1:].any()
        assert not mask[:, :x0].any() and not mask[:, x1:].any()
        np.testing.assert_array_equal(mask, image > 63)


def test_boxes_contain_all_ink_and_are_tight(monkeypatch):
    """Records every rendered patch; the canvas must be their max() placed at the boxes."""
    rendered = []
    original = cluttered.render_digit

    def recording(digit, ink_box, size):
        patch = original(digit, ink_box, size)
        rendered.append(patch)
        return patch

    monkeypatch.setattr(cluttered, "render_digit", recording)
    s = generate_cluttered(300, split="train", seed=11, config=NO_BACKGROUND)
    assert len(rendered) == 300 * 3  # default sizes never need a distractor re-render
    boxes = _all_boxes(s)
    for i in range(len(s)):
        canvas = np.zeros((48, 48), np.uint8)
        for j, (x0, y0, x1, y1) in enumerate(boxes[i]):
            patch = rendered[3 * i + j]
            assert patch.shape == (y1 - y0, x1 - x0)
            _assert_tight(patch)
            np.maximum(canvas[y0:y1, x0:x1], patch, out=canvas[y0:y1, x0:x1])
        np.testing.assert_array_equal(canvas, s.images[i])
        np.testing.assert_array_equal(
            s.target_masks[i][boxes[i, 0, 1] : boxes[i, 0, 3], boxes[i, 0, 0] : boxes[i, 0, 2]],
            rendered[3 * i] > 63,
        )


def test_boxes_inside_canvas_and_sizes_in_range(sample):
    boxes = _all_boxes(sample)
    assert boxes.min() >= 0 and boxes[..., 2:].max() <= 48
    longest = np.maximum(boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1])  # (n, K+1)
    assert longest[:, 0].min() >= 17 and longest[:, 0].max() <= 22
    assert longest[:, 1:].min() >= 1 and longest[:, 1:].max() <= 12


def test_label_is_class_of_the_largest_digit(sample):
    boxes = _all_boxes(sample)
    longest = np.maximum(boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1])  # (n, K+1)
    assert np.all(longest[:, :1] > longest[:, 1:])
    pool_labels = load_mnist_digits("train")[1]
    np.testing.assert_array_equal(sample.labels, pool_labels[sample.target_indices])
    np.testing.assert_array_equal(sample.distractor_labels, pool_labels[sample.distractor_indices])
    assert set(np.unique(sample.labels)) == set(range(10))


def test_pairwise_overlap_below_limit(sample):
    boxes = _all_boxes(sample)
    a, b = boxes[:, :, None, :], boxes[:, None, :, :]  # (n, D, 1, 4), (n, 1, D, 4)
    iw = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    ih = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    area = (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])  # (n, D)
    frac = iw * ih / np.minimum(area[:, :, None], area[:, None, :])
    off_diagonal = ~np.eye(3, dtype=bool)
    assert frac[:, off_diagonal].max() < 0.10


def test_background_is_faint_photo_or_black(sample):
    outside = np.ones_like(sample.images, dtype=bool)
    for i, row in enumerate(_all_boxes(sample)):
        for x0, y0, x1, y1 in row:
            outside[i, y0:y1, x0:x1] = False
    assert sample.images[outside].max() <= 63 and sample.images[outside].std() > 3
    plain = generate_cluttered(100, split="train", seed=3, config=NO_BACKGROUND)
    outside_plain = np.ones_like(plain.images, dtype=bool)
    for i, row in enumerate(_all_boxes(plain)):
        for x0, y0, x1, y1 in row:
            outside_plain[i, y0:y1, x0:x1] = False
    assert plain.images[outside_plain].max() == 0


def test_same_seed_same_bytes_different_seed_different():
    a = generate_cluttered(64, split="train", seed=5)
    b = generate_cluttered(64, split="train", seed=5)
    for name in ARRAY_FIELDS:
        assert getattr(a, name).tobytes() == getattr(b, name).tobytes(), name
    assert generate_cluttered(64, split="train", seed=6).images.tobytes() != a.images.tobytes()
    assert generate_cluttered(64, split="test", seed=5).images.tobytes() != a.images.tobytes()
    other = dataclasses.replace(ClutteredDigitsConfig(), background_intensity=0.2)
    assert generate_cluttered(64, split="train", seed=5, config=other).images.tobytes() != a.images.tobytes()


def test_epochs_are_fresh_and_reproducible():
    e0, e0_again, e1 = (cluttered_epoch(e, n=32, seed=1) for e in (0, 0, 1))
    assert isinstance(e0, ClutteredSample) and len(e0) == 32
    assert e0.images.tobytes() == e0_again.images.tobytes()
    assert e0.images.tobytes() != e1.images.tobytes()
    assert e0.images.tobytes() != generate_cluttered(32, split="train", seed=1).images.tobytes()
    np.testing.assert_array_equal(cluttered_epoch(0, n=8, seed=1).images, e0.images[:8])  # image i of an epoch


@pytest.mark.parametrize("split", ["train", "test"])
def test_image_i_does_not_depend_on_how_many_images_are_asked_for(split):
    """Image i is a function of (split, seed, i) alone: every field, for n = 1, 7, 40 and windows."""
    full = generate_cluttered(40, split=split, seed=9)
    for n in (1, 7):
        head = generate_cluttered(n, split=split, seed=9)
        for name in ARRAY_FIELDS:
            np.testing.assert_array_equal(getattr(head, name), getattr(full, name)[:n], err_msg=name)
    window = generate_cluttered(5, split=split, seed=9, start=31)
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(window, name), getattr(full, name)[31:36], err_msg=name)


def test_test_split_only_reads_the_test_pool(monkeypatch):
    requested = []
    original = cluttered._digit_pool

    def spy(split):
        requested.append(split)
        return original(split)

    monkeypatch.setattr(cluttered, "_digit_pool", spy)
    s = generate_cluttered(50, split="test", seed=0)
    cluttered_epoch(0, n=5, seed=0)
    assert requested == ["test", "train"]
    pool = original("test")
    assert pool.images is load_mnist_digits("test")[0]  # pool identity
    assert s.target_indices.max() < len(pool.labels) and s.distractor_indices.max() < len(pool.labels)
    train = {d.tobytes() for d in load_mnist_digits("train")[0]}
    used = np.concatenate([s.target_indices, s.distractor_indices.ravel()])
    assert not any(pool.images[k].tobytes() in train for k in used)


def test_normalisation_constants_match_a_fresh_sample():
    x = generate_cluttered(4000, split="train", seed=2024).images / 255.0
    assert abs(x.mean() - PIXEL_MEAN) < 0.01
    assert abs(x.std() - PIXEL_STD) < 0.01


def test_config_hash_and_dict_round_trip():
    config = ClutteredDigitsConfig()
    h = config.settings_hash()
    assert len(h) == 16 and int(h, 16) >= 0
    assert ClutteredDigitsConfig(**config.to_dict()) == config
    assert ClutteredDigitsConfig(**config.to_dict()).settings_hash() == h
    assert dataclasses.replace(config, num_distractors=3).settings_hash() != h
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.canvas_size = 64


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("canvas_size", 20),
        ("target_size", (22, 18)),
        ("target_size", (18.5, 22)),
        ("distractor_size", (9, 18)),
        ("num_distractors", -1),
        ("max_overlap", 0.0),
        ("background", "noise"),
        ("background_intensity", 1.5),
        ("mask_threshold", 255),
    ],
)
def test_invalid_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        ClutteredDigitsConfig(**{field: value})


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"n": -1}, "n="), ({"seed": -2}, "seed="), ({"seed": True}, "seed="), ({"split": "val"}, "split="),
     ({"start": -1}, "start=")],
)
def test_invalid_arguments(kwargs, name):
    args = {"n": 2, "split": "train", "seed": 0} | kwargs
    n = args.pop("n")
    with pytest.raises(ValueError, match=name):
        generate_cluttered(n, **args)


def test_crowded_config_raises():
    crowded = ClutteredDigitsConfig(canvas_size=22, target_size=(20, 22), num_distractors=6, max_overlap=0.01)
    with pytest.raises(ValueError, match="too crowded"):
        generate_cluttered(3, split="train", seed=0, config=crowded)


def test_hard_benchmark_normalisation_matches_a_fresh_sample():
    from infsa_viz.data import BENCHMARKS

    hard = BENCHMARKS["cluttered-digits-hard"]
    x = generate_cluttered(1000, split="train", seed=2024, config=hard.config).images / 255.0
    assert abs(x.mean() - hard.preprocessing.mean[0]) < 0.01
    assert abs(x.std() - hard.preprocessing.std[0]) < 0.01
    # the target mask threshold is the brightest background pixel, so the mask holds digit ink only
    assert hard.config.mask_threshold == int(255 * hard.config.background_intensity)
