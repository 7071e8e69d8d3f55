"""Where a map puts its mass: energy-based pointing game, relevance rank accuracy, complexity.

Maps are spread to pixels with ``"nearest"`` (each patch's value on each of its pixels), so a
map's mass inside a box is the patches' values weighted by the share of their pixels in the box.
Undefined values (no box, a map without positive mass) are ``nan`` with an
:class:`UndefinedMetricWarning`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._checks import as_image_size, check_boxes, check_maps, warn_undefined
from .upsample import _resize, _union_mask

__all__ = ["box_mass_share", "complexity", "energy_pointing_game", "relevance_rank_accuracy"]


def _pixels(maps: Any, boxes: Any, image_size: Any) -> tuple[np.ndarray, list[np.ndarray]]:
    values = check_maps(maps)
    size = as_image_size(image_size)
    masks = [_union_mask(b, size) for b in check_boxes(boxes, batch=values.shape[0])]
    return _resize(values.astype(np.float32), size, "nearest").astype(np.float64), masks


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
    pixels, masks = _pixels(maps, boxes, image_size)
    out = np.full(len(pixels), np.nan)
    for i, (m, mask) in enumerate(zip(pixels, masks, strict=True)):
        positive = np.clip(m, 0, None)
        total = positive.sum()
        if mask.any() and total > 0:
            out[i] = positive[mask].sum() / total
    if np.isnan(out).any():
        warn_undefined(f"{int(np.isnan(out).sum())} image(s) have no box or no positive map mass; their share is nan")
    return out


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
    pixels, masks = _pixels(maps, boxes, image_size)
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
        warn_undefined(f"{int(np.isnan(out).sum())} image(s) have no box or a box covering the image; nan")
    return out


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
