"""Meta-evaluation of metrics (infsa_viz/stats/meta/): a faithful toy metric passes, the controls and
model-blind figures fail, on hand-made maps and on a planted classifier."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from infsa_viz.data import test_split
from infsa_viz.evaluation import EvalSettings
from infsa_viz.stats.meta import (
    ALPHAS,
    CONTROLS,
    NOISE_GRID,
    PAIR,
    Partner,
    blend,
    meta_evaluate,
    meta_evaluate_model,
    normalise,
    shift,
)
from infsa_viz.metrics.evidence import EVIDENCE_FIGURES, evidence_oracle, evidence_scores
from tests.evaluation.planted import PlantedModel, planted_data


def _blobs(seed: int) -> np.ndarray:
    """``(40, 12, 12)`` maps: one Gaussian blob (σ = 2 patches) per image, away from the bottom-right
    border so that every shift moves it further from where it was."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(2, 6, size=(40, 2))
    rows, cols = np.mgrid[:12, :12]
    return np.exp(-((rows - centres[:, :1, None]) ** 2 + (cols - centres[:, 1:, None]) ** 2) / (2 * 2.0 ** 2))


@pytest.fixture(scope="module")
def oracle() -> np.ndarray:
    """The scored model's reference maps."""
    return _blobs(11)


@pytest.fixture(scope="module")
def partner() -> Partner:
    """Another model: its reference maps are elsewhere, and the toy metric scores against them."""
    other = _blobs(12)
    return Partner(_correlation(other), other)


def _correlation(reference: np.ndarray):
    """Per-image Pearson correlation with the reference: a metric that tracks map quality."""
    ref = reference.reshape(len(reference), -1)

    def score(maps: np.ndarray) -> dict[str, np.ndarray]:
        flat = maps.reshape(len(maps), -1)
        a, b = flat - flat.mean(1, keepdims=True), ref - ref.mean(1, keepdims=True)
        corr = (a * b).sum(1) / np.sqrt((a ** 2).sum(1) * (b ** 2).sum(1))
        return {"corr": corr, "distance": 1 - corr}  # the same figure, both directions
    return score


def _blind(maps: np.ndarray) -> dict[str, np.ndarray]:
    """Figures of the map alone (they never see which model is scored)."""
    flat = maps.reshape(len(maps), -1)
    return {"mean": flat.mean(1),  # falls as the map gets better (the oracle is sparser than a random map)
            "peak": np.sort(flat, axis=1)[:, -3:].sum(1) / np.maximum(flat.sum(1), 1e-12),
            "chaotic": np.modf(1e6 * flat.sum(1))[0],  # its digits, not the map, decide
            "constant": np.zeros(len(maps))}


BLIND = {"mean": False, "peak": True, "chaotic": True, "constant": True}


def test_a_metric_that_tracks_quality_is_trustworthy_in_either_direction(oracle, partner):
    result = meta_evaluate(_correlation(oracle), oracle, higher_is_better={"corr": True, "distance": False},
                           partner=partner)
    for name in ("corr", "distance"):
        meta = result.figures[name]
        assert meta.trustworthy and meta.monotone and meta.stable and meta.reactive, name
        assert meta.degradation_spearman == pytest.approx(-1.0)
        assert meta.stability == pytest.approx(1.0) and meta.stability_images == len(oracle)
        assert meta.shift_spearman == pytest.approx(-1.0) and meta.reactivity == pytest.approx(1.0)
        assert meta.resolution == 1.0 and meta.role == "metric"
    corr = result.figures["corr"]
    assert corr.alpha_means[0] == pytest.approx(1.0) and corr.alphas == ALPHAS
    assert corr.shift_means[0] == corr.alpha_means[0] and corr.shifts == (0, 1, 2, 3)
    alone = meta_evaluate(_correlation(oracle), oracle, higher_is_better={"corr": True, "distance": False})
    assert alone.figures["corr"].reactivity is None and not alone.figures["corr"].trustworthy  # not without a partner


@pytest.mark.parametrize("flip", [False, True])
def test_a_figure_blind_to_the_model_is_never_reactive_in_either_direction(oracle, partner, flip):
    """Each map gets the same value whichever model is scored: of each image's two comparisons it can win
    one at most, so its reactivity is at most 1/2, whatever its direction; monotone and stable or not."""
    blind = Partner(_blind, partner.oracle)
    directions = {k: v != flip for k, v in BLIND.items()}
    result = meta_evaluate(_blind, oracle, higher_is_better=directions, partner=blind)
    for name, meta in result.figures.items():
        assert meta.reactivity <= 0.5 and not meta.reactive and not meta.trustworthy, name
    if not flip:  # read in their favourable direction, the map-only figures pass the other two tests
        assert result.figures["mean"].monotone and result.figures["mean"].stable
        assert result.figures["peak"].monotone and result.figures["peak"].stable
    constant = result.figures["constant"]  # it orders no pair: no stability, not stable
    assert math.isnan(constant.stability) and constant.resolution == 0.0 and not constant.stable
    assert result.figures["chaotic"].stability < 0.8


def test_the_noise_grid_is_calibrated_on_the_pair_and_reports_where_stability_breaks(oracle, partner):
    def smooth(maps: np.ndarray) -> dict[str, np.ndarray]:
        return {"corr": _correlation(oracle)(maps)["corr"]}

    result = meta_evaluate(smooth, oracle, higher_is_better={"corr": True}, partner=Partner(smooth, partner.oracle))
    meta = result.figures["corr"]
    a, b = (blend(oracle, np.random.default_rng([0, 0]).random(oracle.shape), p) for p in PAIR)
    gap = np.median(np.sqrt(((a - b) ** 2).reshape(len(a), -1).mean(1)))
    np.testing.assert_allclose(meta.noise_epsilon, np.round(np.array(NOISE_GRID) * gap, 6))
    assert meta.noise == NOISE_GRID and len(meta.stability_curve) == len(NOISE_GRID)
    below = [c for c, v in zip(NOISE_GRID, meta.stability_curve, strict=True) if v < 0.9]
    assert meta.noise_breakdown == (below[0] if below else None)
    assert meta.stability == meta.stability_curve[NOISE_GRID.index(0.1)]
    assert meta.stability_curve[0] == 1.0  # a hundredth of the pair's difference moves nothing


def test_the_controls_fail_and_the_positive_control_passes_on_a_planted_classifier():
    """The planted model reads the target alone, its partner distractor_1 alone: each model's evidence oracle
    is exact. Every negative control fails; the oracle correlation (faithful by construction) passes; so do the
    MoRF and evidence-mass figures; the box figures cannot see the model and fail reactivity."""
    data = planted_data(30)
    model, other = PlantedModel(0, bias=0.45).eval(), PlantedModel(1, bias=0.45).eval()
    settings = EvalSettings(metrics=["evidence", "perturbation", "box_auc"], select="all")
    result = meta_evaluate_model(model, data, protocol=settings, partner=other)
    negatives = [n for n, c in CONTROLS.items() if c.role == "negative"]
    assert negatives and all(not result.figures[n].trustworthy for n in negatives)
    assert all(result.figures[n].role == "negative control" for n in negatives)
    for name in ("control_peakedness", "control_total_mass"):  # monotone and stable, caught by reactivity
        meta = result.figures[name]
        assert meta.monotone and meta.stable and meta.reactivity <= 0.5, name
    positive = result.figures["control_oracle_correlation"]
    assert positive.role == "positive control" and positive.trustworthy and positive.reactivity == 1.0
    for name in ("morf_aoc", "evidence_mass_accuracy"):
        assert result.figures[name].trustworthy, name
    assert result.figures["box_pr_auc"].reactivity <= 0.5 and not result.figures["box_pr_auc"].trustworthy
    assert "given by the caller" in result.protocol["partner"]


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


def test_a_given_pair_and_the_protocol_are_recorded(oracle, partner):
    score = _correlation(oracle)
    good, bad = oracle, np.random.default_rng(1).random(oracle.shape)
    result = meta_evaluate(score, oracle, higher_is_better={"corr": True, "distance": False}, pair=(good, bad),
                           partner=partner)
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
    with pytest.raises(ValueError, match="noise_grid"):
        meta_evaluate(score, oracle, higher_is_better={"corr": True, "distance": False}, noise_grid=(0.0, 0.1))
    with pytest.raises(ValueError, match="reference_noise"):
        meta_evaluate(score, oracle, higher_is_better={"corr": True, "distance": False}, reference_noise=0.2)
    with pytest.raises(ValueError, match="partner.oracle"):
        meta_evaluate(score, oracle, higher_is_better={"corr": True, "distance": False},
                      partner=Partner(score, oracle[:3]))
    assert math.isnan(meta_evaluate(lambda m: {"x": np.full(len(m), np.nan)}, oracle,
                                    higher_is_better={"x": True}).figures["x"].stability)
