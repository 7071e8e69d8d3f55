"""Drawing maps: the colour of a value is the documented function, shared scales do not saturate."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from infsa_viz.overlay import (
    COLORMAPS,
    DIVERGING,
    colorbar,
    colour_scale,
    draw_maps,
    encode_png,
    overlay,
    overlay_grid,
    save_png,
    to_rgb,
    with_colorbar,
)


def _lut(colormap: str) -> np.ndarray:
    ramp = np.arange(256, dtype=np.uint8)[:, None]
    return cv2.applyColorMap(ramp, getattr(cv2, f"COLORMAP_{colormap.upper()}"))[:, 0, ::-1]


def _saturated_share(scale, maps) -> float:
    top = np.concatenate([scale.normalised(i, m).ravel() for i, m in enumerate(maps)])
    return float((top >= 1.0).mean())


@pytest.mark.parametrize("colormap", ["inferno", "viridis"])
def test_colour_of_a_cell_is_the_documented_function_of_its_value(colormap):
    """u = clip((v / d − vmin) / (vmax − vmin), 0, 1); colour = colormap entry round(255·u)."""
    rng = np.random.default_rng(0)
    maps = [rng.random((6, 6)), 5 * rng.random((6, 6)) - 1]
    scale = colour_scale(maps, "shared", colormap=colormap, clip=None)
    lut = _lut(colormap)
    for i, m in enumerate(maps):
        d = np.abs(m).sum()
        assert scale.divisors[i] == pytest.approx(d)
        lo, hi = scale.limits[i]
        expected = lut[np.rint(np.clip((m / d - lo) / (hi - lo), 0, 1) * 255).astype(int)]
        np.testing.assert_array_equal(scale.colorize(i, m), expected)
    both = np.concatenate([maps[0].ravel() / scale.divisors[0], maps[1].ravel() / scale.divisors[1]])
    assert scale.common_limits == (pytest.approx(both.min()), pytest.approx(both.max()))


def test_random_maps_on_a_shared_scale_are_not_saturated():
    """The app's old bug: limits from mass-normalised maps applied to raw maps saturated ~92 % of the
    cells of a random map; limits and colours now come from one object, on the same values."""
    rng = np.random.default_rng(1)
    maps = [rng.random((6, 6)), rng.random((6, 6)) * 40.0, torch.rand(6, 6, generator=torch.Generator().manual_seed(2))]
    for mode in ("shared", "raw", "per-map"):
        scale = colour_scale(maps, mode)
        assert _saturated_share(scale, maps) < 0.05, mode
    raw_limits_on_normalised = colour_scale(maps, "shared", clip=None).limits[0]  # what the old app did
    old = np.mean([(m.ravel() if isinstance(m, np.ndarray) else m.numpy().ravel()) >= raw_limits_on_normalised[1]
                   for m in maps])
    assert old > 0.9  # the defect this test guards against, measured the old way


def test_modes_raw_and_per_map():
    a, b = np.array([[0.0, 1.0]]), np.array([[2.0, 4.0]])
    raw = colour_scale([a, b], "raw", clip=None)
    assert raw.divisors == (1.0, 1.0) and raw.limits == ((0.0, 4.0), (0.0, 4.0))
    np.testing.assert_allclose(raw.normalised(1, b), [[0.5, 1.0]])
    per_map = colour_scale([a, b], "per-map", clip=None)
    assert per_map.limits == ((0.0, 1.0), (2.0, 4.0)) and per_map.common_limits is None
    flat = colour_scale([np.ones((2, 2))], "per-map")
    np.testing.assert_array_equal(flat.normalised(0, np.ones((2, 2))), 0.0)  # a constant map: low end


def test_overlay_blends_the_colour_and_draws_boxes():
    image = np.zeros((8, 8), np.uint8)
    token = np.array([[0.0, 1.0], [0.0, 0.0]])
    scale = colour_scale([token], "raw", clip=None)
    out = overlay(image, np.kron(token, np.ones((4, 4))), scale, alpha=1.0)  # already pixel-sized
    np.testing.assert_array_equal(out[0, 7], _lut("inferno")[255])
    np.testing.assert_array_equal(out[7, 0], _lut("inferno")[0])
    boxed = overlay(image, token, scale, alpha=0.0, boxes=np.array([[0, 0, 4, 4]]), zoom=2)
    assert boxed.shape == (16, 16, 3) and tuple(boxed[0, 0]) == (0, 255, 0)
    with pytest.raises(ValueError, match="alpha="):
        overlay(image, token, scale, alpha=2.0)


def test_draw_maps_grid_and_png(tmp_path):
    image = (np.random.default_rng(3).random((16, 16)) * 255).astype(np.uint8)
    maps = [torch.rand(4, 4), torch.rand(4, 4)]
    tiles, scale = draw_maps(image, maps, zoom=2)
    assert len(tiles) == 2 and tiles[0].shape == (32, 32, 3) and scale.mode == "shared"
    grid = overlay_grid(tiles, ["a", "b"], scale=scale)
    assert grid.shape[1] == 2 * (32 + 6) + 90  # two tiles and a colour bar
    assert overlay_grid(tiles, scale=colour_scale(maps, "per-map")).shape[1] == 2 * 38  # no shared bar
    path = save_png(tmp_path / "g.png", grid)
    np.testing.assert_array_equal(cv2.imread(str(path))[..., ::-1], grid)
    assert encode_png(grid)[:4] == b"\x89PNG"
    assert to_rgb(np.ones((1, 4, 4))).shape == (4, 4, 3)


@pytest.mark.parametrize(("kwargs", "match"), [({"mode": "log"}, "scale="), ({"colormap": "rainbow"}, "colormap=")])
def test_bad_options_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        colour_scale([np.zeros((2, 2))], **kwargs)
    with pytest.raises(ValueError, match="empty"):
        colour_scale([])
    assert "inferno" in COLORMAPS


def _rdbu_reference() -> np.ndarray:
    """ColorBrewer RdBu (11 classes, blue → white → red), linearly interpolated to 256 entries."""
    anchors = np.array([(5, 48, 97), (33, 102, 172), (67, 147, 195), (146, 197, 222), (209, 229, 240),
                        (247, 247, 247), (253, 219, 199), (244, 165, 130), (214, 96, 77), (178, 24, 43),
                        (103, 0, 31)], float)
    at = np.arange(256) * 10 / 255
    return np.stack([np.interp(at, np.arange(11), anchors[:, c]) for c in range(3)], -1).round().astype(np.uint8)


def test_signed_maps_are_centred_at_zero_on_a_diverging_colormap():
    """0 is white, −t the darkest blue, +t the darkest red, t the 99th percentile of |v|."""
    m = np.linspace(-2.0, 1.0, 301)[None]  # more negative mass than positive
    scale = colour_scale([m], "raw", signed=True)
    t = np.percentile(np.abs(m), 99)
    assert scale.colormap in DIVERGING and scale.signed and scale.limits[0] == (pytest.approx(-t), pytest.approx(t))
    lut = _rdbu_reference()
    probe = np.array([[0.0, t, -t, 10.0, -10.0, t / 2]])
    np.testing.assert_array_equal(scale.colorize(0, probe),
                                  lut[[128, 255, 0, 255, 0, round(255 * 0.75)]][None])
    assert scale.colorize(0, np.zeros((1, 1))).min() >= 245  # (near) white at 0, whatever the range
    flat = colour_scale([np.zeros((2, 2))], "raw", signed=True)
    np.testing.assert_array_equal(flat.normalised(0, np.zeros((2, 2))), 0.5)  # an all-zero map is all white


def test_clip_is_the_percentile_of_the_values():
    values = np.arange(100, dtype=float).reshape(10, 10)
    clipped = colour_scale([values], "raw")  # default: the 99th percentile
    assert clipped.clip == 99.0 and clipped.limits[0] == (0.0, pytest.approx(np.percentile(values, 99)))
    assert float((clipped.normalised(0, values) >= 1.0).mean()) == 0.01  # only the top value saturates
    assert colour_scale([values], "raw", clip=90).limits[0][1] == pytest.approx(np.percentile(values, 90))
    extremes = colour_scale([values], "raw", clip=100)
    assert extremes.clip is None and extremes.limits[0] == (0.0, 99.0)
    assert "99th percentile" in clipped.clipping and "no clipping" in extremes.clipping
    with pytest.raises(ValueError, match="clip="):
        colour_scale([values], clip=0)


@pytest.mark.parametrize("signed", [False, True])
def test_random_map_is_not_saturated_at_either_end(signed):
    rng = np.random.default_rng(4)
    m = rng.standard_normal((14, 14)) if signed else rng.random((14, 14))
    scale = colour_scale([m], "shared", signed=signed)
    u = scale.normalised(0, m)
    assert float(((u <= 0.0) | (u >= 1.0)).mean()) < 0.05


def test_colorbar_runs_from_the_low_to_the_high_colour_with_ticks():
    scale = colour_scale([np.array([[-1.0, 3.0]])], "raw", signed=True, clip=None)
    bar = colorbar(scale, 0, 200)
    lut = _rdbu_reference()
    assert bar.shape[1] == 200 and bar.dtype == np.uint8
    np.testing.assert_array_equal(bar[5, 6], lut[0])  # left end of the ramp: −t
    np.testing.assert_array_equal(bar[5, 193], lut[255])  # right end: +t
    np.testing.assert_array_equal(bar[5, 100], lut[128])  # the middle: 0
    assert (bar[20:, :] < 128).any()  # tick labels and the unit line are drawn
    tile = np.zeros((50, 200, 3), np.uint8)
    stacked = with_colorbar(tile, scale)
    assert stacked.shape == (50 + bar.shape[0], 200, 3)
    np.testing.assert_array_equal(stacked[50:], bar)
    with pytest.raises(ValueError, match="width="):
        colorbar(scale, 0, 10)


def test_map_contrast_is_the_range_over_the_largest_value_and_flags_flat_maps():
    from infsa_viz.overlay import FLAT_CONTRAST, map_contrast

    assert map_contrast(np.full((4, 4), 0.3)) == 0.0
    assert map_contrast(np.array([[0.0, 2.0], [1.0, 0.5]])) == 1.0
    assert map_contrast(np.array([[-1.0, 1.0]])) == 2.0  # signed: up to 2
    near_uniform = np.array([[0.0153, 0.0159], [0.0155, np.nan]])  # the random map
    assert abs(map_contrast(near_uniform) - 0.0006 / 0.0159) < 1e-12 and map_contrast(near_uniform) < FLAT_CONTRAST
    assert np.isnan(map_contrast(np.zeros((2, 2)))) and np.isnan(map_contrast(np.full((2, 2), np.nan)))
    assert map_contrast(torch.tensor([[0.0, 4.0]])) == 1.0 and isinstance(map_contrast(np.ones((1, 2))), float)
