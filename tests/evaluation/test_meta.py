"""Meta-evaluation of metrics (infsa_viz/evaluation/meta.py): a trustworthy toy metric passes, others fail."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from infsa_viz.data import test_split
from infsa_viz.evaluation.meta import ALPHAS, blend, meta_evaluate, normalise, shift
from infsa_viz.metrics.evidence import EVIDENCE_FIGURES, evidence_oracle, evidence_scores


@pytest.fixture(scope="module")
def oracle() -> np.ndarray:
    """``(40, 12, 12)`` reference maps: one Gaussian blob (σ = 2 patches) per image, away from the
    bottom-right border so that every shift moves it further from where it was."""
    rng = np.random.default_rng(11)
    centres = rng.uniform(2, 6, size=(40, 2))
    rows, cols = np.mgrid[:12, :12]
    return np.exp(-((rows - centres[:, :1, None]) ** 2 + (cols - centres[:, 1:, None]) ** 2) / (2 * 2.0 ** 2))


def _correlation(reference: np.ndarray):
    """Per-image Pearson correlation with the reference: a metric that tracks map quality."""
    ref = reference.reshape(len(reference), -1)

    def score(maps: np.ndarray) -> dict[str, np.ndarray]:
        flat = maps.reshape(len(maps), -1)
        a, b = flat - flat.mean(1, keepdims=True), ref - ref.mean(1, keepdims=True)
        corr = (a * b).sum(1) / np.sqrt((a ** 2).sum(1) * (b ** 2).sum(1))
        return {"corr": corr, "distance": 1 - corr}  # the same figure, both directions
    return score


def _untrustworthy(maps: np.ndarray) -> dict[str, np.ndarray]:
    flat = maps.reshape(len(maps), -1)
    return {"mean": flat.mean(1),  # rises as the map gets worse (a random map is denser than the oracle)
            "chaotic": np.modf(1e6 * flat.sum(1))[0]}  # its digits, not the map, decide


def test_a_metric_that_tracks_quality_is_trustworthy_in_either_direction(oracle):
    result = meta_evaluate(_correlation(oracle), oracle, higher_is_better={"corr": True, "distance": False})
    for name in ("corr", "distance"):
        meta = result.figures[name]
        assert meta.trustworthy and meta.monotone and meta.stable, name
        assert meta.degradation_spearman == pytest.approx(-1.0)
        assert meta.stability == pytest.approx(1.0) and meta.stability_images == len(oracle)
        assert meta.shift_spearman == pytest.approx(-1.0)
    corr = result.figures["corr"]
    assert corr.alpha_means[0] == pytest.approx(1.0) and corr.alphas == ALPHAS
    assert corr.shift_means[0] == corr.alpha_means[0] and corr.shifts == (0, 1, 2, 3)


def test_a_metric_that_rises_with_degradation_or_follows_noise_is_not(oracle):
    result = meta_evaluate(_untrustworthy, oracle, higher_is_better={"mean": True, "chaotic": True})
    mean, chaotic = result.figures["mean"], result.figures["chaotic"]
    assert mean.degradation_spearman == pytest.approx(1.0) and not mean.monotone and not mean.trustworthy
    assert mean.stable  # stable, yet ranks maps backwards: stability alone is not trust
    assert chaotic.stability < 0.8 and not chaotic.trustworthy
    flipped = meta_evaluate(_untrustworthy, oracle, higher_is_better={"mean": False, "chaotic": True})
    assert flipped.figures["mean"].trustworthy  # read in the direction it moves, it is monotone


def test_blend_shift_and_normalise_are_as_documented(oracle):
    random = np.random.default_rng(0).random(oracle.shape)
    np.testing.assert_allclose(blend(oracle, random, 0.0), normalise(oracle))
    np.testing.assert_allclose(blend(oracle, random, 1.0), normalise(random))
    np.testing.assert_allclose(blend(oracle, random, 0.25), 0.75 * normalise(oracle) + 0.25 * normalise(random))
    normalised = normalise(3 * oracle - 1)
    assert normalised.min() == 0.0 and normalised.max() == 1.0
    np.testing.assert_array_equal(normalise(np.full((1, 2, 2), 5.0)), 0.0)
    moved = shift(oracle, 2)
    np.testing.assert_allclose(moved[:, 2:, 2:], normalise(oracle)[:, :-2, :-2])
    assert not moved[:, :2].any() and not moved[:, :, :2].any()
    assert not shift(oracle, 12).any()


def test_a_given_pair_and_the_protocol_are_recorded(oracle):
    score = _correlation(oracle)
    good, bad = oracle, np.random.default_rng(1).random(oracle.shape)
    result = meta_evaluate(score, oracle, higher_is_better={"corr": True, "distance": False}, pair=(good, bad))
    assert result.figures["corr"].stability == 1.0
    record = json.loads(json.dumps(result.to_dict()))
    assert record["protocol"]["pair"] == "given by the caller" and record["figures"]["corr"]["trustworthy"]


def test_the_evidence_figures_respond_to_a_degraded_oracle():
    masks = np.stack([scene.masks() for scene in test_split(60).scenes])  # (60, 4, 48, 48)
    rng = np.random.default_rng(5)  # as on the benchmark: the target carries most of the evidence
    importance = np.concatenate([rng.uniform(0.5, 1.0, (60, 1)), rng.uniform(-0.05, 0.1, (60, 3))], axis=1)

    def score(maps: np.ndarray) -> dict[str, np.ndarray]:
        return evidence_scores(maps, masks, importance)

    result = meta_evaluate(score, evidence_oracle(masks, importance, patch_size=8),
                           higher_is_better=dict.fromkeys(EVIDENCE_FIGURES, True))
    for name in ("evidence_spearman", "evidence_kendall", "evidence_mass_accuracy"):
        assert result.figures[name].monotone, (name, result.figures[name].alpha_means)


def test_bad_inputs_are_refused(oracle):
    score = _correlation(oracle)
    with pytest.raises(ValueError, match="direction"):
        meta_evaluate(score, oracle, higher_is_better={"corr": True})
    with pytest.raises(ValueError, match="alphas"):
        meta_evaluate(score, oracle, higher_is_better={"corr": True, "distance": False}, alphas=(0.0, 1.0))
    with pytest.raises(ValueError, match="one value per image"):
        meta_evaluate(lambda m: {"x": np.zeros(3)}, oracle, higher_is_better={"x": True})
    with pytest.raises(ValueError, match="pair"):
        meta_evaluate(score, oracle, higher_is_better={"corr": True, "distance": False}, pair=(oracle[:2], oracle))
    with pytest.raises(ValueError, match="noise"):
        meta_evaluate(score, oracle, higher_is_better={"corr": True, "distance": False}, noise=0.0)
    assert math.isnan(meta_evaluate(lambda m: {"x": np.full(len(m), np.nan)}, oracle,
                                    higher_is_better={"x": True}).figures["x"].stability)
