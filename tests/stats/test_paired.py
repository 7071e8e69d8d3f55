"""Paired tests and Holm's correction against analytic and naive references (infsa_viz/stats/paired.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from infsa_viz.stats.paired import compare_paired, holm, paired_bootstrap, wilcoxon_signed_rank


def _binomial_upper(n: int, p: float) -> float:
    """A rate that ``n`` Bernoulli(p) trials exceed with probability ~0.001."""
    return float(sps.binom.ppf(0.999, n, p)) / n


def test_a_known_difference_is_recovered_with_nominal_coverage():
    rng = np.random.default_rng(11)
    repeats, n, delta = 200, 60, 0.5
    covered = significant = 0
    for _ in range(repeats):
        b = rng.normal(0.0, 1.0, n)
        a = b + delta + rng.normal(0.0, 1.0, n)
        result = compare_paired(a, b, n_resamples=400, seed=int(rng.integers(1 << 30)))
        covered += result.difference.low <= delta <= result.difference.high
        significant += result.wilcoxon.p_value < 0.05
    # 95 % interval: the miss rate stays under a binomial bound of 5 % (plus percentile undercoverage)
    assert 1 - covered / repeats <= _binomial_upper(repeats, 0.07)
    assert significant / repeats > 0.9  # t-test power at d_z = 0.5, n = 60 is about 0.97


def test_a_null_difference_is_called_significant_at_the_stated_rate():
    rng = np.random.default_rng(5)
    repeats, n = 200, 40
    wilcoxon_hits = bootstrap_hits = 0
    for _ in range(repeats):
        a, b = rng.normal(size=n), rng.normal(size=n)
        wilcoxon_hits += wilcoxon_signed_rank(a, b).p_value < 0.05
        bootstrap_hits += paired_bootstrap(a, b, n_resamples=400, seed=int(rng.integers(1 << 30)))[1] < 0.05
    bound = _binomial_upper(repeats, 0.05)
    assert wilcoxon_hits / repeats <= bound
    assert bootstrap_hits / repeats <= _binomial_upper(repeats, 0.065)  # bootstrap p is slightly liberal at n=40


def test_wilcoxon_rank_biserial_analytic_cases():
    # differences 1, -2, 3: ranks 1, 2, 3; T+ = 4, T- = 2 -> r = (4 - 2) / 6
    result = wilcoxon_signed_rank([1.0, 0.0, 3.0], [0.0, 2.0, 0.0])
    assert result.rank_biserial == pytest.approx(1 / 3)
    assert result.n == 3 and result.n_zero == 0
    assert wilcoxon_signed_rank([2.0, 3.0, 4.0], [1.0, 1.0, 1.0]).rank_biserial == 1.0
    assert wilcoxon_signed_rank([1.0, 1.0, 1.0], [2.0, 3.0, 4.0]).rank_biserial == -1.0


def test_ties_and_zero_differences():
    # zeros are dropped from the ranks; tied |d| share the average rank: d = 0, 0, 1, -1, 2
    a, b = np.array([5.0, 2.0, 1.0, 0.0, 2.0]), np.array([5.0, 2.0, 0.0, 1.0, 0.0])
    result = wilcoxon_signed_rank(a, b)
    assert result.n_zero == 2
    # ranks of |1|, |-1|, |2| = 1.5, 1.5, 3 -> T+ = 4.5, T- = 1.5
    assert result.rank_biserial == pytest.approx((4.5 - 1.5) / 6.0)
    ref = sps.wilcoxon(np.array([1.0, -1.0, 2.0]), zero_method="wilcox")
    assert result.p_value == pytest.approx(ref.pvalue)
    same = compare_paired(a, a)
    assert same.wilcoxon.p_value == 1.0 and same.wilcoxon.rank_biserial == 0.0
    assert same.p_bootstrap == 1.0
    assert (same.difference.low, same.difference.high) == (0.0, 0.0)
    assert math.isnan(same.cohen_dz)


def test_undefined_pairs_are_dropped():
    a = np.array([1.0, np.nan, 3.0, 4.0])
    b = np.array([0.0, 1.0, np.nan, 2.0])
    result = compare_paired(a, b, n_resamples=100)
    assert result.n_pairs == 2
    assert result.difference.estimate == pytest.approx(1.5)


def test_holm_matches_a_naive_step_down():
    p = np.array([0.01, 0.04, 0.03, 0.005, np.nan, 0.5])
    finite = [0.01, 0.04, 0.03, 0.005, 0.5]
    m = len(finite)
    order = sorted(range(m), key=lambda i: finite[i])
    naive = [0.0] * m
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * finite[i]))
        naive[i] = running
    out = holm(p)
    assert math.isnan(out[4])
    np.testing.assert_allclose(np.delete(out, 4), naive)
    assert (np.delete(out, 4) >= finite).all()


def test_holm_adjusts_each_row_as_its_own_family():
    p = np.random.default_rng(5).random((20, 6))
    p[3, 2] = np.nan
    rows = holm(p)
    for row, raw in zip(rows, p, strict=True):
        np.testing.assert_allclose(row, holm(raw), equal_nan=True)
    assert np.isnan(rows[3, 2])


@pytest.mark.parametrize(("call", "name"), [
    (lambda: compare_paired([1.0, 2.0], [1.0]), "a has 2"),
    (lambda: compare_paired([np.nan], [1.0]), "share no image"),
    (lambda: wilcoxon_signed_rank([1.0, np.inf], [1.0, 2.0]), "a holds"),
    (lambda: holm([0.5, 1.5]), "p_values"),
    (lambda: holm(0.5), "p_values"),
])
def test_bad_inputs_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_tiny_p_values_keep_their_size_in_the_json():
    rng = np.random.default_rng(0)
    b = rng.normal(size=300)
    out = compare_paired(b + 1.0, b, n_resamples=200).to_dict()
    assert 0.0 < out["p_wilcoxon"] < 1e-30  # not rounded to 0.0
    assert out["p_bootstrap"] == pytest.approx(1 / 201, rel=1e-5)
