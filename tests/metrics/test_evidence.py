"""Evidence metrics (infsa_viz/metrics/evidence.py): analytic cases, chance, a planted classifier."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from infsa_viz.data import test_split
from infsa_viz.evaluation.interventions import object_importance
from infsa_viz.metrics import UndefinedMetricWarning
from infsa_viz.metrics.evidence import (
    EVIDENCE_FIGURES,
    evidence_mass_accuracy,
    evidence_oracle,
    evidence_rank_correlation,
    evidence_scores,
    object_density,
    object_mass,
    top_object_agreement,
)
from tests.evaluation.planted import PATCH, PlantedModel, block_scene

EVIDENCE_ONLY = ("evidence_spearman", "evidence_kendall", "evidence_mass_accuracy", "top_object_agreement")


@pytest.fixture(scope="module")
def real_masks() -> np.ndarray:
    """``(12, 4, 48, 48)`` visible-pixel masks of the first test images (identity preprocessing)."""
    return np.stack([scene.masks() for scene in test_split(12).scenes])


def _distinct_importance(n: int, objects: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(objects) + rng.random() for _ in range(n)]) / objects  # distinct, positive


def _painted(masks: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A pixel-resolution map with ``values[b, k]`` on object k's pixels (what a perfect map would be)."""
    return np.einsum("bo,bohw->bhw", values, masks.astype(float))


def test_the_pixel_oracle_scores_one_on_real_scenes(real_masks):
    importance = _distinct_importance(len(real_masks), 4, seed=0)
    importance[:, 2] = -0.3  # an object whose removal helps carries no evidence: ties with nothing below it
    scores = evidence_scores(evidence_oracle(real_masks, importance, patch_size=1), real_masks, importance)
    for name in EVIDENCE_ONLY:
        np.testing.assert_allclose(scores[name], 1.0, atol=1e-12, err_msg=name)


def test_the_patch_oracle_scores_one_when_no_patch_holds_two_objects():
    masks = block_scene().masks()[None]
    importance = np.array([[0.5, 0.2, 0.0, 0.05]])
    oracle = evidence_oracle(masks, importance, patch_size=PATCH)
    assert oracle.shape == (1, 4, 4)
    scores = evidence_scores(oracle, masks, importance)
    for name in EVIDENCE_ONLY:
        assert scores[name][0] == pytest.approx(1.0), name


def test_a_map_ranking_objects_in_reverse_scores_minus_one(real_masks):
    importance = _distinct_importance(len(real_masks), 4, seed=1)
    reverse = _painted(real_masks, 1.0 - importance)  # densest where the importance is least
    ranks = evidence_rank_correlation(reverse, real_masks, importance)
    np.testing.assert_allclose(ranks.spearman, -1.0, atol=1e-12)
    np.testing.assert_allclose(ranks.kendall, -1.0, atol=1e-12)
    np.testing.assert_array_equal(top_object_agreement(reverse, real_masks, importance), 0.0)


def test_a_random_map_sits_at_chance_in_expectation(real_masks):
    """For maps of i.i.d. uniform patches, m and 1 − m are equally likely and reverse every density
    ranking, so the expected rank correlation is exactly 0 whatever the scene and importance. The
    Monte-Carlo mean of 400 draws per image must lie within 4 standard errors of 0."""
    masks = np.repeat(real_masks[:4], 100, axis=0)  # 4 scenes × 100 random maps
    importance = np.repeat(_distinct_importance(4, 4, seed=2), 100, axis=0)
    maps = np.random.default_rng(3).random((len(masks), 6, 6))
    ranks = evidence_rank_correlation(maps, masks, importance)
    for values in ranks:
        error = values.std(ddof=1) / math.sqrt(len(values))
        assert error < 0.05 and abs(values.mean()) < 4 * error


@pytest.mark.parametrize("obj", [0, 1, 3])
def test_planted_evidence_oracle_scores_one_and_a_map_on_another_object_the_floor(obj):
    scene = block_scene()
    result = object_importance(PlantedModel(obj).eval(), [scene], explained=[1])
    importance = result.prob_drop
    assert importance[0, obj] > 0 and np.count_nonzero(importance) == 1
    oracle = evidence_oracle(result.masks, importance, patch_size=PATCH)
    scores = evidence_scores(oracle, result.masks, importance)
    for name in EVIDENCE_ONLY:
        assert scores[name][0] == pytest.approx(1.0), name
    objects = result.masks.shape[1]
    other = (obj + 1) % objects
    elsewhere = evidence_oracle(result.masks, np.eye(objects)[None, other], patch_size=PATCH)  # all on another object
    wrong = evidence_scores(elsewhere, result.masks, importance)
    assert wrong["evidence_mass_accuracy"][0] == 0.0 and wrong["top_object_agreement"][0] == 0.0  # their floor
    # One-hot map vs a one-hot importance on another object: one discordant pair, the rest ties.
    assert wrong["evidence_spearman"][0] == pytest.approx(-1 / (objects - 1))
    assert wrong["evidence_kendall"][0] == pytest.approx(-1 / (objects - 1))


def test_object_mass_and_density_are_shares_and_means():
    masks = block_scene().masks()[None]  # target 64 px, distractors 16 px each, background the rest (160 px)
    maps = np.zeros((1, 4, 4))
    maps[0, 0, 0], maps[0, 3, 3], maps[0, 2, 2] = 2.0, 1.0, -4.0  # a quarter of the target, all of distractor_1
    mass, density = object_mass(maps, masks), object_density(maps, masks)
    np.testing.assert_allclose(mass, [[2 / 3, 1 / 3, 0, 0]])
    np.testing.assert_allclose(density, [[2 * 16 / 64, 1.0, 0, 0]])
    np.testing.assert_allclose(object_mass(np.random.default_rng(0).random((1, 4, 4)), masks).sum(), 1.0)


def test_hidden_objects_are_left_out_and_undefined_cases_are_nan_with_a_warning(real_masks):
    masks = real_masks[:3].copy()
    masks[0, 1] = False  # distractor_1 hidden: ranked over the other three objects
    importance = _distinct_importance(3, 4, seed=4)
    oracle = evidence_oracle(masks, importance, patch_size=1)
    assert math.isnan(object_density(oracle, masks)[0, 1])
    assert evidence_rank_correlation(oracle, masks, importance).spearman[0] == pytest.approx(1.0)
    importance[1] = -0.1  # nothing supports the class
    oracle[2] = 0.0  # a map without positive mass
    with pytest.warns(UndefinedMetricWarning):
        ranks = evidence_rank_correlation(oracle, masks, importance)
    assert np.isnan(ranks.spearman[1:]).all() and np.isnan(ranks.kendall[1:]).all()
    for metric in (evidence_mass_accuracy, top_object_agreement):
        with pytest.warns(UndefinedMetricWarning):
            values = metric(oracle, masks, importance)
        assert not math.isnan(values[0]) and np.isnan(values[1:]).all()


def test_common_properties_range_scale_order_and_batching(real_masks):
    rng = np.random.default_rng(5)
    maps = rng.normal(size=(len(real_masks), 6, 6))
    importance = rng.normal(size=(len(real_masks), 4))
    importance[:, 0] = np.abs(importance[:, 0]) + 0.1  # at least one object supports the class
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        scores = evidence_scores(maps, real_masks, importance)
        scaled = evidence_scores(3.0 * maps, real_masks, importance)
        order = np.arange(len(maps))[::-1]
        reordered = evidence_scores(maps[order], real_masks[order], importance[order])
        single = [evidence_scores(maps[i:i + 1], real_masks[i:i + 1], importance[i:i + 1]) for i in range(3)]
    assert set(scores) == set(EVIDENCE_FIGURES)
    for name, (low, high) in EVIDENCE_FIGURES.items():
        values = scores[name][~np.isnan(scores[name])]
        assert values.size and values.min() >= low - 1e-12 and values.max() <= high + 1e-12, name
        np.testing.assert_allclose(scaled[name], scores[name], atol=1e-12, err_msg=name)
        np.testing.assert_allclose(reordered[name], scores[name][order], atol=1e-12, err_msg=name)
        np.testing.assert_allclose([s[name][0] for s in single], scores[name][:3], atol=1e-12, err_msg=name)


def test_bad_inputs_name_the_parameter(real_masks):
    maps, importance = np.zeros((2, 6, 6)), np.ones((2, 4))
    with pytest.raises(ValueError, match="importance"):
        evidence_scores(maps, real_masks[:2], np.ones((2, 3)))
    with pytest.raises(ValueError, match="importance"):
        evidence_scores(maps, real_masks[:2], np.full((2, 4), np.nan))
    with pytest.raises(ValueError, match="masks"):
        evidence_scores(maps, real_masks[:2, 0], importance)
    with pytest.raises(ValueError, match="patch_size"):
        evidence_oracle(real_masks[:2], importance, patch_size=5)
    with pytest.raises(ValueError, match="target_object"):
        evidence_scores(maps, real_masks[:2], importance, target_object=4)
