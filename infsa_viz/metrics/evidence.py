"""Evidence metrics: does a map put its weight on the objects the model used?

The ground truth is each object's *importance* ``Δ_k`` (:func:`~infsa_viz.evaluation.interventions.object_importance`:
the drop of the explained class's probability when object ``k`` alone is removed or, for the
background, swapped), and each object's visible-pixel mask ``M_k`` in the model's input. Only
positive evidence counts: ``Δ⁺_k = max(Δ_k, 0)`` (an object whose removal does not lower the
class's probability carries no evidence for it; maps are compared through their positive part,
as the mass metrics of :mod:`.mass` are).

Maps ``(B, h, w)`` on the patch grid are spread to pixels with ``"nearest"`` (each patch's value
on each of its pixels), as in :mod:`.mass`. Per object:

* **mass** ``s_k = Σ_{p∈M_k} m⁺_p / Σ_p m⁺_p``: share of the map's positive mass on the object;
* **density** ``ρ_k = Σ_{p∈M_k} m⁺_p / |M_k|``: its positive mass per visible pixel.

The comparisons with ``Δ⁺`` use the density, not the mass: objects differ in area by two orders of
magnitude (a 12 px distractor has ~40 visible pixels, the background ~2,000 of 2,304) and a patch
map cannot separate a digit's strokes from the background between them, so shares of mass rank
objects by area (the background "wins" even for a map on the target's patches alone); densities
rank them by how strongly the map points at each. Objects without visible pixels (a digit hidden
by another) are left out of an image's comparison.

* :func:`evidence_rank_correlation`: Spearman's ρ and Kendall's τ_b between ``ρ`` and ``Δ⁺`` over
  an image's objects (average ranks for ties), the "single deletion" check of FunnyBirds
  (Hesse, Schaub-Meyer & Roth, ICCV 2023) with in-distribution removal.
* :func:`evidence_mass_accuracy`: ``Σ_k min(d_k, w_k)`` with ``d = ρ / Σρ`` the map's
  area-normalised mass shares and ``w = Δ⁺ / ΣΔ⁺`` the model's evidence shares — the histogram
  intersection (Swain & Ballard, IJCV 1991) of the two distributions over objects, ``1 − TV(d, w)``.
  1 iff the map weighs the objects in proportion to their evidence; when a single object carries
  all the evidence it is the map's area-normalised share on that object (the relevance mass accuracy
  of Arras, Osman & Samek, Information Fusion 2022, on densities).
* :func:`top_object_agreement`: 1 when the map's densest object is the object whose removal hurts
  most (ties: the expected agreement of a uniformly random tie-break).
* Relevance mass / rank accuracy against the target's mask: :func:`~.mass.mask_mass_share`,
  :func:`~.mass.mask_rank_accuracy` (CLEVR-XAI's definitions with the mask in place of the box).

:func:`evidence_oracle` paints ``Δ⁺_k`` on each object's pixels and averages it over each patch:
at pixel resolution (``patch_size=1``) or when no patch holds two objects it scores exactly 1 on
every evidence metric; on real scenes it is the ceiling up to the blur of the patch grid, as the
box oracle is for the box metrics. Undefined values (no positive evidence, a map without positive
mass, fewer than two objects to rank, a constant ranking) are ``nan`` with an
:class:`UndefinedMetricWarning`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ._checks import check_int, check_maps, check_masks, warn_undefined
from .mass import _upsampled, mask_mass_share, mask_rank_accuracy

__all__ = [
    "EVIDENCE_FIGURES",
    "RankCorrelation",
    "evidence_mass_accuracy",
    "evidence_oracle",
    "evidence_rank_correlation",
    "evidence_scores",
    "object_density",
    "object_mass",
    "top_object_agreement",
]

#: The per-image figures of :func:`evidence_scores` (all higher-is-better) with their ranges.
EVIDENCE_FIGURES: dict[str, tuple[float, float]] = {
    "evidence_spearman": (-1.0, 1.0),
    "evidence_kendall": (-1.0, 1.0),
    "evidence_mass_accuracy": (0.0, 1.0),
    "top_object_agreement": (0.0, 1.0),
    "relevance_mass_accuracy": (0.0, 1.0),
    "relevance_rank_accuracy": (0.0, 1.0),
}


class RankCorrelation(NamedTuple):
    """Per-image rank correlations ``(B,) float64`` in ``[-1, 1]``."""

    spearman: np.ndarray
    kendall: np.ndarray


def _inputs(maps: Any, masks: Any, importance: Any | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    values = check_maps(maps)
    regions = check_masks(masks, batch=values.shape[0], ndim=4)
    if importance is None:
        return values, regions, None
    try:
        weights = np.asarray(importance.detach().cpu() if hasattr(importance, "detach") else importance, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("importance could not be read as numbers; expected a real (B, O) array") from None
    if weights.shape != regions.shape[:2] or not np.isfinite(weights).all():
        raise ValueError(f"importance has shape {weights.shape}; expected finite values of shape (B, O) = "
                         f"{regions.shape[:2]}, one per mask")
    return values, regions, weights


def _sums(values: np.ndarray, regions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(positive mass per object (B, O), visible pixels per object (B, O), total positive mass (B,))``."""
    positive = np.clip(_upsampled(values, regions.shape[2:]), 0, None)  # (B, H, W)
    sums = np.einsum("bhw,bohw->bo", positive, regions.astype(np.float64))
    return sums, regions.sum(axis=(2, 3)), positive.sum(axis=(1, 2))


def object_mass(maps: Any, masks: Any) -> np.ndarray:
    """Share of each map's positive mass on each object's mask, ``s_k = Σ_{p∈M_k} m⁺_p / Σ_p m⁺_p``.

    Args:
        maps: ``(B, h, w)`` maps on the patch grid.
        masks: ``(B, O, H, W)`` bool visible-pixel masks in the model's input.

    Returns:
        ``(B, O) float64``; a row of ``nan`` where the map has no positive mass.
    """
    values, regions, _ = _inputs(maps, masks)
    sums, _, total = _sums(values, regions)
    defined = total > 0
    if not defined.all():
        warn_undefined(f"{int((~defined).sum())} map(s) have no positive mass; their object masses are nan")
    return np.where(defined[:, None], sums / np.where(defined, total, 1.0)[:, None], np.nan)


def object_density(maps: Any, masks: Any) -> np.ndarray:
    """Positive map mass per visible pixel of each object, ``ρ_k = Σ_{p∈M_k} m⁺_p / |M_k|``.

    Returns:
        ``(B, O) float64``; ``nan`` for an object without visible pixels (no warning: such objects
        are left out of the comparisons).
    """
    values, regions, _ = _inputs(maps, masks)
    return _density(values, regions)


def _density(values: np.ndarray, regions: np.ndarray) -> np.ndarray:
    sums, area, _ = _sums(values, regions)
    return np.where(area > 0, sums / np.maximum(area, 1), np.nan)


def _compared(maps: Any, masks: Any, importance: Any, missing: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(visible (B, O) bool, density ρ, positive importance Δ⁺)``, hidden objects set to ``missing``."""
    values, regions, weights = _inputs(maps, masks, importance)
    density = _density(values, regions)
    valid = ~np.isnan(density)
    return valid, np.where(valid, density, missing), np.where(valid, np.clip(weights, 0, None), missing)


def _average_ranks(x: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Average ranks (1-based) of ``x (B, O)`` among each row's valid entries; invalid entries get 0."""
    below = ((x[:, None, :] < x[:, :, None]) & valid[:, None, :]).sum(axis=2)  # (B, O)
    equal = ((x[:, None, :] == x[:, :, None]) & valid[:, None, :]).sum(axis=2)
    return np.where(valid, below + (equal + 1) / 2, 0.0)


def _rank_correlations(x: np.ndarray, y: np.ndarray, valid: np.ndarray) -> RankCorrelation:
    """Spearman and Kendall τ_b per row over the valid entries; nan where either side is constant."""
    rx, ry = _average_ranks(x, valid), _average_ranks(y, valid)
    count = np.maximum(valid.sum(axis=1, keepdims=True), 1)
    cx = np.where(valid, rx - rx.sum(1, keepdims=True) / count, 0.0)
    cy = np.where(valid, ry - ry.sum(1, keepdims=True) / count, 0.0)
    pair = valid[:, :, None] & valid[:, None, :]
    sx = np.sign(x[:, :, None] - x[:, None, :]) * pair  # (B, O, O)
    sy = np.sign(y[:, :, None] - y[:, None, :]) * pair
    with np.errstate(invalid="ignore", divide="ignore"):
        spearman = (cx * cy).sum(1) / np.sqrt((cx ** 2).sum(1) * (cy ** 2).sum(1))
        kendall = (sx * sy).sum((1, 2)) / np.sqrt(np.abs(sx).sum((1, 2)) * np.abs(sy).sum((1, 2)))
    return RankCorrelation(np.clip(spearman, -1, 1), np.clip(kendall, -1, 1))


def evidence_rank_correlation(maps: Any, masks: Any, importance: Any) -> RankCorrelation:
    """Spearman's ρ and Kendall's τ_b between each object's density and its positive importance.

    Args:
        maps: ``(B, h, w)`` maps on the patch grid.
        masks: ``(B, O, H, W)`` bool visible-pixel masks in the model's input.
        importance: ``(B, O)`` per-object importance ``Δ`` (e.g. ``ObjectImportance.prob_drop``).

    Returns:
        :class:`RankCorrelation`; ``nan`` where fewer than two objects are visible, or the map's
        densities or the importances are all equal over them.

    Example:
        >>> masks = np.eye(4, dtype=bool).reshape(1, 4, 2, 2)  # four one-pixel objects
        >>> evidence_rank_correlation(np.array([[[4.0, 3.0], [2.0, 1.0]]]), masks, [[0.9, 0.5, 0.1, 0.0]]).spearman
        array([1.])
    """
    valid, density, weights = _compared(maps, masks, importance, 0.0)
    result = _rank_correlations(density, weights, valid)
    undefined = int(np.isnan(result.spearman).sum())
    if undefined:
        warn_undefined(f"{undefined} image(s) have fewer than two visible objects or a constant map density or "
                       "importance over them; their rank correlation is nan")
    return result


def evidence_mass_accuracy(maps: Any, masks: Any, importance: Any) -> np.ndarray:
    """``Σ_k min(d_k, w_k)``: agreement of the map's area-normalised mass shares ``d = ρ / Σρ`` with the
    model's evidence shares ``w = Δ⁺ / ΣΔ⁺`` over the visible objects (the module doc).

    Returns:
        ``(B,) float64`` in ``[0, 1]``; ``nan`` where no object has positive importance or the map
        no positive mass on the objects.
    """
    _, d, w = _compared(maps, masks, importance, 0.0)
    d_total, w_total = d.sum(1, keepdims=True), w.sum(1, keepdims=True)
    defined = (d_total[:, 0] > 0) & (w_total[:, 0] > 0)
    if not defined.all():
        warn_undefined(f"{int((~defined).sum())} image(s) have no positive importance or no positive map mass "
                       "on the objects; their evidence mass accuracy is nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.minimum(d / d_total, w / w_total).sum(1)
    return np.where(defined, np.clip(out, 0, 1), np.nan)


def top_object_agreement(maps: Any, masks: Any, importance: Any) -> np.ndarray:
    """Whether the map's densest object is the object whose removal hurts most.

    With ``T_m`` the visible objects of maximal density and ``T_Δ`` those of maximal ``Δ⁺``: the
    score is ``|T_m ∩ T_Δ| / |T_m|`` (1 or 0 without ties).

    Returns:
        ``(B,) float64`` in ``[0, 1]``; ``nan`` where no object has positive importance or the map
        no positive mass on the objects.
    """
    valid, d, w = _compared(maps, masks, importance, -np.inf)
    top_map = valid & (d == d.max(1, keepdims=True))
    top_weight = valid & (w == w.max(1, keepdims=True))
    defined = (d.max(1) > 0) & (w.max(1) > 0)
    if not defined.all():
        warn_undefined(f"{int((~defined).sum())} image(s) have no positive importance or no positive map mass "
                       "on the objects; their top-object agreement is nan")
    agree = (top_map & top_weight).sum(1) / np.maximum(top_map.sum(1), 1)
    return np.where(defined, agree, np.nan)


def evidence_oracle(masks: Any, importance: Any, *, patch_size: int) -> np.ndarray:
    """The evidence oracle: ``Δ⁺_k`` painted on each object's visible pixels, averaged over each patch.

    Args:
        masks: ``(B, O, H, W)`` bool visible-pixel masks in the model's input.
        importance: ``(B, O)`` per-object importance ``Δ``.
        patch_size: the model's patch side ``p``; ``H`` and ``W`` must be multiples of it
            (``1`` gives the pixel-resolution oracle).

    Returns:
        ``(B, H/p, W/p) float64`` maps, ``>= 0``.
    """
    regions = check_masks(masks, batch=len(np.asarray(masks)), ndim=4)
    _, _, weights = _inputs(np.zeros((len(regions), 1, 1)), regions, importance)
    patch_size = check_int("patch_size", patch_size, minimum=1)
    B, _, H, W = regions.shape
    if H % patch_size or W % patch_size:
        raise ValueError(f"patch_size={patch_size} is invalid for masks of {(H, W)} pixels; expected a divisor of both")
    painted = np.einsum("bo,bohw->bhw", np.clip(weights, 0, None), regions.astype(np.float64))  # (B, H, W)
    return painted.reshape(B, H // patch_size, patch_size, W // patch_size, patch_size).mean(axis=(2, 4))


def evidence_scores(maps: Any, masks: Any, importance: Any, *, target_object: int = 0) -> dict[str, np.ndarray]:
    """Every figure of :data:`EVIDENCE_FIGURES` per image, one call.

    Args:
        maps: ``(B, h, w)`` maps on the patch grid.
        masks: ``(B, O, H, W)`` bool visible-pixel masks in the model's input.
        importance: ``(B, O)`` per-object importance ``Δ``.
        target_object: the object whose mask the relevance mass / rank accuracy read (default 0, the target).

    Returns:
        ``{figure: (B,) float64}``.
    """
    values, regions, weights = _inputs(maps, masks, importance)
    target_object = check_int("target_object", target_object, minimum=0)
    if target_object >= regions.shape[1]:
        raise ValueError(f"target_object={target_object} is invalid; expected an object index < {regions.shape[1]}")
    ranks = evidence_rank_correlation(values, regions, weights)
    return {
        "evidence_spearman": ranks.spearman,
        "evidence_kendall": ranks.kendall,
        "evidence_mass_accuracy": evidence_mass_accuracy(values, regions, weights),
        "top_object_agreement": top_object_agreement(values, regions, weights),
        "relevance_mass_accuracy": mask_mass_share(values, regions[:, target_object]),
        "relevance_rank_accuracy": mask_rank_accuracy(values, regions[:, target_object]),
    }
