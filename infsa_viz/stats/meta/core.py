"""Meta-evaluation: can a metric be trusted to tell a better map from a worse one?

After MetaQuantus (Hedström et al., "The meta-evaluation problem in explainable AI", TMLR 2023), whose
two criteria are *noise resilience* (a harmless change must not change the verdict) and *adversarial
reactivity* (a disruptive change must), with controls whose verdict is known in advance
(:mod:`.controls`). Starting from a reference map known to be good (the evidence oracle,
:func:`~infsa_viz.metrics.evidence.evidence_oracle`), per image:

* **Normalisation**: ``n(m) = (m − min m) / (max m − min m)`` over the map's patches (a constant
  map becomes 0), so blends and noise have one scale.
* **Monotonicity** (degradation by blending): ``b_α = (1 − α)·n(oracle) + α·n(R)`` with ``R`` one
  seeded uniform random map (``numpy.random.default_rng([seed, 0]).random``), at ``α = 0, 0.25, 0.5,
  0.75, 1``; Spearman's ρ between ``α`` and the figure's mean *quality* (the mean, negated for a
  lower-is-better figure). Monotone: ``ρ ≤ −0.9``.
* **Degradation by shifting**: ``n(oracle)`` moved ``s = 1, 2, 3`` patches down and right (reported,
  not part of the verdict: a shift may stay on a large object).
* **Noise resilience**, on a calibrated grid: the pair ``A = b_0.25``, ``B = b_0.75`` (a better and a
  worse map; the caller may pass two) is perturbed as ``m + ε·Z`` with ``Z`` seeded standard normal
  noise per patch (``default_rng([seed, 1])``, one draw scaled along the grid). ``ε = c·g`` where
  ``g`` is the median over images of the root-mean-square per-patch difference ``A − B``: ``c`` is the
  noise relative to the difference the figure must see (``c = 0.01, 0.03, 0.1, 0.3, 1``, :data:`NOISE_GRID`).
  *Stability* at ``c``: of the images (all four values defined) on which the figure orders ``A`` and
  ``B`` strictly (values equal within ``1e-9`` relative, ``1e-12`` absolute are a tie), the share whose
  order is the same after the noise (a tie after it is not kept). A figure that orders no image
  (a constant, a figure of the image alone) has no stability and is not stable; the share of images
  it orders strictly is its *resolution*, reported. Reported: stability at every ``c``, and the
  smallest ``c`` (and ``ε``) at which it falls below 0.9. Stable: stability ``≥ 0.9`` at ``c = 0.1``
  (noise a tenth of the pair's difference).
* **Reactivity**: a *partner* model (by default the model with every parameter randomised, the full
  cascade of Adebayo et al., NeurIPS 2018, :func:`~infsa_viz.metrics.sanity.cascading_randomisation`)
  relies on different evidence, so its oracle is a map of another model. Each oracle is scored under
  both models: a reactive figure rates the scored model's own oracle above the other one, under the
  model *and* under the partner. Reactivity is the share of those ``2 × images`` comparisons won
  strictly (images with all four values defined). A figure that does not read the model gives both
  maps the same two values under both models, so it wins at most one of each image's two
  comparisons: its reactivity is at most 0.5 in either direction. Reactive: ``≥ 0.75``.
* **Trusted** = monotone, stable and reactive. Every negative control fails (the constant and the
  image-only figure tie everything; the random one is neither stable nor reactive; peakedness and
  total mass are monotone and stable, and fail reactivity by the bound above); the positive control
  passes.

The figures come from ``score(maps) -> {figure: (B,) values}``, a closure over the model, images and
ground truth (e.g. MoRF-AOC per image, box PR-AUC, the evidence figures), called
``len(alphas) + len(shifts) + 2·len(noise grid)`` times, and 3 more with a partner (a figure's cost
is that many of its runs; the partner's closure is called twice).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..._checks import check_float, check_int
from ...metrics import UndefinedMetricWarning
from ...metrics._checks import check_maps

__all__ = ["ALPHAS", "NOISE_GRID", "PAIR", "REFERENCE_NOISE", "FigureMeta", "MetaEvaluation", "Partner", "blend",
           "meta_evaluate", "normalise", "shift"]

#: Blend weights of the random map, from the oracle (0) to the random map (1).
ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: Noise relative to the pair's root-mean-square difference, and the level at which stability is judged.
NOISE_GRID = (0.01, 0.03, 0.1, 0.3, 1.0)
REFERENCE_NOISE = 0.1
#: The blend weights of the default pair (a better and a worse map).
PAIR = (0.25, 0.75)
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
        figure: the figure's name; ``role``: ``"metric"``, ``"negative control"`` or ``"positive control"``.
        higher_is_better: its direction.
        alphas: the blend weights; ``alpha_means``: the figure's mean over defined images at each.
        degradation_spearman: Spearman's ρ between ``α`` and the mean quality (≤ −0.9: monotone).
        shifts: patches shifted (0 first); ``shift_means``: the mean at each; ``shift_spearman``: ρ.
        noise: the grid ``c``; ``noise_epsilon``: ``ε = c·g`` in normalised map units;
            ``stability_curve``: stability at each ``c``.
        stability: stability at the reference ``c`` (``nan``: the figure orders no image strictly);
            ``stability_images``: the images it is measured on (strictly ordered, all values defined);
            ``resolution``: their share of the images with all values defined.
        noise_breakdown, noise_breakdown_epsilon: the smallest ``c`` (``ε``) at which stability falls
            below the threshold (``None``: not on the grid).
        reactivity: share of the swap comparisons won (``None`` without a partner), the mean of
            ``reactivity_model`` (under the scored model) and ``reactivity_partner`` (under the partner);
            ``reactivity_images``: images with all four values defined.
        monotone, stable, reactive, trustworthy: the verdicts (trustworthy = all three).
    """

    figure: str
    role: str
    higher_is_better: bool
    alphas: tuple[float, ...]
    alpha_means: tuple[float, ...]
    degradation_spearman: float
    shifts: tuple[int, ...]
    shift_means: tuple[float, ...]
    shift_spearman: float
    noise: tuple[float, ...]
    noise_epsilon: tuple[float, ...]
    stability_curve: tuple[float, ...]
    stability: float
    stability_images: int
    resolution: float
    noise_breakdown: float | None
    noise_breakdown_epsilon: float | None
    reactivity: float | None
    reactivity_model: float | None
    reactivity_partner: float | None
    reactivity_images: int
    monotone: bool
    stable: bool
    reactive: bool | None
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


@dataclass(frozen=True, eq=False)
class Partner:
    """Another model for the reactivity test: its ``score`` closure (the same figures, under its own
    ground truth) and its ``oracle`` map ``(B, h, w)`` of the same images."""

    score: ScoreMaps
    oracle: Any


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


def _kept(before: tuple[np.ndarray, np.ndarray], after: tuple[np.ndarray, np.ndarray],
          sign: float) -> tuple[float, int, float]:
    """``(stability, images strictly ordered before, resolution)``: of the images (all four values defined)
    the figure orders strictly, the share whose order survives; ``nan`` when it orders none."""
    defined = np.isfinite(np.stack([*before, *after])).all(axis=0)
    if not defined.any():
        return math.nan, 0, math.nan
    clean = _order(*before, sign)[defined]
    strict = clean != 0
    kept = clean[strict] == _order(*after, sign)[defined][strict]
    return (float(kept.mean()) if strict.any() else math.nan), int(strict.sum()), float(strict.mean())


def _reactivity(own: np.ndarray, cross: np.ndarray, partner_own: np.ndarray, partner_cross: np.ndarray,
                sign: float) -> tuple[float, float, float, int]:
    """``(share of the 2 × images comparisons won strictly by a model's own oracle, the share under the
    model, under the partner, images)``."""
    defined = np.isfinite(np.stack([own, cross, partner_own, partner_cross])).all(axis=0)
    if not defined.any():
        return math.nan, math.nan, math.nan, 0
    mine = float((_order(own, cross, sign) > 0)[defined].mean())
    theirs = float((_order(partner_own, partner_cross, sign) > 0)[defined].mean())
    return (mine + theirs) / 2, mine, theirs, int(defined.sum())


def meta_evaluate(
    score: ScoreMaps,
    oracle: Any,
    *,
    higher_is_better: Mapping[str, bool],
    roles: Mapping[str, str] | None = None,
    alphas: Sequence[float] = ALPHAS,
    shifts: Sequence[int] = (1, 2, 3),
    noise_grid: Sequence[float] = NOISE_GRID,
    reference_noise: float = REFERENCE_NOISE,
    pair: tuple[Any, Any] | None = None,
    partner: Partner | None = None,
    seed: int = 0,
    monotonicity_threshold: float = -0.9,
    stability_threshold: float = 0.9,
    reactivity_threshold: float = 0.75,
) -> MetaEvaluation:
    """Degrade the oracle, perturb a pair on a calibrated noise grid, swap maps with a partner (module doc).

    Args:
        score: ``maps (B, h, w) -> {figure: (B,) values}`` (``nan`` where undefined).
        oracle: ``(B, h, w)`` the reference map of the same images.
        higher_is_better: each figure's direction; every figure ``score`` returns must be named.
        roles: figure → ``"metric"`` (default), ``"negative control"`` or ``"positive control"``.
        alphas: blend weights of the random map (default :data:`ALPHAS`), at least 3, increasing.
        shifts: patch shifts (default 1, 2, 3).
        noise_grid: noise levels ``c`` relative to the pair's difference (default :data:`NOISE_GRID`),
            increasing; ``reference_noise`` (default 0.1) must be one of them.
        pair: two ``(B, h, w)`` maps whose per-image order is tested, normalised first (default
            ``b_0.25``, ``b_0.75``).
        partner: another model's :class:`Partner` for the reactivity test (default none: reactivity
            is not measured and no figure is trustworthy).
        seed: seed of the random map and of the noise.
        monotonicity_threshold, stability_threshold, reactivity_threshold: the verdicts' thresholds
            (default −0.9, 0.9, 0.75).

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
    grid = tuple(check_float("noise_grid", c, positive=True) for c in noise_grid)
    if not grid or list(grid) != sorted(set(grid)):
        raise ValueError(f"noise_grid={grid!r} is invalid; expected increasing positive values")
    if reference_noise not in grid:
        raise ValueError(f"reference_noise={reference_noise!r} is invalid; expected one of noise_grid {list(grid)}")
    seed = check_int("seed", seed, minimum=0)
    roles = dict(roles or {})
    random = np.random.default_rng([seed, _STREAM_RANDOM]).random(reference.shape)

    def run(maps: np.ndarray, closure: ScoreMaps = score) -> dict[str, np.ndarray]:
        with warnings.catch_warnings():  # undefined images are nan and left out of the means
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            found = {k: np.asarray(v, dtype=np.float64) for k, v in closure(maps).items()}
        for name, values in found.items():
            if name not in higher_is_better:
                raise ValueError(f"figure {name!r} has no direction; expected it in higher_is_better")
            if values.shape != (len(maps),):
                raise ValueError(f"figure {name!r} has shape {values.shape}; expected one value per image ({len(maps)},)")
        return found

    blends = {a: blend(reference, random, a) for a in alphas}
    blended = {a: run(m) for a, m in blends.items()}
    shifted = [blended[alphas[0]]] + [run(shift(reference, s)) for s in shifts]
    if pair is None:
        a_maps, b_maps = (blends[a] if a in blends else blend(reference, random, a) for a in PAIR)
        a_clean, b_clean = (blended[a] if a in blended else run(blend(reference, random, a)) for a in PAIR)
    else:
        a_maps, b_maps = (normalise(check_maps(m, batch=len(reference), name="pair")) for m in pair)
        a_clean, b_clean = run(a_maps), run(b_maps)
    rms = np.sqrt(((a_maps - b_maps) ** 2).reshape(len(a_maps), -1).mean(1))
    gap = float(np.median(rms)) if rms.size else 0.0
    rng = np.random.default_rng([seed, _STREAM_NOISE])
    z_a, z_b = rng.standard_normal(a_maps.shape), rng.standard_normal(b_maps.shape)
    noisy = [(run(a_maps + c * gap * z_a), run(b_maps + c * gap * z_b)) for c in grid]
    swap = None
    if partner is not None:
        other = normalise(check_maps(partner.oracle, batch=len(reference), name="partner.oracle"))
        own = blended[0.0] if 0.0 in blended else run(reference)
        swap = (own, run(other), run(other, partner.score), run(reference, partner.score))

    figures = {}
    for name in blended[alphas[0]]:
        sign = 1.0 if higher_is_better[name] else -1.0
        alpha_means = tuple(_means(blended[a][name]) for a in alphas)
        shift_means = tuple(_means(r[name]) for r in shifted)
        curve = [_kept((a_clean[name], b_clean[name]), (na[name], nb[name]), sign) for na, nb in noisy]
        stability, images, resolution = curve[grid.index(reference_noise)]
        broken = next((c for c, (value, _, _) in zip(grid, curve, strict=True)
                       if not value >= stability_threshold - _TOLERANCE), None)
        reactivity, mine, theirs, reactive_images = ((None, None, None, 0) if swap is None
                                                     else _reactivity(*(r[name] for r in swap), sign))
        degradation = _spearman(alphas, [sign * m for m in alpha_means])
        monotone = bool(degradation <= monotonicity_threshold + _TOLERANCE)  # ρ of 5 points is k/10 up to rounding
        stable = bool(stability >= stability_threshold - _TOLERANCE)
        reactive = None if reactivity is None else bool(reactivity >= reactivity_threshold - _TOLERANCE)
        figures[name] = FigureMeta(
            figure=name, role=roles.get(name, "metric"), higher_is_better=bool(higher_is_better[name]),
            alphas=alphas, alpha_means=alpha_means,
            degradation_spearman=degradation, shifts=(0, *shifts),
            shift_means=shift_means, shift_spearman=_spearman((0, *shifts), [sign * m for m in shift_means]),
            noise=grid, noise_epsilon=tuple(round(c * gap, 6) for c in grid),
            stability_curve=tuple(v for v, _, _ in curve), stability=stability, stability_images=images,
            resolution=resolution,
            noise_breakdown=broken, noise_breakdown_epsilon=None if broken is None else round(broken * gap, 6),
            reactivity=reactivity, reactivity_model=mine, reactivity_partner=theirs,
            reactivity_images=reactive_images, monotone=monotone, stable=stable,
            reactive=reactive, trustworthy=bool(monotone and stable and reactive),
        )
    protocol = {
        "reference": "the oracle map, min-max normalised per image",
        "blend": "b_alpha = (1 - alpha) n(oracle) + alpha n(R), R = numpy default_rng([seed, 0]).random",
        "shift": "n(oracle) moved s patches down and right, vacated patches 0",
        "pair": "given by the caller" if pair is not None else f"b_{PAIR[0]} and b_{PAIR[1]}",
        "noise": "m + c g Z per patch on normalised maps, Z ~ N(0, 1) from default_rng([seed, 1]) (one draw, "
                 f"scaled), g = median per-image RMS difference of the pair = {gap:.6f}",
        "stability": "of the images (all four values defined) whose pair the figure orders strictly (ties: rtol "
                     "1e-9, atol 1e-12), the share whose order survives the noise; undefined (not stable) when it "
                     "orders none",
        "monotone": f"Spearman(alpha, mean quality) <= {monotonicity_threshold} (quality = mean, negated "
                    "for lower-is-better figures)",
        "stable": f"stability >= {stability_threshold} at c = {reference_noise}",
        "reactive": (f"share of comparisons in which a model's own oracle beats the partner's, under both models, "
                     f">= {reactivity_threshold}") if partner is not None else "not measured (no partner)",
        "trusted": "monotone and stable and reactive",
        "noise_grid": list(grid), "alphas": list(alphas), "shifts": list(shifts), "seed": seed,
        "n_images": len(reference),
        "reference_paper": "Hedström et al., The meta-evaluation problem in explainable AI (MetaQuantus), TMLR 2023",
    }
    return MetaEvaluation(figures=figures, protocol=protocol)
