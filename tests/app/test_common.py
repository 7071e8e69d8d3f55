"""The app's own pure helpers in ``app/common.py`` (model discovery, image choices, the text
lines it shows); the library parts it calls are tested with the library."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from infsa_viz import VARIANTS, VisionTransformer, save_model
from infsa_viz.data import test_split
from infsa_viz.overlay import colour_scale

COMMON = Path(__file__).resolve().parents[2] / "app" / "common.py"


@pytest.fixture(scope="module")
def common():
    """``app/common.py`` loaded from its file (the app imports it as a sibling module); it sets
    one intra-op thread for the process, so the other tests get theirs back afterwards."""
    import torch

    threads = torch.get_num_threads()
    spec = importlib.util.spec_from_file_location("infsa_app_common", COMMON)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)
        torch.set_num_threads(threads)


def _png(image: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", image)
    assert ok
    return buf.tobytes()


def test_discover_models_orders_by_variant_and_skips_incomplete(common, tmp_path, make_config):
    for variant in reversed(VARIANTS):
        save_model(VisionTransformer(make_config(variant)), tmp_path / f"m-{variant}")
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "config.json").write_text("{}")  # weights not written yet
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("not a model")
    found = common.discover_models(tmp_path)
    assert [e.variant for e in found] == list(VARIANTS)
    assert [e.name for e in found] == [f"m-{v}" for v in VARIANTS]
    assert all(e.label == f"{e.variant} · {e.name}" and Path(e.path).is_absolute() for e in found)
    weights = Path(found[0].path) / "model.safetensors"
    assert found[0].version == weights.stat().st_mtime_ns  # a retrained model is a new cache key
    assert common.discover_models(tmp_path / "missing") == []
    with pytest.raises(ValueError, match="not a model directory"):
        common.model_entry(tmp_path / "training")
    with pytest.raises(ValueError, match="does not exist"):
        common.model_entry(tmp_path / "nope")


def test_test_image_is_the_split_image_with_its_boxes(common):
    choice, split = common.test_image(17), test_split()
    np.testing.assert_array_equal(choice.data.images[0], split.images[17])
    np.testing.assert_array_equal(choice.data.boxes[0], split.boxes[17])
    np.testing.assert_array_equal(choice.data.negative_boxes[0], split.negative_boxes[17])
    assert (choice.key, choice.index, choice.label) == ("test:17", 17, int(split.labels[17]))
    assert choice.source == "test image #17"


@pytest.mark.parametrize("shape", [(37, 81), (37, 81, 3), (37, 81, 4)])
def test_upload_image_has_no_label_and_a_content_key(common, shape):
    image = np.random.default_rng(0).integers(0, 255, shape, dtype=np.uint8)
    choice = common.upload_image(_png(image), "x.png")
    assert choice.label is None and choice.index is None
    assert choice.data.images[0].shape[:2] == (37, 81)
    assert choice.data.boxes[0].shape == (0, 4)
    assert choice.key == common.upload_image(_png(image), "other.png").key  # identity is the content
    with pytest.raises(ValueError, match="bad.png: not a readable image"):
        common.upload_image(b"GIF89a not really", "bad.png")


def _validity(share: list[float], mass: list[float]) -> dict:
    return {"reading": "absorbing chain", "holds": all(s == 1 for s in share), "layers": list(range(len(share))),
            "row_share": share, "max_row_mass": mass, "gamma": [0.5] * len(share)}


def test_validity_line_states_the_share_and_never_rounds_a_failure_up(common):
    assert common.validity_line(None) is None
    held = common.validity_line(_validity([1.0], [0.72]))
    assert held == ":green[absorbing-chain reading holds on 100 % of rows (layer 0; max γ·Σ_j A_ij = 0.72)]"
    failed = common.validity_line(_validity([1.0, 0.9996], [0.9, 1.2]))
    assert failed.startswith(":orange[") and "99.9 % of rows (2 layers; max γ·Σ_j A_ij = 1.20)" in failed


def test_badges_show_undefined_figures_as_na(common):
    class Record:
        morf_aoc, lerf_auc, aopc, pointing_hit = 12.34, 56.78, 0.1, math.nan
        scored = predicted = 3
        box_roc_auc, box_pr_auc, distractor_roc_auc = math.nan, math.nan, math.nan

    line = common.badges(Record())
    assert line.startswith("MoRF-AOC **12.3** · LeRF-AUC 56.8 · pointing n/a")
    assert "box ROC-AUC **n/a**" in line
    Record.pointing_hit, Record.box_roc_auc = 1.0, 0.91234
    assert "pointing :green[hit]" in common.badges(Record()) and "**0.912**" in common.badges(Record())


def test_badges_leave_out_curves_of_a_class_the_model_does_not_predict(common):
    class Record:  # the app's first test image: a tiny probability for the label, MoRF-AOC -760
        morf_aoc, lerf_auc, aopc, pointing_hit = -760.0, 5.0, -7.6, 1.0
        box_roc_auc, box_pr_auc, distractor_roc_auc = 0.9, 0.5, 0.8
        scored, predicted = 7, 2

    line = common.badges(Record())
    assert line.startswith("MoRF-AOC / LeRF-AUC n/a (the model predicts class 2, not the scored class 7)")
    assert "-760" not in line and "box ROC-AUC **0.900**" in line


def test_scale_caption_names_the_shared_limits_the_kind_and_the_clip(common):
    maps = [np.array([[0.0, 1.0], [1.0, 2.0]]), np.array([[1.0, 1.0], [1.0, 1.0]])]
    shared = common.scale_caption(colour_scale(maps, "shared", clip=None))
    assert shared.startswith("One colour scale for all maps (share of the map's absolute mass): 0 to 0.5, "
                             "sequential, dark = low; each map divided by its mass")
    assert shared.endswith("no clipping (limits are the extremes).")
    assert "own range" in common.scale_caption(colour_scale(maps, "per-map"))
    signed = common.scale_caption(colour_scale([np.array([[-1.0, 2.0]])], "raw", signed=True))
    assert "diverging, white = 0" in signed and "99th percentile of |value|" in signed


def test_model_roots_from_the_command_line_and_the_environment(common, tmp_path):
    roots = common.model_roots(["--models", "a", str(tmp_path)], {"INFSA_VIZ_MODELS": f"b{os.pathsep}c"})
    assert roots == [Path("a"), tmp_path, Path("b"), Path("c")]
    assert common.model_roots([], {}) == []


def test_find_models_lists_user_models_and_says_what_is_wrong(common, tmp_path, make_config):
    save_model(VisionTransformer(make_config("softmax")), tmp_path / "root" / "mine")
    (tmp_path / "root" / "empty").mkdir()
    alone = tmp_path / "alone"
    save_model(VisionTransformer(make_config("pure_infsa")), alone)  # a root that is itself a model
    found, problems = common.find_models([tmp_path / "root", alone, tmp_path / "missing"])
    names = [e.name for e in found]
    assert "mine" in names and "alone" in names
    assert next(e for e in found if e.name == "alone").variant == "pure_infsa"
    assert any("empty" in p and "empty directory" in p for p in problems)
    assert any(p.endswith("missing: not a directory") for p in problems)


def test_class_names_default_to_digits_or_the_cards_names(common, tmp_path, make_config):
    assert common.class_name(None, 4) == "digit 4"
    save_model(VisionTransformer(make_config("softmax")), tmp_path / "m")
    entry = common.user_model(tmp_path / "m")
    classes = VisionTransformer(make_config("softmax")).config.num_classes
    assert common.class_name(entry, 1) == ("digit 1" if classes == 10 else "class 1")
    (tmp_path / "m" / "card.json").write_text(json.dumps({"class_names": [f"c{i}" for i in range(classes)]}))
    assert common.class_name(common.user_model(tmp_path / "m"), 1) == "c1"


def test_a_model_that_does_not_load_gives_one_line(common, tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{not json")
    entry = common.user_model(tmp_path / "bad")
    assert entry.variant == "?"
    error = common.load_error(entry)
    assert error and "\n" not in error
    with pytest.raises(ValueError, match="cannot load the model"):
        common.get_model(entry.path, entry.version)


def test_draw_follows_opacity_and_boxes(common):
    """Opacity 0 shows the model's input pixels (zoomed, nearest), opacity 1 only the map's colours;
    boxes are drawn in the documented colours only when asked, and the colour bar sits underneath."""
    rng = np.random.default_rng(0)
    display = rng.integers(0, 256, (48, 48), dtype=np.uint8)
    view = common.MapView(map=rng.random((6, 6)), options={}, metadata={}, target=None, validity=None,
                          display=display, boxes=np.array([[8, 8, 24, 24]]), negative_boxes=np.array([[30, 30, 40, 40]]))
    entry = common.ModelEntry("/m", "m", "softmax", 0)
    zoom = common.DISPLAY_PX // 48
    side = 48 * zoom

    plain, _ = common.draw(common.Display(alpha=0.0, show_boxes=False), "attention", [(entry, view)])
    tile = plain["/m"]
    assert tile.shape[1] == side and tile.shape[0] > side  # the colour bar under the overlay
    np.testing.assert_array_equal(tile[:side], np.repeat(np.repeat(display, zoom, 0), zoom, 1)[..., None].repeat(3, -1))

    heat, scale = common.draw(common.Display(alpha=1.0, show_boxes=False), "attention", [(entry, view)])
    top = scale.limits[0][1] * scale.divisors[0]  # colorize reads raw map values
    colours = scale.colorize(0, np.linspace(0, top, 4096)).reshape(-1, 3)
    pixels = heat["/m"][:side:zoom, :side:zoom].reshape(-1, 3)
    assert all(np.abs(colours.astype(int) - p).max(-1).min() <= 2 for p in pixels[::97])  # only map colours

    boxed, _ = common.draw(common.Display(alpha=0.0, show_boxes=True), "attention", [(entry, view)])
    edge = boxed["/m"][8 * zoom, 12 * zoom], boxed["/m"][30 * zoom, 34 * zoom]
    from infsa_viz.overlay import BOX_DISTRACTOR, BOX_TARGET

    assert tuple(edge[0]) == tuple(BOX_TARGET) and tuple(edge[1]) == tuple(BOX_DISTRACTOR)
    assert (boxed["/m"][side:] == tile[side:]).all()  # the colour bar does not depend on the boxes
