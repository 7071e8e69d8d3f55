"""``app/draw.py`` and ``app/exports.py``: overlays, colour bars as page elements, the lines and
tables beside them, and the downloads."""

from __future__ import annotations

import io
import math
import re

import cv2
import numpy as np

from infsa_viz.overlay import BOX_DISTRACTOR, BOX_TARGET, colour_scale


def _decode(png: bytes) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)[..., ::-1]


def _view(app, display, boxes=((8, 8, 24, 24),), negatives=((30, 30, 40, 40),)):
    rng = np.random.default_rng(0)
    return app.compute.MapView(map=rng.random((6, 6)), options={}, metadata={}, target=None, validity=None,
                               display=display, boxes=np.array(boxes), negative_boxes=np.array(negatives))


def test_tiles_follow_opacity_and_boxes(app):
    """Opacity 0 shows the model's input pixels (zoomed, nearest), opacity 1 only the map's colours;
    boxes are drawn in the documented colours only when asked."""
    display = np.random.default_rng(1).integers(0, 256, (48, 48), dtype=np.uint8)
    view = _view(app, display)
    entry = app.catalog.ModelEntry("/m", "m", 0, "infsa-viz")
    zoom = app.draw.DISPLAY_PX // 48

    plain, _ = app.draw.tiles(app.draw.Display(alpha=0.0, show_boxes=False), "attention", [(entry, view)])
    tile = _decode(plain["/m"])
    assert tile.shape == (48 * zoom, 48 * zoom, 3)  # the overlay only: its colour bar is a page element
    np.testing.assert_array_equal(tile, np.repeat(np.repeat(display, zoom, 0), zoom, 1)[..., None].repeat(3, -1))

    heat, scale = app.draw.tiles(app.draw.Display(alpha=1.0, show_boxes=False), "attention", [(entry, view)])
    top = scale.limits[0][1] * scale.divisors[0]  # colorize reads raw map values
    colours = scale.colorize(0, np.linspace(0, top, 4096)).reshape(-1, 3)
    pixels = _decode(heat["/m"])[::zoom, ::zoom].reshape(-1, 3)
    assert all(np.abs(colours.astype(int) - p).max(-1).min() <= 2 for p in pixels[::97])  # only map colours

    boxed, _ = app.draw.tiles(app.draw.Display(alpha=0.0, show_boxes=True), "attention", [(entry, view)])
    boxed = _decode(boxed["/m"])
    assert tuple(boxed[8 * zoom, 12 * zoom]) == tuple(BOX_TARGET)
    assert tuple(boxed[30 * zoom, 34 * zoom]) == tuple(BOX_DISTRACTOR)


def test_colour_bar_is_the_scales_own_colours_with_ticks_between_the_ends(app):
    maps = [np.array([[0.0, 1.0], [2.0, 5.0]])]
    scale = colour_scale(maps, "raw", colormap="viridis", clip=None)
    bar = app.draw.colour_bar(scale, 0, "map value")
    stops = [tuple(int(v) for v in m) for m in re.findall(r"rgb\((\d+),(\d+),(\d+)\)", bar)]
    assert len(stops) == 11
    assert stops[0] == tuple(scale.colorize(0, np.array([0.0]))[0])  # the low end: the value 0's colour
    assert stops[-1] == tuple(scale.colorize(0, np.array([5.0]))[0])
    ticks = re.findall(r'<span class="(major|minor)" style="left: ([\d.]+)%">([^<]*)</span>', bar)
    assert [t for *_, t in ticks] == ["0", "1.25", "2.5", "3.75", "5"]
    assert [float(x) for _, x, _ in ticks] == [0, 25, 50, 75, 100]  # each value at its place on the ramp
    assert [k for k, *_ in ticks] == ["major", "minor", "major", "minor", "major"]  # the middle one always shows
    assert '<div class="unit">map value</div>' in bar
    assert "font-size: 13px" in app.draw.CSS and "font-size: 12px" in app.draw.CSS  # legible text, never pixels
    signed = app.draw.colour_bar(colour_scale([np.array([[-2.0, 1.0]])], "raw", signed=True, clip=None), 0)
    assert [t for *_, t in re.findall(r'<span class="(major|minor)" style="[^"]*">([^<]*)</span>', signed)][2] == "0"


def _validity(share: list[float], mass: list[float]) -> dict:
    return {"reading": "absorbing chain", "holds": all(s == 1 for s in share), "layers": list(range(len(share))),
            "row_share": share, "max_row_mass": mass, "gamma": [0.5] * len(share)}


def test_validity_line_states_the_share_and_never_rounds_a_failure_up(app):
    assert app.draw.validity_line(None) is None
    held = app.draw.validity_line(_validity([1.0], [0.72]))
    assert held == ":green[absorbing-chain reading holds on 100 % of rows (layer 0; max γ·Σ_j A_ij = 0.72)]"
    failed = app.draw.validity_line(_validity([1.0, 0.9996], [0.9, 1.2]))
    assert failed.startswith(":orange[") and "99.9 % of rows (2 layers; max γ·Σ_j A_ij = 1.20)" in failed


class _Record:
    morf_aoc, lerf_auc, aopc, pointing_hit = 12.34, 56.78, 0.1, math.nan
    box_roc_auc, box_pr_auc = math.nan, 0.5
    explained = 3
    logits = np.array([0.0, 0.0, 0.0, 5.0])


def test_figures_table_shows_undefined_figures_as_na(app):
    row = app.draw.figures_row(_Record())
    assert row == {"morf_aoc": "12.3", "lerf_auc": "56.8", "evidence_mass_accuracy": "n/a", "pointing_hit": "n/a",
                   "box_roc_auc": "n/a", "box_pr_auc": "0.500"}  # a figure the record lacks is n/a
    table = app.draw.figures_table([("softmax · m", _Record())])
    assert table.splitlines()[0] == ("| model | MoRF-AOC | LeRF-AUC | evidence mass accuracy | box ROC-AUC | "
                                     "box PR-AUC | pointing game |")  # the registry's figures, in its order
    assert table.splitlines()[2] == "| softmax · m | 12.3 | 56.8 | n/a | n/a | 0.500 | n/a |"
    from infsa_viz.metrics.registry import image_figures

    assert table.splitlines()[0] == "| " + " | ".join(["model", *(f.label for f in image_figures())]) + " |"


def test_figures_table_leaves_out_curves_of_a_class_the_model_does_not_predict(app):
    class Record(_Record):  # a tiny probability for the explained class: MoRF-AOC −760 means nothing
        morf_aoc, pointing_hit, explained = -760.0, 1.0, 7
        logits = np.eye(10)[2]

    row = app.draw.figures_row(Record())
    assert row["morf_aoc"] == row["lerf_auc"] == "n/a (not the predicted class)" and row["pointing_hit"] == "hit"


def test_scale_caption_names_the_shared_limits_the_kind_and_the_clip(app):
    maps = [np.array([[0.0, 1.0], [1.0, 2.0]]), np.array([[1.0, 1.0], [1.0, 1.0]])]
    shared = app.draw.scale_caption(colour_scale(maps, "shared", clip=None))
    assert shared.startswith("One colour scale for all maps (share of the map's absolute mass): 0 to 0.5, "
                             "sequential, dark = low; each map divided by its mass")
    assert shared.endswith("no clipping (limits are the extremes).")
    assert "own range" in app.draw.scale_caption(colour_scale(maps, "per-map"))
    signed = app.draw.scale_caption(colour_scale([np.array([[-1.0, 2.0]])], "raw", signed=True))
    assert "diverging, white = 0" in signed and "99th percentile of |value|" in signed


def test_prediction_line_judges_only_against_a_label_of_the_model(app):
    p = np.array([0.2, 0.7, 0.1])
    assert app.draw.prediction_line(("cat", "dog", "fox"), p, None) == "predicts **dog** (p = 0.700)"
    assert app.draw.prediction_line(("cat", "dog", "fox"), p, 1).endswith(":green[correct]")
    assert app.draw.prediction_line(("cat", "dog", "fox"), p, 2).endswith(":red[wrong: the image shows fox]")
    assert app.draw.top_classes(("cat", "dog", "fox"), p, 2) == "dog 70%, cat 20%"


def test_downloads_hold_the_raw_maps_and_the_drawn_overlays(app):
    maps = {"softmax · m": np.arange(36, dtype=np.float64).reshape(6, 6), "other": np.ones((4, 4))}
    loaded = np.load(io.BytesIO(app.exports.maps_npz(maps)))
    assert sorted(loaded.files) == ["other", "softmax-m"]
    np.testing.assert_array_equal(loaded["softmax-m"], maps["softmax · m"].astype(np.float32))
    display = np.zeros((48, 48), np.uint8)
    views = [("a", _view(app, display)), ("b", _view(app, display))]
    scale = colour_scale([v.map for _, v in views], "shared")
    png = _decode(app.exports.overlays_png(views, scale, display=app.draw.Display(alpha=0.5)))
    assert png.shape[1] >= 2 * app.draw.DISPLAY_PX and png.shape[0] > app.draw.DISPLAY_PX  # two tiles, bars baked in
    assert app.exports.stem("cluttered-digits:3", "rollout") == "cluttered-digits-3-rollout"


def test_a_flat_map_is_flagged_with_its_contrast_and_values(app):
    from infsa_viz.overlay import FLAT_CONTRAST

    near_uniform = np.array([[0.0153, 0.0159], [0.0155, 0.0156]])  # a random model's attention
    note = app.draw.flat_note(near_uniform)
    assert note is not None and f"contrast 0.038 < {FLAT_CONTRAST:g}" in note and "0.0153–0.0159" in note
    assert app.draw.flat_note(np.zeros((2, 2))) is not None  # no values at all: flagged too
    assert app.draw.flat_note(np.array([[0.0, 1.0], [0.2, 0.5]])) is None
