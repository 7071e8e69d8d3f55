"""Drawing maps on images: one colour scale object, one colouring function, OpenCV colormaps.

Comparing maps by eye is only fair when they share one colour scale (Captum issue #1103 asks
for exactly this). :func:`colour_scale` decides, for a set of maps drawn together, what each
map is divided by and which ``(vmin, vmax)`` its values span; :meth:`ColourScale.colorize` is
the one function from a map value to a colour, and every overlay (CLI, app, examples) goes
through it, so the limits always apply to the values they were computed on.

Modes:

* ``"shared"`` (default): each map is divided by its own absolute mass ``Σ|m|`` and all maps
  share one ``(vmin, vmax)``: the colour shows where each map puts its mass, comparable across
  methods whose raw units differ (probabilities, visit counts, logit drops).
* ``"raw"``: raw values on one common scale (meaningful for maps of one method).
* ``"per-map"``: each map stretched to its own range.

Signed maps (``MapMethod.signed``: gradients × input, occlusion, integrated gradients) are drawn
on a diverging colormap centred at 0 (:data:`DIVERGING`), limits ``(−t, t)``; non-negative maps
on a sequential one. Outliers are clipped as Captum's ``visualize_image_attr`` does
(``outlier_perc``): the upper limit ``t`` is the ``clip``-th percentile (default 99) of the
values (of ``|v|`` for signed maps), so one hot cell does not turn every other cell dark.

Colour of a value ``v`` of map ``i``: ``u = clip((v / d_i − vmin_i) / (vmax_i − vmin_i), 0, 1)``
(``u = 0`` when ``vmax_i = vmin_i``; ``u = 0.5`` for a signed scale), then the colormap's entry
``round(255·u)`` of a 256-entry lookup table (OpenCV's for the sequential maps).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
import torch

from .io import atomic_write

__all__ = [
    "COLORMAPS",
    "DIVERGING",
    "FLAT_CONTRAST",
    "SCALES",
    "SEQUENTIAL",
    "ColourScale",
    "colorbar",
    "colour_scale",
    "draw_maps",
    "encode_png",
    "map_contrast",
    "overlay",
    "overlay_grid",
    "save_png",
    "to_rgb",
    "with_colorbar",
]

Scale = Literal["shared", "raw", "per-map"]
SCALES: tuple[str, ...] = get_args(Scale)

#: Sequential colormaps (OpenCV's, resolved lazily), for non-negative maps.
SEQUENTIAL = ("inferno", "viridis", "magma", "turbo", "hot", "jet")
#: Diverging colormaps centred at 0, for signed maps: ``"rdbu"`` is ColorBrewer's RdBu
#: (blue negative, white 0, red positive), interpolated linearly between its 11 classes.
DIVERGING = ("rdbu",)
#: Every name accepted for ``colormap``.
COLORMAPS = SEQUENTIAL + DIVERGING
#: Default percentile of the upper colour limit (Captum's ``outlier_perc=1``).
DEFAULT_CLIP = 99.0

_RDBU = np.array([(5, 48, 97), (33, 102, 172), (67, 147, 195), (146, 197, 222), (209, 229, 240), (247, 247, 247),
                  (253, 219, 199), (244, 165, 130), (214, 96, 77), (178, 24, 43), (103, 0, 31)], np.float64)

BOX_TARGET = (0, 255, 0)
BOX_DISTRACTOR = (255, 64, 64)


def _cv2():
    import cv2

    return cv2


def _np(x: Any) -> np.ndarray:
    return x.detach().cpu().double().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, dtype=np.float64)


def _lookup_table(colormap: str) -> np.ndarray:
    """The colormap's 256 RGB entries ``(256, 3) uint8``."""
    if colormap not in COLORMAPS:
        raise ValueError(f"colormap={colormap!r} must be one of {list(COLORMAPS)}")
    if colormap == "rdbu":
        at = np.linspace(0, len(_RDBU) - 1, 256)
        return np.stack([np.interp(at, np.arange(len(_RDBU)), _RDBU[:, c]) for c in range(3)], -1).round().astype(np.uint8)
    cv2 = _cv2()
    ramp = np.arange(256, dtype=np.uint8)[:, None]  # (256, 1)
    return cv2.applyColorMap(ramp, getattr(cv2, f"COLORMAP_{colormap.upper()}"))[:, 0, ::-1].copy()


@dataclass(frozen=True)
class ColourScale:
    """How the values of a set of maps become colours.

    Attributes:
        mode: ``"shared"``, ``"raw"`` or ``"per-map"``.
        divisors: per map, what its values are divided by first (its absolute mass for
            ``"shared"``, 1 otherwise).
        limits: per map, ``(vmin, vmax)`` of the divided values.
        colormap: one of :data:`COLORMAPS`.
        signed: the limits are ``(−t, t)``, centred at 0 (a diverging colormap).
        clip: the percentile the upper limit was taken at (``None``: the maximum).
    """

    mode: str
    divisors: tuple[float, ...]
    limits: tuple[tuple[float, float], ...]
    colormap: str = "inferno"
    signed: bool = False
    clip: float | None = None

    @property
    def common_limits(self) -> tuple[float, float] | None:
        """The one ``(vmin, vmax)`` all maps share, or ``None`` for ``"per-map"``."""
        return None if self.mode == "per-map" else self.limits[0]

    @property
    def unit(self) -> str:
        """What the colour-bar numbers are."""
        return {"shared": "share of the map's absolute mass", "raw": "map value",
                "per-map": "map value (own range)"}[self.mode]

    @property
    def clipping(self) -> str:
        """How the upper limit was chosen, in words."""
        of = "|value|" if self.signed else "value"
        return "no clipping (limits are the extremes)" if self.clip is None else \
            f"clipped at the {self.clip:g}th percentile of {of}"

    def normalised(self, index: int, values: Any) -> np.ndarray:
        """Values of map ``index`` on ``[0, 1]``: ``clip((v / d − vmin) / (vmax − vmin), 0, 1)``."""
        lo, hi = self.limits[index]
        v = _np(values) / self.divisors[index]
        if not hi > lo:
            return np.full_like(v, 0.5 if self.signed else 0.0)
        return np.clip(np.nan_to_num((v - lo) / (hi - lo), nan=0.0), 0.0, 1.0)

    def colorize(self, index: int, values: Any) -> np.ndarray:
        """RGB uint8 ``(..., 3)`` of map ``index``'s values: the colormap entry ``round(255·u)``."""
        entry = np.rint(self.normalised(index, values) * 255.0).astype(np.int64)
        return _lookup_table(self.colormap)[entry]


def colour_scale(maps: Sequence[Any], mode: Scale = "shared", *, colormap: str | None = None,
                 signed: bool = False, clip: float | None = DEFAULT_CLIP) -> ColourScale:
    """The colour scale of ``maps`` (each ``(h, w)`` or ``(H, W)``) drawn together.

    Args:
        maps: the maps drawn together.
        mode: ``"shared"``, ``"raw"`` or ``"per-map"`` (module docstring).
        colormap: default ``"inferno"``, or ``"rdbu"`` when ``signed``.
        signed: centre the scale at 0: limits ``(−t, t)`` with ``t`` the ``clip``-th percentile of
            ``|v|`` (for maps whose values can be negative, ``MapMethod.signed``).
        clip: percentile in ``(0, 100]`` of the upper limit (lower limit: the minimum, or ``−t``);
            ``None`` or 100 for the extremes. Default 99 (Captum clips its top 1 %).

    Non-finite values are ignored for the limits (and drawn at the low end).

    Raises:
        ValueError: unknown ``mode`` or ``colormap``, ``clip`` outside ``(0, 100]``, or no maps.
    """
    if mode not in SCALES:
        raise ValueError(f"scale={mode!r} must be one of {list(SCALES)}")
    if clip is not None and not (isinstance(clip, (int, float)) and 0 < clip <= 100):
        raise ValueError(f"clip={clip!r} must be a percentile in (0, 100] or None")
    clip = None if clip is None or clip == 100 else float(clip)
    colormap = colormap or ("rdbu" if signed else "inferno")
    _lookup_table(colormap)
    arrays = [_np(m) for m in maps]
    if not arrays:
        raise ValueError("maps is empty; nothing to draw")
    divisors = []
    for a in arrays:
        mass = float(np.abs(a[np.isfinite(a)]).sum())
        divisors.append(mass if mode == "shared" and mass > 0 else 1.0)
    values = [a[np.isfinite(a)] / d for a, d in zip(arrays, divisors)]
    if mode == "per-map":
        ranges = [_limits(v, signed, clip) for v in values]
    else:
        ranges = [_limits(np.concatenate([v.ravel() for v in values]), signed, clip)] * len(arrays)
    return ColourScale(mode=mode, divisors=tuple(divisors), limits=tuple(ranges), colormap=colormap,
                       signed=signed, clip=clip)


#: A map whose :func:`map_contrast` is below this is *flat*: stretched to its own range (a per-map
#: scale) its noise fills the whole colormap and looks like structure, so readers flag it.
FLAT_CONTRAST = 0.05


def map_contrast(token_map: Any) -> float:
    """How much a map varies against its size: ``(max − min) / max |v|`` over its finite values.

    0 for a constant map, 1 for a non-negative map that reaches 0, up to 2 for a signed map;
    ``nan`` (with no warning) for a map with no finite or only zero values. A near-uniform map
    (values 0.0153–0.0159: 0.038) is below :data:`FLAT_CONTRAST`.

    Example:
        >>> round(map_contrast(np.array([[0.0153, 0.0159]])), 3)
        0.038
    """
    values = _np(token_map)
    values = values[np.isfinite(values)]
    if not values.size:
        return float("nan")
    top = float(np.abs(values).max())
    return float("nan") if top == 0 else float((values.max() - values.min()) / top)


def _limits(values: np.ndarray, signed: bool, clip: float | None) -> tuple[float, float]:
    """``(vmin, vmax)`` of finite ``values``: ``(−t, t)`` when signed, else ``(min, t)``."""
    if not values.size:
        return (0.0, 0.0)
    if signed:
        t = float(np.abs(values).max() if clip is None else np.percentile(np.abs(values), clip))
        return (-t, t)
    lo = float(values.min())
    return (lo, max(lo, float(values.max() if clip is None else np.percentile(values, clip))))


def _text(image: np.ndarray, text: str, origin: tuple[int, int], size: float, align: str = "left") -> None:
    cv2 = _cv2()
    (w, _), _ = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, size, 1)
    x = origin[0] - {"left": 0, "centre": w // 2, "right": w}[align]
    cv2.putText(image, text, (max(0, x), origin[1]), cv2.FONT_HERSHEY_SIMPLEX, size, (0, 0, 0), 1, cv2.LINE_AA)


def colorbar(scale: ColourScale, index: int = 0, width: int = 288, *, label: str | None = None) -> np.ndarray:
    """A horizontal colour bar of map ``index`` of ``scale``: ``(h, width, 3)`` uint8 RGB.

    The ramp runs from ``vmin`` (left) to ``vmax`` (right), ticks at both ends (and 0 when signed),
    and a line of text under it: ``label`` (default: the scale's unit and clipping). Numbers are
    the divided values (:attr:`ColourScale.unit`), the limits the colours were drawn with.
    """
    if width < 64:
        raise ValueError(f"width={width!r} must be at least 64 pixels")
    lo, hi = scale.limits[index]
    font = 0.38 if width < 240 else 0.42
    pad, ramp_h = 6, 12
    bar = np.full((ramp_h + 40, width, 3), 255, np.uint8)
    ramp = np.linspace(0.0, 1.0, width - 2 * pad)
    bar[2 : 2 + ramp_h, pad : width - pad] = _lookup_table(scale.colormap)[np.rint(ramp * 255).astype(np.int64)][None]
    ticks = [(pad, lo, "left"), (width - pad, hi, "right")]
    if scale.signed:
        ticks.append((width // 2, 0.0, "centre"))
    for x, value, align in ticks:
        bar[2 + ramp_h : 6 + ramp_h, max(0, x - 1) : x + 1] = 0
        _text(bar, f"{value:.3g}", (x, ramp_h + 18), font, align)
    _text(bar, label if label is not None else f"{scale.unit}; {scale.clipping}", (pad, ramp_h + 34),
          font * 0.9)
    return bar


def with_colorbar(tile: np.ndarray, scale: ColourScale, index: int = 0, *, label: str | None = None) -> np.ndarray:
    """``tile`` with its :func:`colorbar` underneath (one image, so they scale together)."""
    return np.concatenate([tile, colorbar(scale, index, tile.shape[1], label=label)], axis=0)


def to_rgb(image: Any) -> np.ndarray:
    """An image ``(H, W)``, ``(1|3, H, W)`` or ``(H, W, 1|3)`` in [0, 1] or uint8 → uint8 RGB."""
    a = image if isinstance(image, np.ndarray) and image.dtype == np.uint8 else _np(image)
    if a.ndim == 3 and a.shape[0] in (1, 3) and a.shape[-1] not in (1, 3):
        a = np.moveaxis(a, 0, -1)
    if a.ndim == 3 and a.shape[-1] == 1:
        a = a[..., 0]
    if a.dtype != np.uint8:
        a = (np.clip(a, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    return np.repeat(a[..., None], 3, axis=-1) if a.ndim == 2 else a


def overlay(image: Any, token_map: Any, scale: ColourScale, index: int = 0, *, alpha: float = 0.5,
            boxes: Any = None, distractor_boxes: Any = None, zoom: int = 1) -> np.ndarray:
    """Blend map ``index`` of ``scale`` (upsampled bilinearly to the image) over the image; draw boxes.

    Args:
        image: the image (see :func:`to_rgb`).
        token_map: ``(h, w)`` map on the patch grid (or already ``(H, W)``).
        scale: the :class:`ColourScale` of the maps drawn together (:func:`colour_scale`).
        index: which of the scale's maps ``token_map`` is.
        alpha: map opacity in [0, 1].
        boxes: target boxes ``(K, 4)`` ``(x0, y0, x1, y1)``, x1/y1 exclusive (drawn green).
        distractor_boxes: other boxes (drawn red).
        zoom: integer upscaling of the output for display (nearest for the image grid).

    Returns:
        ``(H·zoom, W·zoom, 3)`` uint8 RGB.
    """
    from .metrics import upsample_map

    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha={alpha!r} must lie in [0, 1]")
    rgb = to_rgb(image)
    H, W = rgb.shape[:2]
    pixel = upsample_map(_np(token_map)[None].astype(np.float32), (H, W))[0]
    heat = scale.colorize(index, pixel)
    out = (rgb.astype(np.float32) * (1 - alpha) + heat.astype(np.float32) * alpha + 0.5).astype(np.uint8)
    if zoom > 1:
        out = np.repeat(np.repeat(out, zoom, 0), zoom, 1)
    cv2 = _cv2()
    for group, color in ((distractor_boxes, BOX_DISTRACTOR), (boxes, BOX_TARGET)):
        if group is None:
            continue
        for x0, y0, x1, y1 in np.asarray(group).reshape(-1, 4):
            cv2.rectangle(out, (int(x0 * zoom), int(y0 * zoom)),
                          (int(x1 * zoom) - 1, int(y1 * zoom) - 1), color, max(1, zoom // 3))
    return np.ascontiguousarray(out)


def draw_maps(image: Any, maps: Sequence[Any], *, scale: Scale = "shared", colormap: str | None = None,
              alpha: float = 0.5, boxes: Any = None, distractor_boxes: Any = None, zoom: int = 1,
              signed: bool = False, clip: float | None = DEFAULT_CLIP) -> tuple[list[np.ndarray], ColourScale]:
    """Overlay each of ``maps`` on ``image`` on one :func:`colour_scale`; ``(tiles, scale)``."""
    colours = colour_scale(maps, scale, colormap=colormap, signed=signed, clip=clip)
    tiles = [overlay(image, m, colours, i, alpha=alpha, boxes=boxes, distractor_boxes=distractor_boxes, zoom=zoom)
             for i, m in enumerate(maps)]
    return tiles, colours


def _colorbar(height: int, scale: ColourScale) -> np.ndarray:
    cv2 = _cv2()
    lo, hi = scale.common_limits  # type: ignore[misc]
    ramp = np.linspace(1, 0, height)[:, None].repeat(16, 1)
    bar = np.full((height, 90, 3), 255, np.uint8)
    bar[:, :16] = _lookup_table(scale.colormap)[np.rint(ramp * 255).astype(np.int64)]
    for y, value in ((12, hi), (height - 4, lo)):
        cv2.putText(bar, f"{value:.3g}", (20, y), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (0, 0, 0), 1, cv2.LINE_AA)
    return bar


def overlay_grid(tiles: Sequence[np.ndarray], titles: Sequence[str] | None = None, *, ncols: int | None = None,
                 scale: ColourScale | None = None) -> np.ndarray:
    """Tiles side by side (row-major, ``ncols`` per row) with titles, and a colour bar when the
    tiles share one scale (``scale`` not ``"per-map"``)."""
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
    if scale is not None and scale.common_limits is not None:
        grid = np.concatenate([grid, _colorbar(grid.shape[0], scale)], axis=1)
    return grid


def encode_png(rgb: np.ndarray) -> bytes:
    """PNG bytes of an RGB uint8 image (for downloads)."""
    cv2 = _cv2()
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(rgb[..., ::-1]))
    if not ok:
        raise ValueError(f"could not encode an image of shape {rgb.shape} as PNG")
    return buf.tobytes()


def save_png(path: str | Path, rgb: np.ndarray) -> Path:
    """Write an RGB uint8 image as PNG, atomically."""
    return atomic_write(path, encode_png(rgb))
