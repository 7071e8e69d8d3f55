"""Where a map puts its mass: energy-based pointing game, relevance mass and rank accuracy (against
boxes or pixel masks), complexity.

Maps are spread to pixels with ``"nearest"`` (each patch's value on each of its pixels), so a
map's mass inside a box or mask is the patches' values weighted by the share of their pixels in it.
Undefined values (no box, a map without positive mass) are ``nan`` with an
:class:`UndefinedMetricWarning`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._checks import as_image_size, check_boxes, check_maps, check_masks, warn_undefined
from .upsample import _resize, _union_mask

__all__ = ["box_mass_share", "complexity", "energy_pointing_game", "mask_mass_share", "mask_rank_accuracy",
           "relevance_rank_accuracy"]


def _pixels(maps: Any, boxes: Any, image_size: Any) -> tuple[np.ndarray, np.ndarray]:
    values = check_maps(maps)
    size = as_image_size(image_size)
    masks = np.stack([_union_mask(b, size) for b in check_boxes(boxes, batch=values.shape[0])])
    return _upsampled(values, size), masks


def _upsampled(values: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``(B, h, w)`` validated maps → ``(B, H, W) float64``, each patch's value on each of its pixels."""
    return _resize(values.astype(np.float32), size, "nearest").astype(np.float64)


def _mass_share(pixels: np.ndarray, masks: np.ndarray, region: str) -> np.ndarray:
    """``Σ_{p∈mask} m_p⁺ / Σ_p m_p⁺`` per image of ``(B, H, W)`` pixel maps and bool masks."""
    out = np.full(len(pixels), np.nan)
    for i, (m, mask) in enumerate(zip(pixels, masks, strict=True)):
        positive = np.clip(m, 0, None)
        total = positive.sum()
        if mask.any() and total > 0:
            out[i] = positive[mask].sum() / total
    if np.isnan(out).any():
        warn_undefined(f"{int(np.isnan(out).sum())} image(s) have no {region} or no positive map mass; their share is nan")
    return out


def _rank_accuracy(pixels: np.ndarray, masks: np.ndarray, region: str) -> np.ndarray:
    """Share of the ``K = |mask|`` highest pixels inside the mask, ties by expectation (see
    :func:`relevance_rank_accuracy`)."""
    out = np.full(len(pixels), np.nan)
    for i, (m, mask) in enumerate(zip(pixels, masks, strict=True)):
        K = int(mask.sum())
        if K == 0 or K == mask.size:
            continue
        values = m.ravel()
        inside = mask.ravel()
        kth = np.sort(values)[::-1][K - 1]
        above = values > kth
        tied = values == kth
        places = K - int(above.sum())  # tied places left in the top K
        out[i] = (inside[above].sum() + places * inside[tied].mean()) / K
    if np.isnan(out).any():
        warn_undefined(f"{int(np.isnan(out).sum())} image(s) have no {region} or a {region} covering the image; nan")
    return out


def _mask_pixels(maps: Any, masks: Any) -> tuple[np.ndarray, np.ndarray]:
    values = check_maps(maps)
    regions = check_masks(masks, batch=values.shape[0])
    return _upsampled(values, regions.shape[1:]), regions


def box_mass_share(maps: Any, boxes: Any, *, image_size: int | tuple[int, int]) -> np.ndarray:
    """Share of each map's positive mass inside the boxes: ``Σ_{p∈box} m_p⁺ / Σ_p m_p⁺``.

    This is the energy-based pointing game of Wang et al. (Score-CAM, CVPRW 2020).

    Args:
        maps: ``(B, h, w)`` maps on the patch grid.
        boxes: per image ``(K_i, 4)`` boxes ``(x0, y0, x1, y1)`` in pixels (``x1``, ``y1`` exclusive).
        image_size: ``(H, W)`` of the image the boxes refer to.

    Returns:
        ``(B,) float64`` in ``[0, 1]``; ``nan`` where the boxes are empty or the map has no
        positive mass.
    """
    return _mass_share(*_pixels(maps, boxes, image_size), "box")


def mask_mass_share(maps: Any, masks: Any) -> np.ndarray:
    """Share of each map's positive mass on a pixel mask: ``Σ_{p∈mask} m_p⁺ / Σ_p m_p⁺``.

    With the target object's pixel mask this is the relevance mass accuracy of CLEVR-XAI
    (Arras, Osman & Samek, Information Fusion 2022); :func:`box_mass_share` is its box form.

    Args:
        maps: ``(B, h, w)`` maps on the patch grid, spread to the masks' pixels as in the module doc.
        masks: ``(B, H, W)`` bool masks in the pixels of the model's input.

    Returns:
        ``(B,) float64`` in ``[0, 1]``; ``nan`` where the mask is empty or the map has no positive mass.
    """
    return _mass_share(*_mask_pixels(maps, masks), "mask")


def energy_pointing_game(maps: Any, boxes: Any, *, image_size: int | tuple[int, int]) -> np.ndarray:
    """Energy-based pointing game (Wang et al. 2020): :func:`box_mass_share` of the target boxes."""
    return box_mass_share(maps, boxes, image_size=image_size)


def relevance_rank_accuracy(maps: Any, boxes: Any, *, image_size: int | tuple[int, int]) -> np.ndarray:
    """Relevance rank accuracy (Arras, Osman & Samek, Information Fusion 2022).

    With ``K`` the number of box pixels: the share of the ``K`` highest-valued pixels that lie in
    the box. Ties at the ``K``-th value are counted by expectation (each tied pixel counts the
    share of the tied places left), so the score does not depend on a pixel order.

    Returns:
        ``(B,) float64`` in ``[0, 1]``; ``nan`` for an image without box pixels.
    """
    return _rank_accuracy(*_pixels(maps, boxes, image_size), "box")


def mask_rank_accuracy(maps: Any, masks: Any) -> np.ndarray:
    """Relevance rank accuracy (Arras, Osman & Samek 2022) against a pixel mask: with ``K = |mask|``,
    the share of the ``K`` highest-valued pixels that lie in the mask (ties by expectation, as
    :func:`relevance_rank_accuracy`). With the target object's mask this is CLEVR-XAI's definition.

    Args:
        maps: ``(B, h, w)`` maps on the patch grid.
        masks: ``(B, H, W)`` bool masks in the pixels of the model's input.

    Returns:
        ``(B,) float64`` in ``[0, 1]``; ``nan`` for an empty mask or one covering the image.
    """
    return _rank_accuracy(*_mask_pixels(maps, masks), "mask")


def complexity(maps: Any) -> np.ndarray:
    """Entropy (nats) of the normalised absolute map ``p = |m| / Σ|m|`` over patches (Bhatt et al.,
    IJCAI 2020); lower = more concentrated. ``0`` for one patch, ``log(h·w)`` for a flat map,
    ``nan`` for an all-zero map.
    """
    values = np.abs(check_maps(maps)).reshape(len(check_maps(maps)), -1)
    total = values.sum(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = values / total
        terms = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    out = terms.sum(1)
    out[total[:, 0] == 0] = math.nan
    return out
