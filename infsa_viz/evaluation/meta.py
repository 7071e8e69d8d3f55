"""Meta-evaluation: can a metric be trusted to tell a better map from a worse one?

After MetaQuantus (Hedström et al., "The meta-evaluation problem in explainable AI", TMLR 2023):
a metric should *respond* to a map getting worse and *resist* a change that should not matter.
Starting from a reference map known to be good (the evidence oracle,
:func:`~infsa_viz.metrics.evidence.evidence_oracle`), per image:

* **Normalisation**: ``n(m) = (m − min m) / (max m − min m)`` over the map's patches (a constant
  map becomes 0), so blends and noise have one scale.
* **Degradation by blending**: ``b_α = (1 − α)·n(oracle) + α·n(R)`` with ``R`` one seeded uniform
  random map (``numpy.random.default_rng([seed, 0]).random``), at ``α = 0, 0.25, 0.5, 0.75, 1``.
  Monotonicity is Spearman's ρ between ``α`` and the figure's mean *quality* (the mean, negated
  for a lower-is-better figure); a trustworthy figure has ``ρ ≤ −0.9``.
* **Degradation by shifting**: ``n(oracle)`` moved ``s = 1, 2, 3`` patches down and right (what
  leaves the grid is dropped, what enters is 0), the mean at each ``s`` and ρ between ``s`` and
  quality (reported, not part of the verdict: a shift may stay on a large object).
* **Harmless perturbation**: ``m + ε·Z`` on normalised maps, with ``Z`` seeded standard normal
  noise per patch and ``ε = noise`` (default 0.001 of the normalised range). *Stability* is the share of images whose
  order of two maps ``A``, ``B`` (which one the figure rates better, or a tie: values equal within
  ``1e-9`` relative, ``1e-12`` absolute) is the same before and after both are perturbed, over the
  images where all four values are defined. Default pair: ``b_0.25`` and ``b_0.5`` (a better and a
  worse map, close enough for a fragile figure to swap them); the caller may pass two real maps.
  A trustworthy figure has stability ``≥ 0.9``.

The figures come from ``score(maps) -> {figure: (B,) values}``, a closure over the model, images and
ground truth (e.g. MoRF-AOC per image, box PR-AUC, the evidence figures), called
``len(alphas) + len(shifts) + 4`` times (a figure's cost is that many of its runs).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .._checks import check_float, check_int
from ..metrics import UndefinedMetricWarning
from ..metrics._checks import check_maps

__all__ = ["ALPHAS", "FigureMeta", "MetaEvaluation", "blend", "meta_evaluate", "meta_evaluate_model", "normalise",
           "shift"]

#: Blend weights of the random map, from the oracle (0) to the random map (1).
ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)
_STREAM_RANDOM, _STREAM_NOISE = 0, 1
_TOLERANCE = 1e-9

ScoreMaps = Callable[[np.ndarray], Mapping[str, np.ndarray]]


def normalise(maps: Any) -> np.ndarray:
    """``(B, h, w)`` maps min–max normalised per image to ``[0, 1]`` (a constant map → 0)."""
    values = check_maps(maps)
    flat = values.reshape(len(values), -1)
    lo, hi = flat.min(1)[:, None, None], flat.max(1)[:, None, None]
    return np.where(hi > lo, (values - lo) / np.where(hi > lo, hi - lo, 1.0), 0.0)


def blend(oracle: Any, random: Any, alpha: float) -> np.ndarray:
    """``(1 − α)·n(oracle) + α·n(random)`` on normalised maps (module doc)."""
    alpha = check_float("alpha", alpha, minimum=0.0)
    if alpha > 1:
        raise ValueError(f"alpha={alpha!r} is invalid; expected a value in [0, 1]")
    return (1 - alpha) * normalise(oracle) + alpha * normalise(random)


def shift(maps: Any, patches: int) -> np.ndarray:
    """``n(maps)`` moved ``patches`` down and right; vacated patches are 0."""
    patches = check_int("patches", patches, minimum=0)
    values = normalise(maps)
    out = np.zeros_like(values)
    h, w = values.shape[1:]
    if patches < min(h, w):
        out[:, patches:, patches:] = values[:, : h - patches, : w - patches]
    return out


@dataclass(frozen=True)
class FigureMeta:
    """The meta-evaluation of one figure (module doc).

    Attributes:
        figure: the figure's name.
        higher_is_better: its direction.
        alphas: the blend weights; ``alpha_means``: the figure's mean over defined images at each.
        degradation_spearman: Spearman's ρ between ``α`` and the mean quality (≤ −0.9 to trust).
        shifts: patches shifted (0 first); ``shift_means``: the mean at each.
        shift_spearman: Spearman's ρ between the shift and the mean quality.
        stability: share of images whose order of the pair survives the harmless perturbation.
        stability_images: images it is measured on (all four values defined).
        monotone, stable, trustworthy: the verdicts (trustworthy = monotone and stable).
    """

    figure: str
    higher_is_better: bool
    alphas: tuple[float, ...]
    alpha_means: tuple[float, ...]
    degradation_spearman: float
    shifts: tuple[int, ...]
    shift_means: tuple[float, ...]
    shift_spearman: float
    stability: float
    stability_images: int
    monotone: bool
    stable: bool
    trustworthy: bool

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


@dataclass(frozen=True)
class MetaEvaluation:
    """Per figure a :class:`FigureMeta`, and the settings that made them."""

    figures: dict[str, FigureMeta]
    protocol: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"figures": {k: v.to_dict() for k, v in self.figures.items()}, "protocol": self.protocol}


def _spearman(x: Sequence[float], y: Sequence[float]) -> float:
    from scipy.stats import spearmanr

    if any(math.isnan(v) for v in y) or len(set(y)) < 2:
        return math.nan
    return float(spearmanr(x, y).statistic)


def _means(values: np.ndarray) -> float:
    return float(np.nanmean(values)) if np.isfinite(values).any() else math.nan


def _order(a: np.ndarray, b: np.ndarray, sign: float) -> np.ndarray:
    """+1 where the figure rates ``a`` better, −1 where ``b``, 0 on a tie."""
    tie = np.isclose(a, b, rtol=1e-9, atol=1e-12)
    return np.where(tie, 0.0, np.sign(sign * (a - b)))


def meta_evaluate(
    score: ScoreMaps,
    oracle: Any,
    *,
    higher_is_better: Mapping[str, bool],
    alphas: Sequence[float] = ALPHAS,
    shifts: Sequence[int] = (1, 2, 3),
    noise: float = 1e-3,
    pair: tuple[Any, Any] | None = None,
    seed: int = 0,
    monotonicity_threshold: float = -0.9,
    stability_threshold: float = 0.9,
) -> MetaEvaluation:
    """Degrade the oracle step by step and perturb a pair harmlessly; report per figure (module doc).

    Args:
        score: ``maps (B, h, w) -> {figure: (B,) values}`` (``nan`` where undefined).
        oracle: ``(B, h, w)`` the reference map of the same images.
        higher_is_better: each figure's direction; every figure ``score`` returns must be named.
        alphas: blend weights of the random map (default :data:`ALPHAS`), at least 3, increasing.
        shifts: patch shifts (default 1, 2, 3).
        noise: ``ε`` of the harmless perturbation in normalised units (default 0.001).
        pair: two ``(B, h, w)`` maps whose per-image order is tested, normalised first (default
            ``b_0.25``, ``b_0.5``).
        seed: seed of the random map and of the noise.
        monotonicity_threshold: ρ at or below which a figure is monotone (default −0.9).
        stability_threshold: stability at or above which a figure is stable (default 0.9).

    Returns:
        :class:`MetaEvaluation`.

    Raises:
        ValueError: bad options, maps of different shapes, a figure without a direction, or
            values that are not one per image.
    """
    reference = normalise(oracle)
    alphas = tuple(check_float("alphas", a, minimum=0.0) for a in alphas)
    if len(alphas) < 3 or list(alphas) != sorted(set(alphas)) or alphas[-1] > 1:
        raise ValueError(f"alphas={alphas!r} is invalid; expected >= 3 increasing values in [0, 1]")
    shifts = tuple(check_int("shifts", s, minimum=1) for s in shifts)
    noise = check_float("noise", noise, positive=True)
    seed = check_int("seed", seed, minimum=0)
    random = np.random.default_rng([seed, _STREAM_RANDOM]).random(reference.shape)

    def run(maps: np.ndarray) -> dict[str, np.ndarray]:
        with warnings.catch_warnings():  # undefined images are nan and left out of the means
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            found = {k: np.asarray(v, dtype=np.float64) for k, v in score(maps).items()}
        for name, values in found.items():
            if name not in higher_is_better:
                raise ValueError(f"figure {name!r} has no direction; expected it in higher_is_better")
            if values.shape != (len(maps),):
                raise ValueError(f"figure {name!r} has shape {values.shape}; expected one value per image ({len(maps)},)")
        return found

    blended = [run(blend(reference, random, a)) for a in alphas]
    shifted = [blended[0]] + [run(shift(reference, s)) for s in shifts]
    a_maps, b_maps = ((blend(reference, random, 0.25), blend(reference, random, 0.5)) if pair is None else
                      (normalise(check_maps(m, batch=len(reference), name="pair")) for m in pair))
    rng = np.random.default_rng([seed, _STREAM_NOISE])
    a_clean, b_clean = run(a_maps), run(b_maps)
    a_noisy = run(a_maps + noise * rng.standard_normal(a_maps.shape))
    b_noisy = run(b_maps + noise * rng.standard_normal(b_maps.shape))

    figures = {}
    for name in blended[0]:
        sign = 1.0 if higher_is_better[name] else -1.0
        alpha_means = tuple(_means(r[name]) for r in blended)
        shift_means = tuple(_means(r[name]) for r in shifted)
        degradation = _spearman(alphas, [sign * m for m in alpha_means])
        along_shift = _spearman((0, *shifts), [sign * m for m in shift_means])
        before = (a_clean[name], b_clean[name])
        after = (a_noisy[name], b_noisy[name])
        defined = np.isfinite(np.stack([*before, *after])).all(axis=0)
        kept = _order(*before, sign)[defined] == _order(*after, sign)[defined]
        stability = float(kept.mean()) if defined.any() else math.nan
        monotone = bool(degradation <= monotonicity_threshold + _TOLERANCE)  # ρ of 5 points is k/10 up to rounding
        stable = bool(stability >= stability_threshold - _TOLERANCE)
        figures[name] = FigureMeta(
            figure=name, higher_is_better=bool(higher_is_better[name]), alphas=alphas, alpha_means=alpha_means,
            degradation_spearman=degradation, shifts=(0, *shifts), shift_means=shift_means,
            shift_spearman=along_shift, stability=stability, stability_images=int(defined.sum()),
            monotone=monotone, stable=stable, trustworthy=monotone and stable,
        )
    protocol = {
        "reference": "the oracle map, min-max normalised per image",
        "blend": "b_alpha = (1 - alpha) n(oracle) + alpha n(R), R = numpy default_rng([seed, 0]).random",
        "shift": "n(oracle) moved s patches down and right, vacated patches 0",
        "harmless": f"m + noise * N(0, 1) per patch on normalised maps, default_rng([seed, 1]); noise={noise}",
        "pair": "given by the caller" if pair is not None else "b_0.25 and b_0.5",
        "stability": "share of images (all four values defined) whose order of the pair, or tie "
                     "(rtol 1e-9, atol 1e-12), survives the harmless perturbation",
        "monotone": f"Spearman(alpha, mean quality) <= {monotonicity_threshold} (quality = mean, negated "
                    "for lower-is-better figures)",
        "stable": f"stability >= {stability_threshold}",
        "alphas": list(alphas), "shifts": list(shifts), "seed": seed, "n_images": len(reference),
        "reference_paper": "Hedström et al., The meta-evaluation problem in explainable AI (MetaQuantus), TMLR 2023",
    }
    return MetaEvaluation(figures=figures, protocol=protocol)


def meta_evaluate_model(model: Any, data: Any, *, protocol: Any = None, metrics: Sequence[str] | None = None,
                        oracle: str = "evidence_oracle", seed: int = 0) -> MetaEvaluation:
    """:func:`meta_evaluate` of every registered per-image metric for one model on ``data``.

    The reference is the ``oracle`` map (default the evidence oracle, built from each scene
    object's importance to this model); the figures are the registry's (:data:`~infsa_viz.metrics.
    registry.FIGURES`, table figures with a direction), each computed by its metric on the
    degraded maps exactly as :func:`~infsa_viz.evaluation.evaluate` computes it (settings and
    image subsets from ``protocol``; ``"scored"`` figures on the ``select`` images only). Metrics
    that re-explain other classes (the class switch) cannot score fixed maps and are left out.

    Args:
        model: the model (eval mode).
        data: a :class:`~infsa_viz.data.LabelledImages` with scenes (a generated benchmark).
        protocol: :class:`~infsa_viz.evaluation.EvalSettings` (default: the evaluation's defaults).
        metrics: the metrics to meta-evaluate (default: every selected per-image metric that can).
        oracle: the reference map method (a registered ``"ceiling"``).
        seed: seed of the random map and of the harmless noise.
    """
    import dataclasses

    import torch

    from ..maps import check_method
    from .engine import score_metrics, scoring_context
    from .settings import EvalSettings

    protocol = EvalSettings() if protocol is None else protocol
    if check_method(oracle).role != "ceiling":
        raise ValueError(f"oracle={oracle!r} is not a ceiling reference map")
    if data.scenes is None:
        raise ValueError("data has no scenes; the meta-evaluation needs a generated benchmark (object masks)")
    model.eval()
    ctx, result, logits, _ = scoring_context(model, data, oracle, protocol=protocol)
    reference = result.maps.double().numpy()
    chosen = [m for m in protocol.image_metrics() if not m.redraws and (metrics is None or m.name in metrics)]
    figures = [f for m in chosen for f in m.figures if f.table and f.higher_is_better is not None]
    eligible = (np.ones(len(ctx), dtype=bool) if protocol.select == "all"
                else logits.argmax(-1).numpy() == ctx.classes)

    def score(maps: np.ndarray) -> dict[str, np.ndarray]:
        tensor = torch.as_tensor(maps, dtype=torch.float32)
        degraded = dataclasses.replace(ctx, maps=tensor, redraw=lambda rows, classes: tensor[rows])
        values, _, _ = score_metrics(chosen, degraded)
        return {f.name: np.where(eligible, values[f.key], np.nan) if f.images == "scored" else values[f.key]
                for f in figures}

    found = meta_evaluate(score, reference, higher_is_better={f.name: bool(f.higher_is_better) for f in figures},
                          seed=seed)
    found.protocol.update({"oracle": oracle, "metrics": [m.name for m in chosen], "settings": protocol.to_dict(),
                           "scored_images": int(eligible.sum())})
    return found
