"""Seed-level statistics against scipy and naive references: the t-test, the hierarchical bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from infsa_viz.stats.seed_stats import hierarchical_bootstrap, seed_t_test, t_test_p


def test_t_test_matches_scipy():
    x = np.array([1.2, -0.4, 2.5, 0.9, 1.7, 0.3])
    ours = seed_t_test(x)
    ref = sps.ttest_1samp(x, 0.0)
    assert ours.p_value == pytest.approx(ref.pvalue) and ours.t == pytest.approx(ref.statistic)
    low, high = sps.t.interval(0.95, x.size - 1, loc=x.mean(), scale=sps.sem(x))
    assert (ours.low, ours.high) == (pytest.approx(low), pytest.approx(high))
    assert ours.df == 5 and ours.sd == pytest.approx(x.std(ddof=1))
    rows = np.random.default_rng(0).normal(0.3, 1.0, size=(50, 4))  # vectorised over rows
    np.testing.assert_allclose(t_test_p(rows), sps.ttest_1samp(rows, 0.0, axis=1).pvalue)


def test_degenerate_seed_differences():
    assert math.isnan(seed_t_test([2.0]).p_value)  # one seed: no test
    assert t_test_p([0.0, 0.0, 0.0]) == 1.0 and t_test_p([2.0, 2.0, 2.0]) == 0.0  # no spread
    with pytest.raises(ValueError, match="at least 2"):
        t_test_p([1.0])
    with pytest.raises(ValueError, match="differences"):
        seed_t_test([1.0, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        seed_t_test([1.0, 2.0], confidence=1.0)


def test_hierarchical_bootstrap_reduces_to_its_two_stages():
    rng = np.random.default_rng(1)
    # constant images within each seed: only the seed stage varies -> the bootstrap of the seed means
    seeds = [np.full(30, v) for v in (1.0, 2.0, 4.0, 7.0)]
    ci = hierarchical_bootstrap(seeds, n_resamples=4000, seed=0)
    means = np.array([1.0, 2.0, 4.0, 7.0])
    naive = means[rng.integers(0, 4, size=(4000, 4))].mean(1)
    assert ci.estimate == pytest.approx(3.5) and ci.n == 4 and ci.method == "hierarchical"
    assert ci.low == pytest.approx(np.quantile(naive, 0.025), abs=0.3)
    assert ci.high == pytest.approx(np.quantile(naive, 0.975), abs=0.3)
    # one seed: the image-level bootstrap of its mean, close to the normal interval
    x = rng.normal(0.0, 2.0, 400)
    one = hierarchical_bootstrap([x], n_resamples=4000, seed=0)
    half = 1.96 * x.std(ddof=1) / math.sqrt(x.size)
    assert one.low == pytest.approx(x.mean() - half, abs=0.1 * half)
    assert one.high == pytest.approx(x.mean() + half, abs=0.1 * half)


def test_hierarchical_bootstrap_variance_adds_both_stages():
    """Var of the two-stage resample mean ≈ (S-1)/S · var(seed means)/S + mean image variance/(n·S)
    (each drawn slot's images resampled independently)."""
    rng = np.random.default_rng(2)
    S, n = 8, 50
    groups = [rng.normal(mu, 3.0, n) for mu in rng.normal(0.0, 1.0, S)]
    means = np.array([g.mean() for g in groups])
    within = np.mean([g.var() / n for g in groups])
    expected = ((S - 1) / S * means.var(ddof=1) + within) / S
    draws = hierarchical_bootstrap(groups, n_resamples=20000, seed=3)
    width = (draws.high - draws.low) / (2 * 1.96)
    assert width == pytest.approx(math.sqrt(expected), rel=0.05)


def test_seeded_and_validated():
    groups = [np.arange(5.0), np.arange(3.0) + 1]
    assert hierarchical_bootstrap(groups, seed=4) == hierarchical_bootstrap(groups, seed=4)
    for bad, name in (([], "groups"), ([np.array([])], "groups"), ([np.array([np.inf])], "groups")):
        with pytest.raises(ValueError, match=name):
            hierarchical_bootstrap(bad)
    with pytest.raises(ValueError, match="n_resamples"):
        hierarchical_bootstrap(groups, n_resamples=0)


def test_t_test_power_matches_gpower_and_a_simulation():
    """G*Power 3.1 (one-sample t, two-sided, α 0.05, d = 1, n = 10): power 0.8030963; and the share of
    simulated t-tests that reject, inside a Bonferroni family of 30 with 6 seeds."""
    from infsa_viz.stats.seed_stats import t_test_power

    assert t_test_power(1.0, 1.0, 10) == pytest.approx(0.8030963, abs=1e-6)
    assert t_test_power(-2.0, 2.0, 10) == t_test_power(2.0, 2.0, 10)  # either sign, in units of sd
    assert t_test_power(0.0, 1.0, 6, alpha=0.01) == pytest.approx(0.01)  # no difference: the level
    rng = np.random.default_rng(0)
    x = rng.normal(2.5, 1.0, size=(40000, 6))
    rejected = (t_test_p(x) < 0.05 / 30).mean()
    assert rejected == pytest.approx(t_test_power(2.5, 1.0, 6, alpha=0.05 / 30), abs=0.01)


def test_detectable_difference_inverts_the_power():
    from infsa_viz.stats.seed_stats import detectable_difference, t_test_power

    for n, alpha, sd in ((6, 0.05 / 30, 2.0), (12, 0.05 / 30, 0.5), (3, 0.05, 1.0), (10, 0.05, 1.0)):
        delta = detectable_difference(sd, n, alpha=alpha)
        assert t_test_power(delta, sd, n, alpha=alpha) == pytest.approx(0.8, abs=1e-6)
        assert t_test_power(0.95 * delta, sd, n, alpha=alpha) < 0.8
    assert detectable_difference(1.0, 10) == pytest.approx(0.996, abs=1e-3)  # d ≈ 1 at n = 10 (G*Power: n = 10)
    # more seeds, a smaller family or a smaller SD: a smaller detectable difference
    assert detectable_difference(1.0, 12, alpha=0.05 / 30) < detectable_difference(1.0, 6, alpha=0.05 / 30)
    assert detectable_difference(1.0, 6, alpha=0.05 / 2) < detectable_difference(1.0, 6, alpha=0.05 / 30)
    assert detectable_difference(0.0, 6) == 0.0 and math.isnan(detectable_difference(math.nan, 6))
    for bad, name in (({"sd": -1.0, "n": 6}, "sd"), ({"sd": 1.0, "n": 1}, "n"),
                      ({"sd": 1.0, "n": 6, "power": 0.01}, "power"), ({"sd": 1.0, "n": 6, "alpha": 0.0}, "alpha")):
        with pytest.raises(ValueError, match=name):
            detectable_difference(**bad)
