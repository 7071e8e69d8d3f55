"""Uncertainty across training seeds: the trained model is the unit of a variant comparison.

A variant's difference from the baseline is measured once per training seed (the two models of
that seed on the same images) and the seed differences are the sample: their mean is the
estimate, :func:`seed_t_test` is the one-sample t-test of "no difference" with ``S − 1``
degrees of freedom (exact when the seed differences are normal, whatever the seed-to-seed
variance), and :func:`hierarchical_bootstrap` is a two-stage interval (Davison & Hinkley 1997,
§3.8): resample the seeds, then the images within each resampled seed, so both the
seed-to-seed and the image-to-image variance enter it. With few seeds the bootstrap interval is
too narrow (a resample of 3 values has at most 10 distinct means and a variance ``(S − 1)/S``
of the sample's); the t-interval is given beside it and the call comes from the t-test.

What a test of ``S`` seeds can see: :func:`t_test_power` is the power of the two-sided t-test
at level ``α`` against a true difference ``δ`` (the noncentral t with noncentrality
``δ √S / σ``, ``σ`` the seed-to-seed SD of the paired differences), and
:func:`detectable_difference` inverts it: the smallest ``δ`` called with a given power. Inside a
Holm family of ``m`` tests the verdict evaluates both at ``α / m``, Holm's first (Bonferroni)
step: Holm rejects every hypothesis that step rejects, so the power there is a lower bound on the
comparison's power under Holm and the detectable difference an upper bound on what Holm needs.

:func:`t_test_p` is the vectorised p-value for simulations (``scripts/verdict_calibration.py``), and
:func:`call_rule` turns a family's Holm-adjusted seed-level p-values into calls.

Example:
    >>> seed_t_test([1.0, 2.0, 3.0]).p_value < 0.1
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .._checks import check_float, check_int
from ..evaluation.intervals import ConfidenceInterval

__all__ = ["ALPHA", "MIN_SEEDS", "SeedTTest", "call_rule", "detectable_difference", "hierarchical_bootstrap",
           "seed_t_test", "t_test_p", "t_test_power"]

#: Family-wise significance level of the calls (Holm-adjusted seed-level p-values).
ALPHA = 0.05
#: Seeds a call needs (issue #15: at least 3 training seeds per variant).
MIN_SEEDS = 3


def call_rule(difference: Any, p_holm: Any, n_seeds: Any, *, alpha: float = ALPHA,
              min_seeds: int = MIN_SEEDS) -> np.ndarray:
    """The call of each comparison: ``"higher"``/``"lower"`` where ``n_seeds >= min_seeds`` and the
    Holm-adjusted seed-level ``p_holm < alpha`` (by the sign of ``difference``), else ``"not shown"``.

    Vectorised (the calibration applies it to many simulated families at once); ``nan``
    p-values never call.
    """
    d = np.asarray(difference, dtype=np.float64)
    p = np.asarray(p_holm, dtype=np.float64)
    called = (np.asarray(n_seeds) >= min_seeds) & (np.nan_to_num(p, nan=1.0) < alpha)
    return np.where(called & (d > 0), "higher", np.where(called & (d < 0), "lower", "not shown"))


def t_test_p(values: Any) -> np.ndarray:
    """Two-sided p-value of the one-sample t-test of mean 0, along the last axis, vectorised.

    Args:
        values: ``(..., S)`` finite values (seed differences), ``S >= 2``.

    Returns:
        ``(...)`` p-values; where the values are constant: 1.0 if they are 0, else 0.0.

    Raises:
        ValueError: fewer than 2 values along the last axis, or non-finite values.
    """
    from scipy.special import stdtr

    x = np.asarray(values, dtype=np.float64)
    if x.ndim == 0 or x.shape[-1] < 2:
        raise ValueError(f"values has shape {x.shape}; expected at least 2 values along the last axis")
    if not np.isfinite(x).all():
        raise ValueError("values holds non-finite entries; expected finite seed differences")
    n = x.shape[-1]
    mean = x.mean(axis=-1)
    se = x.std(axis=-1, ddof=1) / math.sqrt(n)
    scale = np.maximum(np.abs(x).max(axis=-1), 1e-300)
    constant = se <= 1e-12 * scale  # equal values up to rounding: no spread to test against
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(mean) / np.where(constant, 1.0, se)
    p = 2.0 * stdtr(n - 1, -t)
    return np.where(constant, np.where(np.abs(mean) <= 1e-12 * scale, 1.0, 0.0), p)


@dataclass(frozen=True)
class SeedTTest:
    """The one-sample t-test of seed differences (mean 0 under "no variant difference").

    Attributes:
        mean: mean of the seed differences (the estimate).
        sd: their sample standard deviation (ddof 1; ``nan`` for one seed).
        n: seeds.
        t: the statistic ``mean / (sd / √n)`` (``nan`` for one seed or constant differences).
        df: ``n − 1``.
        p_value: two-sided p-value (``nan`` for one seed).
        low, high: the t-interval of the mean at ``confidence`` (``nan`` for one seed).
        confidence: e.g. 0.95.
    """

    mean: float
    sd: float
    n: int
    t: float
    df: int
    p_value: float
    low: float
    high: float
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def seed_t_test(differences: Sequence[float] | np.ndarray, *, confidence: float = 0.95) -> SeedTTest:
    """One-sample t-test and t-interval of the per-seed differences.

    Args:
        differences: ``(S,)`` finite, one difference (variant − baseline) per training seed.
        confidence: the interval's coverage in (0, 1). Default 0.95.

    Returns:
        A :class:`SeedTTest`; with one seed the test is undefined (``nan`` p-value).

    Raises:
        ValueError: empty or non-finite differences, or a bad ``confidence``.
    """
    from scipy.stats import t as student

    x = np.asarray(differences, dtype=np.float64)
    if x.ndim != 1 or x.size == 0 or not np.isfinite(x).all():
        raise ValueError(f"differences={x.tolist()!r} is invalid; expected a non-empty 1-D array of finite values")
    confidence = check_float("confidence", confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence!r} is invalid; expected 0 < confidence < 1")
    n, mean = int(x.size), float(x.mean())
    if n < 2:
        return SeedTTest(mean, math.nan, n, math.nan, 0, math.nan, math.nan, math.nan, confidence)
    sd = float(x.std(ddof=1))
    se = sd / math.sqrt(n)
    half = float(student.ppf(0.5 + confidence / 2.0, n - 1)) * se
    t = mean / se if se > 0 else math.nan
    return SeedTTest(mean, sd, n, t, n - 1, float(t_test_p(x)), mean - half, mean + half, confidence)


def _power_options(n: Any, alpha: Any) -> tuple[int, float]:
    n = check_int("n", n, minimum=2)
    alpha = check_float("alpha", alpha)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha={alpha!r} is invalid; expected 0 < alpha < 1")
    return n, alpha


def t_test_power(difference: float, sd: float, n: int, *, alpha: float = 0.05) -> float:
    """Power of the two-sided one-sample t-test of mean 0 at level ``alpha`` against a true mean.

    ``P(|T| > t_{1−α/2, n−1})`` with ``T`` noncentral t (``n − 1`` degrees of freedom,
    noncentrality ``difference · √n / sd``): exact for normal seed differences of SD ``sd``.

    Args:
        difference: the true mean of the seed differences (any sign).
        sd: their SD (> 0).
        n: seeds (>= 2).
        alpha: the test's level (default 0.05; inside a Holm family of ``m``: ``α / m``).

    Returns:
        The power in [alpha, 1], a Python ``float``.

    Raises:
        ValueError: a bad ``sd``, ``n`` or ``alpha``.

    Example:
        >>> round(t_test_power(1.0, 1.0, 10), 4)  # G*Power: d = 1, n = 10, two-sided 0.05
        0.8031
    """
    from scipy.stats import nct, t as student

    n, alpha = _power_options(n, alpha)
    sd = check_float("sd", sd, positive=True)
    critical = float(student.ppf(1.0 - alpha / 2.0, n - 1))
    shift = abs(check_float("difference", difference)) * math.sqrt(n) / sd
    # P(T < −c | shift) = P(T > c | −shift): both tails as survival functions (scipy's cdf far in the
    # lower tail can return nan)
    return float(nct.sf(critical, n - 1, shift) + nct.sf(critical, n - 1, -shift))


def detectable_difference(sd: float, n: int, *, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true difference the two-sided one-sample t-test of ``n`` seeds calls with ``power``.

    Solves :func:`t_test_power` ``(δ, sd, n, alpha) = power`` for ``δ >= 0`` (the power grows with
    ``δ``); in units of ``sd``. Used with the measured SD of the seed differences (a plug-in: with
    few seeds that SD is itself uncertain).

    Args:
        sd: SD of the seed differences; 0 gives 0 (any difference is called), ``nan`` gives ``nan``.
        n: seeds (>= 2).
        alpha: the test's level (inside a Holm family of ``m``: ``α / m``, see the module docstring).
        power: the wanted power in (alpha, 1) (default 0.8).

    Returns:
        ``δ`` as a Python ``float``.

    Raises:
        ValueError: a bad ``n``, ``alpha``, ``power`` or negative ``sd``.

    Example:
        >>> round(detectable_difference(1.0, 10), 3)  # Cohen's d of about 1 with 10 pairs
        0.996
    """
    from scipy.optimize import brentq

    n, alpha = _power_options(n, alpha)
    power = check_float("power", power)
    if not alpha < power < 1.0:
        raise ValueError(f"power={power!r} is invalid; expected alpha < power < 1")
    if sd is None or (isinstance(sd, float) and math.isnan(sd)):
        return math.nan
    sd = check_float("sd", sd, minimum=0.0)
    if sd == 0.0:
        return 0.0
    high = sd
    while t_test_power(high, sd, n, alpha=alpha) < power:
        high *= 2.0
    return float(brentq(lambda d: t_test_power(d, sd, n, alpha=alpha) - power, 0.0, high, xtol=1e-9 * sd))


def hierarchical_bootstrap(groups: Sequence[Any], *, confidence: float = 0.95, n_resamples: int = 2000,
                           seed: int = 0) -> ConfidenceInterval:
    """Two-stage percentile bootstrap of the mean of group means (groups: seeds; values: images).

    Each resample draws ``S`` groups with replacement, and for each drawn group a resample of
    its values with replacement; the statistic is the mean of the drawn groups' resample means
    (every seed weighs the same, as in the estimate). Image resamples are precomputed per group
    (``S × B`` means, vectorised) and each drawn slot takes an independent one, so a group drawn
    twice gets two different image resamples.

    Args:
        groups: ``S`` non-empty 1-D arrays of finite values (per seed, the per-image differences).
        confidence: coverage in (0, 1). Default 0.95.
        n_resamples: resamples B. Default 2000.
        seed: seed of ``numpy.random.default_rng``. Default 0.

    Returns:
        A :class:`~infsa_viz.evaluation.intervals.ConfidenceInterval` (``method="hierarchical"``,
        ``n`` = groups); one group gives the image-level bootstrap of its mean.

    Raises:
        ValueError: no group, an empty or non-finite group, or a bad option.
    """
    arrays = [np.asarray(g, dtype=np.float64) for g in groups]
    if not arrays or any(a.ndim != 1 or a.size == 0 or not np.isfinite(a).all() for a in arrays):
        raise ValueError("groups must be a non-empty sequence of non-empty 1-D arrays of finite values")
    confidence = check_float("confidence", confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence!r} is invalid; expected 0 < confidence < 1")
    n_resamples = check_int("n_resamples", n_resamples, minimum=1)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    S = len(arrays)
    inner = np.empty((S, n_resamples), dtype=np.float64)  # (S, B) image-resample means per group
    for s, values in enumerate(arrays):
        rows = max(1, (1 << 22) // values.size)
        for start in range(0, n_resamples, rows):
            stop = min(n_resamples, start + rows)
            inner[s, start:stop] = values[rng.integers(0, values.size, size=(stop - start, values.size))].mean(1)
    drawn = rng.integers(0, S, size=(n_resamples, S))  # (B, S) groups of each resample
    column = rng.integers(0, n_resamples, size=(n_resamples, S))  # (B, S) which image resample each slot takes
    means = inner[drawn, column].mean(axis=1)  # (B,)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    estimate = float(np.mean([a.mean() for a in arrays]))
    return ConfidenceInterval(estimate=estimate, low=float(low), high=float(high), confidence=confidence,
                              method="hierarchical", n=S, n_resamples=n_resamples, seed=seed)
