"""Scalar scores from perturbation curves: MoRF AOC, LeRF AUC (both in %) and AOPC.

With ``p_k`` the probability after step ``k`` (``p_0`` the clean image) at actual fractions
``f_k`` (:attr:`PerturbationCurves.fractions`, ``f_0 = 0``, ``f_K = 1``), per image:

* ``morf_aoc  = 100 * trapz(1 - p_k / p_0, f_k)``   (higher = the map finds what matters)
* ``lerf_auc  = 100 * trapz(p_k / p_0, f_k)``       (higher = the map finds what does not)
* ``aopc      = 1/(K+1) * sum_{k=0..K} (p_0 - p_k)`` (Samek et al. 2016, eq. 12, unnormalised,
  in probability units; for MoRF curves higher is better)

``trapz`` is the trapezoid rule over the actual fractions. Images with ``p_0 = 0`` have no ratio:
``nan`` with an :class:`UndefinedMetricWarning`. The mean is taken over the selected images
(``select="correct"``: clean prediction == target, the default; ``"all"``: every image) that are
defined; the counts come with the result.

Quantus differs: ``RegionPerturbation`` returns ``p_0 - p_k`` for ``k = 1..R`` (one patch per
step, no ``k = 0`` term) and its ``get_auc_score`` integrates that with ``np.trapz(dx=1)``; with
one patch per step our ``aopc == sum(quantus_curve) / (R + 1)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._checks import check_choice, warn_undefined
from .perturbation import PerturbationCurves
from .removal import trapezoid
from .protocol import SELECTIONS, Selection

__all__ = ["CurveScore", "aopc", "lerf_auc", "morf_aoc"]

_FORMULAS = {
    "morf_aoc": "100 * trapz(1 - p_k/p_0, f_k) over the actual fractions f_k (in %)",
    "lerf_auc": "100 * trapz(p_k/p_0, f_k) over the actual fractions f_k (in %)",
    "aopc": "1/(K+1) * sum_{k=0..K} (p_0 - p_k) (Samek et al. 2016, unnormalised, probability units)",
}


@dataclass(frozen=True, eq=False)
class CurveScore:
    """A score per image and its mean over the selected, defined images.

    Attributes:
        metric: ``"morf_aoc"``, ``"lerf_auc"`` or ``"aopc"``.
        per_image: ``(B,) float64`` score of every image (``nan`` where undefined), whether
            selected or not.
        mean: Mean over ``included`` images (``nan`` if none).
        included: ``(B,) bool`` images in the mean (selected and defined).
        n_images: ``B``.
        n_correct: Images whose clean prediction equals the target.
        n_included: Images in the mean.
        n_undefined: Selected images left out because the score is undefined.
        protocol: The curve's protocol plus the score's formula, selection and clipping.
    """

    metric: str
    per_image: np.ndarray
    mean: float
    included: np.ndarray
    n_images: int
    n_correct: int
    n_included: int
    n_undefined: int
    protocol: dict[str, Any]


def morf_aoc(
    curve: PerturbationCurves, *, select: Selection = "correct", clip: bool = False
) -> CurveScore:
    """Area over the normalised MoRF curve, in %: ``100 * trapz(1 - p_k / p_0, f_k)``.

    Args:
        curve: A MoRF :class:`PerturbationCurves`.
        select: ``"correct"`` (default: images the model classifies correctly) or ``"all"``.
        clip: Clip ``p_k / p_0`` to ``[0, 1]`` first, which keeps the score in ``[0, 100]``.
            Default ``False``: the plain formula, below 0 when removal raises the probability.

    Returns:
        A :class:`CurveScore` (higher = better).

    Raises:
        TypeError: If ``curve`` is not a :class:`PerturbationCurves`.
        ValueError: If ``curve.order`` is not ``"morf"`` or an option is invalid.
    """
    check_choice("select", select, SELECTIONS)
    ratio = _ratio(curve, "morf", "morf_aoc", clip)
    return _summarise("morf_aoc", 100.0 * trapezoid(1.0 - ratio, curve.fractions), curve, select, clip)


def lerf_auc(
    curve: PerturbationCurves, *, select: Selection = "correct", clip: bool = False
) -> CurveScore:
    """Area under the normalised LeRF curve, in %: ``100 * trapz(p_k / p_0, f_k)``.

    Args:
        curve: A LeRF :class:`PerturbationCurves`.
        select: ``"correct"`` (default) or ``"all"``.
        clip: Clip ``p_k / p_0`` to ``[0, 1]`` first (score in ``[0, 100]``). Default ``False``:
            above 100 when removal raises the probability.

    Returns:
        A :class:`CurveScore` (higher = better).

    Raises:
        TypeError: If ``curve`` is not a :class:`PerturbationCurves`.
        ValueError: If ``curve.order`` is not ``"lerf"`` or an option is invalid.
    """
    check_choice("select", select, SELECTIONS)
    ratio = _ratio(curve, "lerf", "lerf_auc", clip)
    return _summarise("lerf_auc", 100.0 * trapezoid(ratio, curve.fractions), curve, select, clip)


def aopc(curve: PerturbationCurves, *, select: Selection = "correct") -> CurveScore:
    """Unnormalised AOPC (Samek et al., 2016): ``1/(K+1) * sum_{k=0..K} (p_0 - p_k)``.

    The ``k = 0`` term is 0 and is counted, as in the paper. Works for MoRF (higher = better)
    and LeRF (lower = better) curves. Quantus' ``RegionPerturbation`` instead returns the
    differences for ``k = 1..R`` and integrates them with ``np.trapz(dx=1)``, without dividing
    by ``R + 1``.

    Args:
        curve: A :class:`PerturbationCurves`.
        select: ``"correct"`` (default) or ``"all"``.

    Returns:
        A :class:`CurveScore` in probability units, within ``[-1, 1]``.
    """
    check_choice("select", select, SELECTIONS)
    _check_curve(curve)
    values = (curve.probs[:, :1] - curve.probs).mean(axis=1)  # (B,)
    return _summarise("aopc", values, curve, select, None)


def _check_curve(curve: Any) -> None:
    if not isinstance(curve, PerturbationCurves):
        raise TypeError(f"curve has type {type(curve).__name__}; expected PerturbationCurves")


def _ratio(curve: PerturbationCurves, order: str, metric: str, clip: bool) -> np.ndarray:
    """``p_k / p_0`` ``(B, K + 1)``; rows with ``p_0 <= 0`` are nan."""
    _check_curve(curve)
    if curve.order != order:
        raise ValueError(f"curve.order={curve.order!r} is invalid for {metric}; expected {order!r}")
    if not isinstance(clip, bool):
        raise ValueError(f"clip={clip!r} is invalid; expected True or False")
    p0 = curve.probs[:, :1]  # (B, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(p0 > 0, curve.probs / np.where(p0 > 0, p0, 1.0), np.nan)
    return np.clip(ratio, 0.0, 1.0) if clip else ratio


def _summarise(
    metric: str, values: np.ndarray, curve: PerturbationCurves, select: str, clip: bool | None
) -> CurveScore:
    correct = curve.correct
    eligible = correct if select == "correct" else np.ones_like(correct)
    defined = np.isfinite(values)
    included = eligible & defined
    n_undefined = int((eligible & ~defined).sum())
    if n_undefined:
        warn_undefined(
            f"{metric}: {n_undefined} selected image(s) have p_0 = 0; their score is nan and left out of the mean"
        )
    if included.any():
        mean = float(values[included].mean())
    else:
        mean = float("nan")
        warn_undefined(f"{metric}: no image is selected (select={select!r}) and defined; the mean is nan")
    protocol = {
        "curve": curve.protocol,
        "metric": metric,
        "formula": _FORMULAS[metric],
        "select": select,
        "aggregate": "mean over selected images with a defined score",
    }
    if clip is not None:
        protocol["clip"] = clip
    return CurveScore(
        metric=metric,
        per_image=values.astype(np.float64),
        mean=mean,
        included=included,
        n_images=int(len(values)),
        n_correct=int(correct.sum()),
        n_included=int(included.sum()),
        n_undefined=n_undefined,
        protocol=protocol,
    )
