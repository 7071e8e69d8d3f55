"""A row figure's bootstrap interval over images against analytic and outside references
(infsa_viz/evaluation/intervals.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from infsa_viz.evaluation.intervals import bootstrap_ci, bootstrap_means


def test_bootstrap_means_match_a_naive_loop():
    values = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0])
    rng = np.random.default_rng(7)
    index = rng.integers(0, values.size, size=(50, values.size))
    naive = np.array([values[row].mean() for row in index])
    np.testing.assert_allclose(bootstrap_means(values, n_resamples=50, seed=7), naive)


def test_ci_of_a_mean_of_normal_data_matches_the_t_interval():
    x = np.random.default_rng(0).normal(2.0, 3.0, size=400)
    half = sps.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    for method in ("percentile", "bca"):
        ci = bootstrap_ci(x, n_resamples=4000, method=method, seed=1)
        assert ci.estimate == pytest.approx(x.mean())
        assert ci.low == pytest.approx(x.mean() - half, abs=0.1 * half)
        assert ci.high == pytest.approx(x.mean() + half, abs=0.1 * half)


def test_bca_agrees_with_scipy_on_skewed_data():
    x = np.random.default_rng(3).exponential(1.0, size=80)
    ours = bootstrap_ci(x, n_resamples=20000, method="bca", seed=0)
    ref = sps.bootstrap((x,), np.mean, n_resamples=20000, method="BCa", random_state=1).confidence_interval
    width = ref.high - ref.low
    assert ours.low == pytest.approx(ref.low, abs=0.05 * width)
    assert ours.high == pytest.approx(ref.high, abs=0.05 * width)
    pct = bootstrap_ci(x, n_resamples=20000, method="percentile", seed=0)
    assert ours.high > pct.high  # right skew: BCa moves the interval up


def test_a_constant_gives_a_degenerate_interval():
    constant = bootstrap_ci(np.full(10, 0.25), method="bca")
    assert (constant.low, constant.high) == (0.25, 0.25)


def test_seeded_and_deterministic():
    x = np.random.default_rng(2).normal(size=30)
    assert bootstrap_ci(x, seed=4) == bootstrap_ci(x, seed=4)
    assert bootstrap_ci(x, seed=4) != bootstrap_ci(x, seed=5)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: bootstrap_ci([]), "values"),
    (lambda: bootstrap_ci([1.0, np.inf]), "values"),
    (lambda: bootstrap_ci([[1.0, 2.0]]), "values"),
    (lambda: bootstrap_ci([1.0, 2.0], confidence=1.0), "confidence"),
    (lambda: bootstrap_ci([1.0, 2.0], n_resamples=0), "n_resamples"),
    (lambda: bootstrap_ci([1.0, 2.0], method="basic"), "method"),
    (lambda: bootstrap_ci([1.0, 2.0], seed=-1), "seed"),
])
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
