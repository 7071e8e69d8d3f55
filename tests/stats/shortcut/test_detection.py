"""Model-level statistics of the shortcut test (infsa_viz/stats/shortcut/detection.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import mannwhitneyu, norm

from infsa_viz.stats.shortcut import clopper_pearson, detection_auroc, factor_r2, held_out_detection


def test_auroc_matches_mann_whitney_and_counts_ties_half():
    rng = np.random.default_rng(1)
    x, y = rng.normal(1, 1, 9), rng.normal(0, 1, 7)
    u = mannwhitneyu(x, y).statistic
    assert detection_auroc(x, y)["auroc"] == pytest.approx(u / (9 * 7))
    assert detection_auroc([1.0, 1.0], [1.0, 1.0])["auroc"] == 0.5
    perfect = detection_auroc([5.0, 6.0, 7.0], [1.0, 2.0, 3.0])
    assert perfect["auroc"] == 1.0 and 0.0 < perfect["low"] < 1.0 and perfect["high"] <= 1.0
    with pytest.raises(ValueError, match="positives"):
        detection_auroc([], [1.0])
    with pytest.raises(ValueError, match="confidence"):
        detection_auroc([1.0], [0.0], confidence=1.0)


@pytest.mark.parametrize("shift", [0.0, 1.19, 2.0, 3.0, 4.0])  # true AUROC 0.5, 0.8, 0.92, 0.98, 0.998
def test_the_auroc_interval_covers_at_its_nominal_rate_on_simulated_models(shift):
    rng = np.random.default_rng(12)
    truth = float(norm.cdf(shift / math.sqrt(2.0)))
    trials, covered = 400, 0
    for _ in range(trials):
        found = detection_auroc(rng.normal(shift, 1.0, 12), rng.normal(0.0, 1.0, 12))
        covered += found["low"] <= truth <= found["high"]
    # 95 % nominal; 400 trials give a binomial SD of 1.1 points; the interval is slightly conservative
    assert 0.92 <= covered / trials <= 0.995


def test_clopper_pearson_is_the_exact_binomial_interval():
    low, high = clopper_pearson(0, 12)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 12))
    assert clopper_pearson(12, 12)[1] == 1.0
    assert all(math.isnan(v) for v in clopper_pearson(0, 0))


def test_held_out_detection_fixes_each_threshold_without_the_judged_seed():
    seeds = list(range(6))
    found = held_out_detection([5, 6, 7, 8, 9, 10], [0, 1, 2, 3, 4, 11], seeds, seeds)
    # seed 5's useless-cue model (11) lies above every shortcut model: a false positive
    assert found["false_positives"] == 1 and found["negatives"] == 6
    # seed 0's shortcut model (5) is judged at the midpoint of 4 and 6 fixed without it: missed
    assert found["true_positives"] == 5 and found["false_positive_rate"] == pytest.approx(1 / 6)
    assert set(found["thresholds"]) == set(seeds)
    with pytest.raises(ValueError, match="seeds"):
        held_out_detection([1.0], [0.0], [0, 1], [0])


def test_factor_r2_splits_a_balanced_design():
    regime = np.repeat(["p10", "p100"], 4)
    salience = np.tile(["a", "b"], 4)
    values = np.where(regime == "p100", 1.0, 0.0)
    r2 = factor_r2(values, regime, salience)
    assert r2["r2_regime"] == pytest.approx(1.0) and r2["r2_salience"] == pytest.approx(0.0)
    values = np.where(salience == "a", 3.0, 1.0) + np.where(regime == "p100", 1.0, 0.0)
    r2 = factor_r2(values, regime, salience)
    assert r2["r2_regime"] == pytest.approx(0.2) and r2["r2_salience"] == pytest.approx(0.8)
    assert r2["r2_interaction"] == pytest.approx(0.0, abs=1e-12)
    assert math.isnan(factor_r2(np.ones(8), regime, salience)["r2_regime"])
