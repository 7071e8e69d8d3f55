"""Scenes of the cluttered-digits generator (infsa_viz/data/scenes.py): re-rendering and masks."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from infsa_viz.data import (
    BENCHMARKS,
    ClutteredDigitsConfig,
    LabelledImages,
    Scene,
    cluttered,
    generate_cluttered,
    generate_scenes,
    object_names,
    test_split,
)
from infsa_viz.data._render import PHOTO_DOWNSCALES, PHOTO_NAMES, alternative_photo, photo_crop

CONFIGS = {name: b.config for name, b in BENCHMARKS.items() if isinstance(b.config, ClutteredDigitsConfig)}
N_IMAGES = {"cluttered-digits": 120, "cluttered-digits-hard": 40}


def _naive_composite(scene: Scene, keep: list[int], background: np.ndarray) -> np.ndarray:
    """The max-composite written out pixel by pixel: what a pixel shows is the brightest kept object."""
    S = background.shape[0]
    out = np.empty((S, S), np.uint8)
    for y, x in itertools.product(range(S), range(S)):
        value = int(background[y, x])
        for k in keep:
            x0, y0, x1, y1 = scene.boxes[k]
            if x0 <= x < x1 and y0 <= y < y1:
                value = max(value, int(scene.parts[k][y - y0, x - x0]))
        out[y, x] = value
    return out


@pytest.mark.parametrize("benchmark", sorted(CONFIGS))
def test_each_scene_renders_its_published_image_labels_and_boxes(benchmark):
    split = test_split(N_IMAGES[benchmark], benchmark=benchmark)
    assert split.scenes is not None and len(split.scenes) == len(split)
    K = CONFIGS[benchmark].num_distractors
    for i, scene in enumerate(split.scenes):
        np.testing.assert_array_equal(scene.render(), split.images[i])
        np.testing.assert_array_equal(scene.boxes[:1], split.boxes[i])
        np.testing.assert_array_equal(scene.boxes[1:], split.negative_boxes[i])
        assert scene.labels[0] == split.labels[i]
        np.testing.assert_array_equal(scene.labels[1:], split.negative_labels[i])
        assert scene.object_names == object_names(K) and scene.num_objects == K + 2


@pytest.mark.parametrize("benchmark", sorted(CONFIGS))
def test_removing_object_k_equals_the_scene_generated_without_it(benchmark, monkeypatch):
    """The generator run again with digit k's patch blanked (same shapes, so the same layout and
    background) makes, pixel for pixel, the image the scene re-renders without digit k."""
    config, n = CONFIGS[benchmark], N_IMAGES[benchmark]
    K = config.num_distractors
    scenes = generate_scenes(n, split="test", seed=7, config=config)
    original = cluttered.render_digit
    for k in range(K + 1):
        calls = []

        def blank_kth(digit, ink_box, size, k=k, calls=calls):
            patch = original(digit, ink_box, size)
            calls.append(patch.shape)
            return np.zeros_like(patch) if (len(calls) - 1) % (K + 1) == k else patch

        monkeypatch.setattr(cluttered, "render_digit", blank_kth)
        without = generate_cluttered(n, split="test", seed=7, config=config)
        assert len(calls) == n * (K + 1)  # no distractor needed a re-render: call j of an image is digit j
        for i, scene in enumerate(scenes):
            np.testing.assert_array_equal(scene.render(remove=[k]), without.images[i], err_msg=f"image {i}, digit {k}")
        monkeypatch.setattr(cluttered, "render_digit", original)


def test_any_subset_of_digits_removes_like_the_naive_composite():
    for scene in generate_scenes(3, split="test", seed=1):
        digits = range(len(scene.parts))
        for size in range(len(scene.parts) + 1):
            for removed in itertools.combinations(digits, size):
                keep = [k for k in digits if k not in removed]
                np.testing.assert_array_equal(scene.render(remove=removed),
                                              _naive_composite(scene, keep, scene.background))
        np.testing.assert_array_equal(scene.render(remove=digits), scene.background)
        np.testing.assert_array_equal(scene.render(swap_background=True),
                                      _naive_composite(scene, list(digits), scene.alternative_background))


@pytest.mark.parametrize("benchmark", sorted(CONFIGS))
def test_each_mask_covers_exactly_its_objects_visible_pixels(benchmark):
    for scene in generate_scenes(N_IMAGES[benchmark], split="test", seed=2, config=CONFIGS[benchmark]):
        masks = scene.masks()
        image = scene.render()
        assert masks.shape == (scene.num_objects, *image.shape) and masks.dtype == bool
        for k in range(len(scene.parts)):  # a digit's pixels: those its removal changes
            np.testing.assert_array_equal(masks[k], image != scene.render(remove=[k]))
            x0, y0, x1, y1 = scene.boxes[k]
            assert masks[k].sum() == masks[k][y0:y1, x0:x1].sum()
            assert (image[masks[k]] > 0).all()
        np.testing.assert_array_equal(masks[-1], image == scene.background)  # the background shows
        assert masks.sum(axis=0).max() <= 1  # disjoint


def test_masks_follow_the_written_definition_pixel_by_pixel():
    """Digit k owns p iff its value is strictly above the background's and every other digit's;
    the background owns p iff no digit is above it; two digits tied above it leave p unowned."""
    background = np.array([[5, 5, 5], [5, 5, 5], [0, 9, 5]], np.uint8)
    a = np.array([[9, 0, 3], [7, 7, 0]], np.uint8)  # at rows 0-1, columns 0-2
    b = np.array([[7, 2], [6, 9]], np.uint8)  # at rows 1-2, columns 1-2
    scene = Scene(background, background, (a, b), np.array([[0, 0, 3, 2], [1, 1, 3, 3]]), np.array([1, 2]))
    masks = scene.masks()
    expected = np.zeros((3, 3, 3), bool)
    expected[0, 0, 0] = expected[0, 1, 0] = True  # a=9 > 5; a=7 > 5 (b absent there)
    expected[1, 2, 2] = True  # b=9 > 5
    # (1, 1): a=7 ties b=7 above the background: nobody's.
    expected[2] = np.array([[0, 1, 1], [0, 0, 1], [1, 1, 0]], bool)  # background >= every digit
    np.testing.assert_array_equal(masks, expected)
    np.testing.assert_array_equal(scene.render(), np.array([[9, 5, 5], [7, 7, 5], [0, 9, 9]], np.uint8))


def test_background_swap_is_the_other_photo_at_the_same_scale_and_offset():
    config, seed, n = ClutteredDigitsConfig(), 4, 20
    scenes = generate_scenes(n, split="test", seed=seed, config=config)
    pool_size = len(cluttered._digit_pool("test").labels)
    for i, scene in enumerate(scenes):  # the image's own draw, as the generator makes it
        rng = np.random.default_rng(np.random.SeedSequence([seed, cluttered._STREAM_SAMPLE, 2, i]))
        draw = cluttered._draw(rng, pool_size, config)
        pick, u = int(draw["photo_pick"]), draw["photo_u"]
        np.testing.assert_array_equal(scene.background, photo_crop(config.background_intensity, pick, u, 48))
        np.testing.assert_array_equal(scene.alternative_background,
                                      photo_crop(config.background_intensity, alternative_photo(pick), u, 48))
        assert not np.array_equal(scene.alternative_background, scene.background)
        swapped = scene.render(swap_background=True)
        no_ink = ~scene.layers()[:-1].any(axis=0)  # no digit has a nonzero pixel there
        np.testing.assert_array_equal(swapped[no_ink], scene.alternative_background[no_ink])
    scales = len(PHOTO_DOWNSCALES)
    for pick in range(len(PHOTO_NAMES) * scales):
        other = alternative_photo(pick)
        assert other // scales != pick // scales and other % scales == pick % scales
        assert alternative_photo(other) == pick


def test_black_background_swaps_to_black():
    (scene,) = generate_scenes(1, split="train", seed=0, config=ClutteredDigitsConfig(background="none"))
    np.testing.assert_array_equal(scene.render(swap_background=True), scene.render())
    assert not scene.background.any()


def test_interventions_stack_every_single_object_change():
    (scene,) = generate_scenes(1, split="test", seed=3)
    stack = scene.interventions()
    assert stack.shape == (scene.num_objects, 48, 48)
    for k in range(len(scene.parts)):
        np.testing.assert_array_equal(stack[k], scene.render(remove=[scene.object_names[k]]))
    np.testing.assert_array_equal(stack[-1], scene.render(swap_background=True))


def test_scene_arrays_are_read_only_and_bad_requests_are_refused():
    (scene,) = generate_scenes(1, split="test", seed=3)
    for array in (scene.background, scene.boxes, scene.labels, *scene.parts):
        with pytest.raises(ValueError):
            array.flat[0] = 1
    with pytest.raises(ValueError, match="background"):
        scene.render(remove=["background"])
    for bad in ("tree", 9, -1, True):
        with pytest.raises(ValueError, match="object"):
            scene.render(remove=[bad])
    with pytest.raises(ValueError, match="box"):
        Scene(scene.background, scene.background, (np.ones((3, 3), np.uint8),), np.array([[46, 0, 49, 3]]),
              np.array([1]))
    with pytest.raises(ValueError, match="alternative_background"):
        Scene(scene.background, scene.background[:4], scene.parts, scene.boxes, scene.labels)


def test_labelled_images_carry_scenes_through_subsets():
    split = test_split(10)
    part = split.subset([4, 2])
    assert [s is t for s, t in zip(part.scenes, (split.scenes[4], split.scenes[2]), strict=True)] == [True, True]
    assert test_split().scenes[9] is split.scenes[9]
    image = np.zeros((4, 4), np.uint8)
    with pytest.raises(ValueError, match="scenes"):
        LabelledImages(images=[image], labels=np.array([0]), boxes=[np.zeros((0, 4))], scenes=[])
    assert dataclasses.replace(part, scenes=None).subset([0]).scenes is None
