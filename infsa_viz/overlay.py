"""Overlays of maps on images with OpenCV colormaps and a shared colour scale.

Comparing maps by eye is only fair when they share one colour scale (Captum issue #1103 asks
for exactly this): :func:`color_limits` computes one ``(vmin, vmax)`` for a set of maps, or one per
map, and :func:`overlay_grid` renders them side by side with a colour bar.

Maps of different methods live on different scales (probabilities, visit counts, logit drops),
so the default shared scale is taken after each map is divided by its own sum of absolute
values ("mass" normalisation): the colour then shows where each map puts its mass. ``"raw"``
shares the raw values (meaningful for maps of one method), ``"per-map"`` stretches each map.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Sequence

import numpy as np
import torch

from .io import atomic_write

__all__ = [
    "COLORMAPS",
    "color_limits",
    "encode_png",
    "normalise_for_display",
    "overlay",
    "overlay_grid",
    "save_png",
    "to_rgb",
]

Scale = Literal["shared", "raw", "per-map"]

#: Names accepted for ``colormap`` → OpenCV constants (resolved lazily).
COLORMAPS = ("inferno", "jet", "viridis", "magma", "turbo", "hot")

BOX_TARGET = (0, 255, 0)
BOX_DISTRACTOR = (255, 64, 64)


def _cv2():
    import cv2

    return cv2


def _np(x) -> np.ndarray:
    return x.detach().cpu().float().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, dtype=np.float32)


def normalise_for_display(maps: Sequence, scale: Scale = "shared") -> list[np.ndarray]:
    """Maps as float arrays, divided by their absolute mass when ``scale="shared"``."""
    if scale not in ("shared", "raw", "per-map"):
        raise ValueError(f"scale={scale!r} must be one of ['shared', 'raw', 'per-map']")
    out = []
    for m in maps:
        a = _np(m)
        if scale == "shared":
            mass = np.abs(a).sum()
            a = a / mass if mass > 0 else a
        out.append(a)
    return out


def color_limits(maps: Sequence, scale: Scale = "shared") -> list[tuple[float, float]]:
    """``(vmin, vmax)`` per map: one common pair (``shared``/``raw``) or each map's own range."""
    arrays = normalise_for_display(maps, scale)
    if scale == "per-map":
        return [(float(a.min()), float(a.max())) for a in arrays]
    lo = min(float(a.min()) for a in arrays)
    hi = max(float(a.max()) for a in arrays)
    return [(lo, hi)] * len(arrays)


def to_rgb(image) -> np.ndarray:
    """An image ``(H, W)``, ``(1|3, H, W)`` or ``(H, W, 1|3)`` in [0, 1] or uint8 → uint8 RGB."""
    a = _np(image) if not (isinstance(image, np.ndarray) and image.dtype == np.uint8) else image
    if a.ndim == 3 and a.shape[0] in (1, 3) and a.shape[-1] not in (1, 3):
        a = np.moveaxis(a, 0, -1)
    if a.ndim == 3 and a.shape[-1] == 1:
        a = a[..., 0]
    if a.dtype != np.uint8:
        a = (np.clip(a, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    return np.repeat(a[..., None], 3, axis=-1) if a.ndim == 2 else a


def _colorize(values01: np.ndarray, colormap: str) -> np.ndarray:
    cv2 = _cv2()
    if colormap not in COLORMAPS:
        raise ValueError(f"colormap={colormap!r} must be one of {list(COLORMAPS)}")
    code = getattr(cv2, f"COLORMAP_{colormap.upper()}")
    bgr = cv2.applyColorMap((np.clip(values01, 0, 1) * 255).astype(np.uint8), code)
    return bgr[..., ::-1]


def overlay(
    image,
    token_map,
    *,
    limits: tuple[float, float] | None = None,
    alpha: float = 0.5,
    colormap: str = "inferno",
    boxes: np.ndarray | None = None,
    distractor_boxes: np.ndarray | None = None,
    scale: int = 1,
) -> np.ndarray:
    """Blend a map (upsampled bilinearly to the image) over the image; draw boxes.

    Args:
        image: the image (see :func:`to_rgb`).
        token_map: ``(h, w)`` map on the patch grid (or already ``(H, W)``).
        limits: colour range ``(vmin, vmax)``; default the map's own range.
        alpha: map opacity in [0, 1].
        colormap: one of :data:`COLORMAPS`.
        boxes: target boxes ``(K, 4)`` ``(x0, y0, x1, y1)``, x1/y1 exclusive (drawn green).
        distractor_boxes: other boxes (drawn red).
        scale: integer upscaling of the output for display (nearest for the image grid).

    Returns:
        ``(H·scale, W·scale, 3)`` uint8 RGB.
    """
    from .metrics import upsample_map

    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha={alpha!r} must lie in [0, 1]")
    rgb = to_rgb(image)
    H, W = rgb.shape[:2]
    m = _np(token_map)
    pixel = upsample_map(m[None], (H, W))[0]
    lo, hi = limits if limits is not None else (float(m.min()), float(m.max()))
    values = (pixel - lo) / (hi - lo) if hi > lo else np.zeros_like(pixel)
    heat = _colorize(values, colormap)
    out = (rgb.astype(np.float32) * (1 - alpha) + heat.astype(np.float32) * alpha).astype(np.uint8)
    if scale > 1:
        out = np.repeat(np.repeat(out, scale, 0), scale, 1)
    cv2 = _cv2()
    for group, color in ((distractor_boxes, BOX_DISTRACTOR), (boxes, BOX_TARGET)):
        if group is None:
            continue
        for x0, y0, x1, y1 in np.asarray(group).reshape(-1, 4):
            cv2.rectangle(out, (int(x0 * scale), int(y0 * scale)),
                          (int(x1 * scale) - 1, int(y1 * scale) - 1), color, max(1, scale // 3))
    return np.ascontiguousarray(out)


def _colorbar(height: int, lo: float, hi: float, colormap: str) -> np.ndarray:
    cv2 = _cv2()
    ramp = np.linspace(1, 0, height, dtype=np.float32)[:, None].repeat(16, 1)
    bar = np.full((height, 90, 3), 255, np.uint8)
    bar[:, :16] = _colorize(ramp, colormap)
    for y, value in ((12, hi), (height - 4, lo)):
        cv2.putText(bar, f"{value:.3g}", (20, y), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (0, 0, 0), 1, cv2.LINE_AA)
    return bar


def overlay_grid(
    tiles: Sequence[np.ndarray],
    titles: Sequence[str] | None = None,
    *,
    ncols: int | None = None,
    colorbar: tuple[float, float] | None = None,
    colormap: str = "inferno",
) -> np.ndarray:
    """Tiles side by side (row-major, ``ncols`` per row) with titles and an optional colour bar."""
    cv2 = _cv2()
    if not tiles:
        raise ValueError("tiles is empty; nothing to draw")
    th, tw = tiles[0].shape[:2]
    ncols = ncols or len(tiles)
    nrows = -(-len(tiles) // ncols)
    title_h = 22 if titles else 0
    grid = np.full((nrows * (th + title_h + 6), ncols * (tw + 6), 3), 255, np.uint8)
    for i, tile in enumerate(tiles):
        r, c = divmod(i, ncols)
        y, x = r * (th + title_h + 6) + title_h, c * (tw + 6)
        grid[y : y + th, x : x + tw] = cv2.resize(tile, (tw, th), interpolation=cv2.INTER_NEAREST)
        if titles:
            cv2.putText(grid, str(titles[i])[: max(8, tw // 8)], (x + 2, y - 6), cv2.FONT_HERSHEY_SIMPLEX,
                        0.45, (0, 0, 0), 1, cv2.LINE_AA)
    if colorbar is not None:
        grid = np.concatenate([grid, _colorbar(grid.shape[0], *colorbar, colormap)], axis=1)
    return grid


def save_png(path: str | Path, rgb: np.ndarray) -> Path:
    """Write an RGB uint8 image as PNG, atomically."""
    return atomic_write(path, encode_png(rgb))


def encode_png(rgb: np.ndarray) -> bytes:
    """PNG bytes of an RGB uint8 image (for downloads)."""
    cv2 = _cv2()
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(rgb[..., ::-1]))
    if not ok:
        raise ValueError(f"could not encode an image of shape {rgb.shape} as PNG")
    return buf.tobytes()
