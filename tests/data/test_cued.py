"""Cued digits (infsa_viz/data/cued.py): the controlled cue, in-distribution interventions, the test split."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from infsa_viz.data import (
    BENCHMARKS,
    CUE_CONDITIONS,
    GLYPHS,
    CuedDigitsConfig,
    cue_conditions,
    cued_epoch,
    generate_cued,
    test_split,
)
from infsa_viz.data.cued import _digit_pool

CUE = 4  # index of the cue among the default config's objects (target, 3 distractor slots, cue)


def _composite(scene, keep, *, replaced=(), background=None):
    """The max-composite written out independently: each kept part (or its replacement) over the background."""
    canvas = (scene.background if background is None else background).astype(np.int64).copy()
    for k in keep:
        patch, box = scene.replacements[k] if k in replaced else (scene.parts[k], scene.boxes[k])
        x0, y0, x1, y1 = box
        canvas[y0:y1, x0:x1] = np.maximum(canvas[y0:y1, x0:x1], patch)
    return canvas.astype(np.uint8)


def test_glyphs_are_ten_distinct_tight_patterns():
    assert GLYPHS.shape == (10, 7, 7)
    assert len({g.tobytes() for g in GLYPHS}) == 10
    for g in GLYPHS:
        assert g[0].any() and g[-1].any() and g[:, 0].any() and g[:, -1].any()
    ink = GLYPHS.reshape(10, -1)
    assert not any((ink[a] <= ink[b]).all() for a in range(10) for b in range(10) if a != b)  # no glyph inside another


def test_image_i_depends_only_on_its_index_and_scenes_render_it():
    images, labels, scenes = generate_cued(30, split="test", seed=3)
    later, later_labels, _ = generate_cued(10, split="test", seed=3, start=20)
    np.testing.assert_array_equal(images[20:], later)
    np.testing.assert_array_equal(labels[20:], later_labels)
    again, _, _ = generate_cued(30, split="test", seed=3)
    np.testing.assert_array_equal(images, again)
    pool = _digit_pool("test")
    for image, label, scene in zip(images, labels, scenes, strict=True):
        np.testing.assert_array_equal(scene.render(), image)
        assert scene.object_names == ("target", "distractor_1", "distractor_2", "distractor_3", "cue", "background")
        assert scene.labels[0] == label and label in pool.labels
        assert (scene.labels[~scene.present[:-1]] == -1).all()


def test_removing_the_cue_is_the_image_the_generator_draws_without_it():
    """Every random choice is drawn whether used or not, so the scene with its cue removed is, pixel for
    pixel, the image of the same stream generated with cue_presence=0."""
    shown = CuedDigitsConfig(cue_presence=1.0, cue_agreement=0.3)
    images, _, scenes = generate_cued(40, split="train", seed=7, config=shown)
    without, _, bare = generate_cued(40, split="train", seed=7, config=dataclasses.replace(shown, cue_presence=0.0))
    for scene, image, expected, other in zip(scenes, images, without, bare, strict=True):
        np.testing.assert_array_equal(scene.render(remove=["cue"]), expected)
        np.testing.assert_array_equal(scene.intervene(["cue"]), expected)
        assert not other.present[CUE] and scene.present[CUE]
        keep = [k for k in range(len(scene.parts)) if k != CUE and scene.present[k]]
        np.testing.assert_array_equal(expected, _composite(scene, keep))


def test_swaps_and_removals_re_render_pixel_exactly():
    _, labels, scenes = generate_cued(60, split="test", seed=1, config=CuedDigitsConfig(cue_presence=1.0))
    for scene, label in zip(scenes, labels, strict=True):
        present = [k for k in range(len(scene.parts)) if scene.present[k]]
        patch, box = scene.replacements[0]
        assert scene.replacements[1:] == (None,) * (len(scene.parts) - 1)
        assert max(patch.shape) == max(scene.parts[0].shape)  # same size: still the largest digit
        centre = (scene.boxes[0, :2] + scene.boxes[0, 2:]) / 2
        assert np.abs((box[:2] + box[2:]) / 2 - centre).max() <= 1.0 or box[0] == 0 or box[1] == 0 or box[2] == 48 \
            or box[3] == 48  # centred, unless moved inside the canvas
        np.testing.assert_array_equal(scene.intervene(["target"]), _composite(scene, present, replaced={0}))
        for k in present[1:]:
            np.testing.assert_array_equal(scene.intervene([k]), _composite(scene, [j for j in present if j != k]))
        np.testing.assert_array_equal(scene.intervene(["background"]),
                                      _composite(scene, present, background=scene.alternative_background))
        both = scene.intervene(["target", "cue"])
        np.testing.assert_array_equal(both, _composite(scene, [j for j in present if j != CUE], replaced={0}))
        stack = scene.interventions()
        for k in range(len(scene.parts)):
            if not scene.present[k]:  # an absent slot: nothing to change, nothing visible
                np.testing.assert_array_equal(stack[k], scene.render())
                assert not scene.masks()[k].any()


def test_the_swapped_target_is_a_digit_of_another_class_at_the_same_size():
    from infsa_viz.data._render import render_digit
    from infsa_viz.data.cued import _STREAM_SAMPLE, _draw, _rows_by_class

    _, labels, scenes = generate_cued(200, split="test", seed=2)
    pool, by_class = _digit_pool("test"), _rows_by_class("test")
    swaps, redrawn = [], 0
    for i, (scene, label) in enumerate(zip(scenes, labels, strict=True)):
        draw = _draw(np.random.default_rng(np.random.SeedSequence([2, _STREAM_SAMPLE, 2, i])), len(pool.labels),
                     CuedDigitsConfig())
        swap_class = (int(label) + int(draw["swap_offset"])) % 10
        rows = by_class[swap_class]
        digit = rows[int(draw["swap_u"] * len(rows))]
        assert pool.labels[digit] == swap_class != label
        patch, _ = scene.replacements[0]
        first = render_digit(pool.images[digit], pool.ink_boxes[digit], int(draw["tgt_size"]))
        if first.shape == patch.shape and (first == patch).all():
            swaps.append(swap_class)
            continue
        # the first draw broke a layout rule: redrawn from the same class at the same size
        redrawn += 1
        assert any(np.array_equal(patch, render_digit(pool.images[r], pool.ink_boxes[r], int(draw["tgt_size"])))
                   for r in rows)
    assert len(set(swaps)) == 10 and redrawn < 40


def _overlap(a, b) -> float:
    """Intersection over the smaller box's area, written out."""
    w = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    return w * h / min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))


def test_every_intervened_test_scene_keeps_every_layout_rule():
    """All 2,000 scenes of the shared test split, each object intervened: the target's swap keeps the
    generator's rules for a target (size range, strictly the largest digit, inside the canvas,
    overlap below max_overlap with every other shown object, no ink in the cue's box); a removed
    distractor leaves a count the generator draws; the cue's removal and the background's swap
    leave the layout as it was."""
    from infsa_viz.data.cued import swap_violations

    data = test_split(benchmark="cued-digits")
    cfg = BENCHMARKS["cued-digits"].evaluation_config
    low, high = cfg.target_size
    for i, scene in enumerate(data.scenes):
        swap, (x0, y0, x1, y1) = scene.replacements[0]
        shown = [k for k in range(1, len(scene.parts)) if scene.parts[k].size]
        where = f"test image {i}"
        assert low <= max(swap.shape) <= high, where
        assert all(max(scene.parts[k].shape) < max(swap.shape) for k in shown if k != CUE), where
        assert swap.shape == (y1 - y0, x1 - x0) and 0 <= x0 and 0 <= y0 and x1 <= 48 and y1 <= 48, where
        assert all(_overlap((x0, y0, x1, y1), scene.boxes[k]) < cfg.max_overlap for k in shown), where
        layer = np.zeros((48, 48), np.uint8)
        layer[y0:y1, x0:x1] = swap
        cx0, cy0, cx1, cy1 = scene.boxes[CUE]
        assert not layer[cy0:cy1, cx0:cx1].any(), where
        assert swap_violations(swap, scene.replacements[0][1], scene.parts, scene.boxes, cfg) == [], where
        count = sum(1 for k in shown if k != CUE)
        assert count == 0 or cfg.distractors[0] <= count - 1, where  # one removed: still a drawn count
        removed = scene.intervene(["cue"])
        np.testing.assert_array_equal(removed, scene.render(remove=["cue"]))


@pytest.mark.parametrize("agreement", [0.1, 1.0])
def test_the_cue_agrees_with_the_label_at_the_set_rate(agreement):
    config = CuedDigitsConfig(cue_agreement=agreement, cue_presence=0.8)
    _, labels, scenes = generate_cued(3000, split="train", seed=0, config=config)
    conditions = cue_conditions(scenes, labels)
    shown = conditions != "absent"
    assert abs(shown.mean() - 0.8) < 0.03
    agree = (conditions[shown] == "consistent").mean()
    assert abs(agree - agreement) < 0.03
    cue = np.array([s.labels[CUE] for s in scenes])
    for s, c in zip(scenes, cue, strict=True):  # the glyph drawn is the class's glyph
        if c >= 0:
            np.testing.assert_array_equal(s.parts[CUE] > 0, GLYPHS[c])
    if agreement == 0.1:  # independent of the label: every class as likely whatever the label
        table = np.histogram2d(labels[shown], cue[shown], bins=10, range=[[0, 10], [0, 10]])[0]
        expected = table.sum(1, keepdims=True) * table.sum(0, keepdims=True) / table.sum()
        chi2 = ((table - expected) ** 2 / expected).sum()
        assert chi2 < 150  # 81 degrees of freedom: p ≈ 1e-5 at 150


def test_distractor_counts_are_drawn_from_the_range():
    _, _, scenes = generate_cued(800, split="train", seed=0)
    counts = np.array([s.present[1:4].sum() for s in scenes])
    assert set(counts) == {0, 1, 2, 3}
    assert np.abs(np.bincount(counts) / len(counts) - 0.25).max() < 0.05
    for s in scenes:  # present distractors come first and are smaller than the target
        present = s.present[1:4]
        assert (present == np.sort(present)[::-1]).all()
        for k in np.flatnonzero(present) + 1:
            assert max(s.parts[k].shape) < max(s.parts[0].shape)


def test_the_shared_test_split_shows_the_cue_on_every_image_half_consistent():
    p10, p100, shared = (test_split(benchmark=name) for name in ("cued-digits-p10", "cued-digits-p100", "cued-digits"))
    np.testing.assert_array_equal(p10.images, p100.images)
    np.testing.assert_array_equal(p10.images, shared.images)
    assert len({BENCHMARKS[n].preprocessing for n in ("cued-digits-p10", "cued-digits-p100", "cued-digits")}) == 1
    conditions = cue_conditions(p10.scenes, p10.labels)
    assert set(conditions) <= set(CUE_CONDITIONS) and "absent" not in set(conditions)
    assert abs((conditions == "consistent").mean() - 0.5) < 0.04
    assert BENCHMARKS["cued-digits-p10"].config.cue_agreement == 0.1
    assert BENCHMARKS["cued-digits-p100"].config.cue_agreement == 1.0
    for scene, negatives, classes in zip(p10.scenes[:50], p10.negative_boxes[:50], p10.negative_labels[:50],
                                         strict=True):
        present = np.flatnonzero(scene.present[1:-1]) + 1
        np.testing.assert_array_equal(negatives, scene.boxes[present])
        np.testing.assert_array_equal(classes, scene.labels[present])
        assert CUE in present


def test_training_epochs_differ_and_follow_the_setting():
    images, labels = BENCHMARKS["cued-digits-p100"].training_images(2, n=50, seed=1)
    again, _ = cued_epoch(2, n=50, seed=1, config=BENCHMARKS["cued-digits-p100"].config)
    np.testing.assert_array_equal(images, again)
    other, _ = cued_epoch(3, n=50, seed=1, config=BENCHMARKS["cued-digits-p100"].config)
    assert not np.array_equal(images, other)
    assert images.shape == (50, 48, 48) and labels.shape == (50,)


@pytest.mark.parametrize("field, value", [
    ("distractors", (2, 1)), ("distractors", (-1, 2)), ("distractors", 3), ("cue_agreement", 1.5),
    ("cue_agreement", float("nan")), ("cue_presence", -0.1), ("cue_intensity", 0), ("cue_intensity", 256),
    ("target_size", (9, 8)), ("canvas_size", 5),
])
def test_bad_settings_are_refused_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        CuedDigitsConfig(**{field: value})


def test_conditions_need_cued_scenes():
    plain = test_split(3)
    with pytest.raises(ValueError, match="cue"):
        cue_conditions(plain.scenes, plain.labels)
    with pytest.raises(ValueError, match="labels"):
        cue_conditions(test_split(3, benchmark="cued-digits-p10").scenes, [1, 2])
