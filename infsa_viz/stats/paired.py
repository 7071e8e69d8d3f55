"""Paired tests of two maps or models on the same images, and multiple comparisons.

:func:`paired_bootstrap` resamples the per-image differences of two maps or models scored on the
same images (interval of the mean difference and a two-sided p-value from the null-centred
bootstrap, Efron & Tibshirani 1993, ch. 16; the resampling is
:func:`~infsa_viz.evaluation.intervals.bootstrap_ci`'s); :func:`wilcoxon_signed_rank` is the rank
test of the same pairs (Wilcoxon 1945, via :func:`scipy.stats.wilcoxon`) with the matched-pairs
rank-biserial correlation as effect size (Kerby 2014); :func:`holm` adjusts a family of p-values
(Holm 1979). Resampling is seeded, so reruns give equal numbers.

Example:
    >>> comparison = compare_paired([1.0, 2.0, 3.0, 4.0], [0.5, 1.0, 2.5, 3.0], seed=0)
    >>> comparison.n_pairs, comparison.mean_a > comparison.mean_b
    (4, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..evaluation.intervals import CIMethod, ConfidenceInterval, bootstrap_ci, bootstrap_means

__all__ = [
    "PairedComparison",
    "WilcoxonResult",
    "compare_paired",
    "holm",
    "paired_bootstrap",
    "significant",
    "wilcoxon_signed_rank",
]


def _pairs(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    """Two equal-length 1-D arrays; pairs where either value is nan are dropped."""
    arrays = []
    for name, values in (("a", a), ("b", b)):
        try:
            array = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name}={values!r} is invalid; expected a 1-D sequence of numbers") from None
        if array.ndim != 1:
            raise ValueError(f"{name} has shape {array.shape}; expected a 1-D array")
        if np.isinf(array).any():
            raise ValueError(f"{name} holds infinite values; expected finite values or nan (undefined)")
        arrays.append(array)
    if arrays[0].shape != arrays[1].shape:
        raise ValueError(f"a has {arrays[0].size} values and b has {arrays[1].size}; expected one pair per image")
    keep = np.isfinite(arrays[0]) & np.isfinite(arrays[1])
    if not keep.any():
        raise ValueError("a and b share no image where both are defined; expected at least one pair")
    return arrays[0][keep], arrays[1][keep]


def paired_bootstrap(a: Any, b: Any, *, confidence: float = 0.95, n_resamples: int = 2000,
                     method: CIMethod = "percentile", seed: int = 0) -> tuple[ConfidenceInterval, float]:
    """Interval of ``mean(a − b)`` and a two-sided bootstrap p-value for "no mean difference".

    The pairs (images) are resampled together. The p-value resamples the differences centred at
    zero (the null hypothesis made true) and counts resample means at least as far from zero as
    the observed mean: ``p = (1 + #{|mean*| ≥ |mean|}) / (1 + B)`` (never 0).

    Args:
        a, b: ``(n,)`` per-image values of two maps/models on the same images; pairs with a
            ``nan`` on either side are dropped.
        confidence, n_resamples, method, seed: as in :func:`bootstrap_ci`.

    Returns:
        ``(interval of the mean difference, p-value)``.
    """
    x, y = _pairs(a, b)
    d = x - y
    ci = bootstrap_ci(d, confidence=confidence, n_resamples=n_resamples, method=method, seed=seed)
    null = bootstrap_means(d - d.mean(), n_resamples=n_resamples, seed=seed)
    observed = abs(float(d.mean()))
    tolerance = 1e-12 * max(1.0, observed)  # equal-in-exact-arithmetic means count as "as extreme"
    p = (1 + int(np.sum(np.abs(null) >= observed - tolerance))) / (1 + n_resamples)
    return ci, float(p)


@dataclass(frozen=True)
class WilcoxonResult:
    """The Wilcoxon signed-rank test of paired values, with its effect size.

    Attributes:
        statistic: scipy's statistic (the smaller of the signed-rank sums, two-sided).
        p_value: two-sided p-value; 1.0 when every difference is zero.
        rank_biserial: matched-pairs rank-biserial correlation ``(T+ − T−) / (T+ + T−)`` over
            the nonzero differences, in [−1, 1] (positive: ``a`` tends to exceed ``b``); 0.0
            when every difference is zero.
        n: pairs.
        n_zero: pairs with equal values (dropped from the ranks: ``zero_method="wilcox"``).
        method: scipy's ``method`` (``"auto"``: exact for small n without ties, else normal).
    """

    statistic: float
    p_value: float
    rank_biserial: float
    n: int
    n_zero: int
    method: str = "auto"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def wilcoxon_signed_rank(a: Any, b: Any) -> WilcoxonResult:
    """Two-sided Wilcoxon signed-rank test of ``a − b`` with the rank-biserial effect size.

    Zero differences are dropped (``zero_method="wilcox"``), tied absolute differences get their
    average rank. Pairs with a ``nan`` on either side are dropped first.

    Raises:
        ValueError: arrays of different lengths, not 1-D, infinite values, or no complete pair.
    """
    from scipy.stats import rankdata, wilcoxon

    x, y = _pairs(a, b)
    d = x - y
    nonzero = d[d != 0]
    n_zero = int(d.size - nonzero.size)
    if nonzero.size == 0:
        return WilcoxonResult(statistic=0.0, p_value=1.0, rank_biserial=0.0, n=int(d.size), n_zero=n_zero)
    ranks = rankdata(np.abs(nonzero))
    plus, minus = float(ranks[nonzero > 0].sum()), float(ranks[nonzero < 0].sum())
    result = wilcoxon(nonzero, zero_method="wilcox", alternative="two-sided", method="auto")
    return WilcoxonResult(statistic=float(result.statistic), p_value=float(result.pvalue),
                          rank_biserial=(plus - minus) / (plus + minus), n=int(d.size), n_zero=n_zero)


def significant(value: float | None, digits: int = 6) -> float | None:
    """``value`` rounded to ``digits`` significant digits (small p-values keep their size); ``None``
    for ``None`` or non-finite values."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{digits}g}")


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values (controls the family-wise error rate).

    The ``k``-th smallest of ``m`` p-values becomes ``max_{j ≤ k} min(1, (m − j + 1) p_(j))``;
    reject where the adjusted value is at most α. ``nan`` entries (tests not run) stay ``nan``
    and do not count in ``m``. An ``(..., m)`` array holds one family per row (the last axis),
    adjusted independently (simulations adjust many families at once).

    Raises:
        ValueError: values outside [0, 1] or a 0-d input.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim == 0:
        raise ValueError(f"p_values has shape {p.shape}; expected a 1-D array (or one family per row)")
    finite = np.isfinite(p)
    if ((p[finite] < 0) | (p[finite] > 1)).any():
        raise ValueError(f"p_values={p.tolist()} is invalid; expected values in [0, 1] (or nan)")
    rows = np.where(finite, p, np.inf).reshape(-1, p.shape[-1])  # untested last in the order
    order = np.argsort(rows, axis=1, kind="stable")
    ranked = np.take_along_axis(rows, order, axis=1)
    m = finite.reshape(rows.shape).sum(axis=1, keepdims=True)  # (F, 1) tests per family
    ranked = np.where(np.isinf(ranked), 0.0, ranked)  # untested: ranked last, overwritten with nan below
    scaled = np.minimum(1.0, (m - np.arange(rows.shape[1])) * ranked)
    adjusted = np.maximum.accumulate(scaled, axis=1)
    out = np.empty_like(rows)
    np.put_along_axis(out, order, adjusted, axis=1)
    return np.where(finite, out.reshape(p.shape), np.nan)


@dataclass(frozen=True)
class PairedComparison:
    """``a`` against ``b`` on the same images: mean difference with interval, both tests.

    Attributes:
        n_pairs: images where both are defined.
        mean_a, mean_b: means over those images.
        difference: interval of ``mean(a − b)`` (:func:`paired_bootstrap`).
        p_bootstrap: the paired bootstrap's two-sided p-value.
        wilcoxon: the signed-rank test and its rank-biserial effect size.
        cohen_dz: ``mean(a − b) / sd(a − b)`` (``nan`` when the differences are constant).
    """

    n_pairs: int
    mean_a: float
    mean_b: float
    difference: ConfidenceInterval
    p_bootstrap: float
    wilcoxon: WilcoxonResult
    cohen_dz: float

    def to_dict(self, digits: int = 6) -> dict[str, Any]:
        """JSON-ready: values rounded to ``digits`` decimals, p-values to ``digits`` significant digits."""
        def r(v: float) -> float | None:
            return None if not math.isfinite(v) else round(v, digits)

        def sig(v: float) -> float | None:
            return significant(v, digits)

        d = self.difference
        return {
            "n_pairs": self.n_pairs, "mean_a": r(self.mean_a), "mean_b": r(self.mean_b),
            "mean_difference": r(d.estimate), "difference_ci": [r(d.low), r(d.high)],
            "p_bootstrap": sig(self.p_bootstrap), "p_wilcoxon": sig(self.wilcoxon.p_value),
            "wilcoxon_statistic": r(self.wilcoxon.statistic), "n_zero_differences": self.wilcoxon.n_zero,
            "effect_size": {"rank_biserial": r(self.wilcoxon.rank_biserial), "cohen_dz": r(self.cohen_dz)},
        }


def compare_paired(a: Any, b: Any, *, confidence: float = 0.95, n_resamples: int = 2000,
                   method: CIMethod = "percentile", seed: int = 0) -> PairedComparison:
    """Paired bootstrap and Wilcoxon test of ``a`` vs ``b`` (same images), with effect sizes."""
    x, y = _pairs(a, b)
    ci, p = paired_bootstrap(x, y, confidence=confidence, n_resamples=n_resamples, method=method, seed=seed)
    d = x - y
    sd = float(d.std(ddof=1)) if d.size > 1 else 0.0
    return PairedComparison(n_pairs=int(d.size), mean_a=float(x.mean()), mean_b=float(y.mean()), difference=ci,
                            p_bootstrap=p, wilcoxon=wilcoxon_signed_rank(x, y),
                            cohen_dz=float(d.mean()) / sd if sd > 0 else math.nan)
