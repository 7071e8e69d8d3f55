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

:func:`t_test_p` is the vectorised p-value for simulations (``scripts/verdict_calibration.py``).

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
from .stats import ConfidenceInterval

__all__ = ["SeedTTest", "hierarchical_bootstrap", "seed_t_test", "t_test_p"]


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
        A :class:`~infsa_viz.evaluation.stats.ConfidenceInterval` (``method="hierarchical"``,
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
