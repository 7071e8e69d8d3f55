"""The interval over images of a row figure: the bootstrap of a mean.

Every figure of an evaluation row is a mean over images, so its uncertainty comes from the
images: :func:`bootstrap_ci` resamples images (percentile or BCa interval, Efron & Tibshirani
1993, ch. 13–14) and :func:`bootstrap_means` draws the resample means it (and the paired tests of
:mod:`infsa_viz.stats.paired`) read. Resampling is vectorised over resamples and seeded, so reruns
give equal numbers.

Example:
    >>> values = np.arange(10.0)
    >>> ci = bootstrap_ci(values, seed=0)
    >>> ci.low < values.mean() < ci.high
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from .._checks import check_choice, check_float, check_int

__all__ = ["CI_METHODS", "CIMethod", "ConfidenceInterval", "bootstrap_ci", "bootstrap_means"]

CIMethod = Literal["percentile", "bca"]
CI_METHODS: tuple[str, ...] = ("percentile", "bca")
#: Elements of one block of the (resamples, n) index matrix; bounds the memory of a bootstrap.
_BLOCK = 1 << 22


def _values(name: str, values: Any) -> np.ndarray:
    """A finite 1-D float64 array with at least one value (``ValueError`` naming ``name`` otherwise)."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={values!r} is invalid; expected a 1-D sequence of numbers") from None
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} has shape {array.shape}; expected a non-empty 1-D array")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds {int((~np.isfinite(array)).sum())} non-finite value(s); expected finite "
                         "values (drop undefined images first)")
    return array


def _options(confidence: float, n_resamples: int, seed: int) -> tuple[float, int, int]:
    confidence = check_float("confidence", confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence={confidence!r} is invalid; expected 0 < confidence < 1")
    return confidence, check_int("n_resamples", n_resamples, minimum=1), check_int("seed", seed, minimum=0)


def bootstrap_means(values: np.ndarray, *, n_resamples: int = 2000, seed: int = 0) -> np.ndarray:
    """Means of ``n_resamples`` resamples of ``values`` (drawn with replacement), vectorised.

    Args:
        values: ``(n,)`` finite values.
        n_resamples: number of resamples B. Default 2000.
        seed: seed of ``numpy.random.default_rng``; the same seed and ``n`` draw the same
            resamples, so two vectors of the same images are resampled alike. Default 0.

    Returns:
        ``(B,) float64`` resample means.
    """
    array = _values("values", values)
    n_resamples = check_int("n_resamples", n_resamples, minimum=1)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    n = array.size
    rows = max(1, _BLOCK // n)
    out = np.empty(n_resamples, dtype=np.float64)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        index = rng.integers(0, n, size=(stop - start, n))  # (b, n)
        out[start:stop] = array[index].mean(axis=1)
    return out


@dataclass(frozen=True)
class ConfidenceInterval:
    """A bootstrap interval of a mean.

    Attributes:
        estimate: the mean of the values.
        low, high: the interval's ends.
        confidence: its nominal coverage, e.g. 0.95.
        method: ``"percentile"`` or ``"bca"``.
        n: number of values.
        n_resamples: number of resamples.
        seed: the resampling seed.
    """

    estimate: float
    low: float
    high: float
    confidence: float
    method: str
    n: int
    n_resamples: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _normal_cdf(x: np.ndarray | float) -> np.ndarray:
    from scipy.special import ndtr

    return ndtr(x)


def _normal_ppf(p: np.ndarray | float) -> np.ndarray:
    from scipy.special import ndtri

    return ndtri(p)


def _interval(array: np.ndarray, means: np.ndarray, confidence: float, method: str) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    levels = np.array([alpha, 1.0 - alpha])
    if method == "bca":
        estimate = array.mean()
        below = np.mean(means < estimate) + 0.5 * np.mean(means == estimate)  # ties split (constant data)
        z0 = float(_normal_ppf(np.clip(below, 1e-12, 1 - 1e-12)))
        n = array.size
        jack = (array.sum() - array) / (n - 1) if n > 1 else array.copy()  # (n,) leave-one-out means
        d = jack.mean() - jack
        denom = 6.0 * float((d**2).sum()) ** 1.5
        a = float((d**3).sum()) / denom if denom > 0 else 0.0  # acceleration
        z = _normal_ppf(levels)
        levels = _normal_cdf(z0 + (z0 + z) / (1.0 - a * (z0 + z)))
    low, high = np.quantile(means, levels)
    return float(low), float(high)


def bootstrap_ci(values: Sequence[float] | np.ndarray, *, confidence: float = 0.95, n_resamples: int = 2000,
                 method: CIMethod = "percentile", seed: int = 0) -> ConfidenceInterval:
    """Bootstrap interval of the mean of ``values`` (resampling the values, e.g. images).

    Args:
        values: ``(n,)`` finite per-image values (drop undefined ones first).
        confidence: nominal coverage in (0, 1). Default 0.95.
        n_resamples: resamples B. Default 2000.
        method: ``"percentile"`` (default; quantiles of the resample means) or ``"bca"``
            (bias-corrected and accelerated, acceleration from the jackknife; Efron 1987).
        seed: resampling seed. Default 0.

    Returns:
        A :class:`ConfidenceInterval`; ``n = 1`` gives the degenerate interval ``[x, x]``.

    Raises:
        ValueError: empty or non-finite ``values``, or an invalid option (the message names it).
    """
    array = _values("values", values)
    confidence, n_resamples, seed = _options(confidence, n_resamples, seed)
    check_choice("method", method, CI_METHODS)
    means = bootstrap_means(array, n_resamples=n_resamples, seed=seed)
    low, high = _interval(array, means, confidence, method)
    return ConfidenceInterval(estimate=float(array.mean()), low=low, high=high, confidence=confidence,
                              method=method, n=int(array.size), n_resamples=n_resamples, seed=seed)
