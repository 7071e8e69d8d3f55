"""The app's pure helpers (``infsa_viz.app_support``) on tiny models built here."""

from __future__ import annotations

import json
import warnings

import cv2
import numpy as np
import pytest
import torch
from sklearn.metrics import auc

from infsa_viz import VARIANTS, VisionTransformer, app_support as support, save_model
from infsa_viz.images import MAX_IMAGE_BYTES
from infsa_viz.maps import METHODS, explain
from infsa_viz.metrics import box_auc


def _png(image: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", image)
    assert ok
    return buf.tobytes()


# ------------------------------------------------------------------------------------- uploads
@pytest.mark.parametrize("data, message", [
    (b"", "empty"),
    (b"GIF89a not really", "not a readable image"),
    (b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "not a readable image"),  # truncated PNG
    (b"x" * (MAX_IMAGE_BYTES + 1), "over the limit"),
])
def test_upload_sample_refuses_bad_files_with_value_error(data, message):
    with pytest.raises(ValueError, match=message) as info:
        support.upload_sample(data, "file.png")
    assert "file.png" in str(info.value)


@pytest.mark.parametrize("channels", [None, 3, 4])
def test_upload_sample_decodes_gray_rgb_rgba(channels):
    shape = (37, 81) if channels is None else (37, 81, channels)
    image = np.random.default_rng(0).integers(0, 255, shape, dtype=np.uint8)
    sample = support.upload_sample(_png(image), "x.png")
    assert sample.image.shape[:2] == (37, 81)
    assert sample.image.ndim == (2 if channels is None else 3)
    assert sample.label is None and sample.boxes is None
    assert sample.key == support.upload_sample(_png(image), "other-name.png").key  # content identity


def test_dataset_sample_matches_the_test_split():
    sample = support.dataset_sample(5)
    split = support.test_split()
    np.testing.assert_array_equal(sample.image, split.images[5])
    assert sample.label == int(split.labels[5])
    np.testing.assert_array_equal(sample.boxes[0], split.target_boxes[5])
    assert sample.distractor_boxes.shape == (split.distractor_boxes.shape[1], 4)
    with pytest.raises(ValueError, match="index"):
        support.dataset_sample(support.TEST_SPLIT_SIZE)


def test_scale_boxes_maps_pixels_to_the_input_size():
    boxes = np.array([[10, 20, 30, 40]])
    np.testing.assert_allclose(support.scale_boxes(boxes, (100, 50), 48), [[9.6, 9.6, 28.8, 19.2]])
    assert support.scale_boxes(None, (4, 4), 2) is None


# -------------------------------------------------------------------------------------- models
def test_discover_models_orders_by_variant_and_skips_incomplete(tmp_path, make_config):
    for variant in reversed(VARIANTS):
        save_model(VisionTransformer(make_config(variant)), tmp_path / f"m-{variant}")
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "config.json").write_text("{}")  # weights not written yet
    (tmp_path / "notes.txt").write_text("not a model")
    found = support.discover_models(tmp_path)
    assert [e.variant for e in found] == list(VARIANTS)
    assert all(e.label.startswith(e.variant) for e in found)
    assert support.discover_models(tmp_path / "missing") == []
    with pytest.raises(ValueError, match="not a model directory"):
        support.model_entry(tmp_path / "training")
    with pytest.raises(ValueError, match="does not exist"):
        support.model_entry(tmp_path / "nope")


def test_predictions_and_misclassified(tiny_model):
    images = np.random.default_rng(1).integers(0, 255, (5, 16, 16), dtype=np.uint8)
    predicted = support.predict_split(tiny_model, images, batch_size=2)
    assert predicted.shape == (5,)
    np.testing.assert_array_equal(support.misclassified_indices(predicted, predicted), [])
    np.testing.assert_array_equal(support.misclassified_indices([1, 2, 3], [1, 0, 3]), [1])
    x = torch.randn(1, 1, 16, 16)
    probs = support.class_probabilities(tiny_model, x)
    assert probs.shape == (3,) and abs(probs.sum() - 1) < 1e-6


def test_map_options_apply_layer_and_head_only_where_the_registry_says():
    for name, spec in METHODS.items():
        options = support.map_options(name, layer=1, head=0)
        assert options == ({"layer": 1, "head": 0} if spec.layer_options else {})
        assert set(options) <= set(spec.options)
    assert support.map_options("attention", layer=-1, head="mean") == {"layer": -1}


# -------------------------------------------------------------------------------------- figures
def test_per_image_figures_agree_with_the_metrics(tiny_model):
    x = torch.randn(1, 1, 16, 16)
    token = explain(tiny_model, x, "attention")[0].numpy()
    boxes, distractors = np.array([[0.0, 0.0, 8.0, 8.0]]), np.array([[8.0, 8.0, 16.0, 16.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a single defined image raises no undefined-metric warning
        fig = support.perturbation_figures(tiny_model, x, token, 1, steps=4)
        loc = support.localisation_figures(token, boxes, distractors, image_size=16)
    assert len(fig["fractions"]) == len(fig["morf"]) == len(fig["lerf"]) == 5
    assert fig["fractions"][0] == 0 and fig["fractions"][-1] == 1
    assert fig["morf"][0] == pytest.approx(fig["lerf"][0])  # both start from the clean image
    assert set(loc) == set(support.FIGURE_FIELDS) - {"morf_aoc", "lerf_auc", "aopc"}
    assert loc["box_roc_auc"] == pytest.approx(box_auc(token[None], [boxes], image_size=16).roc_auc[0])
    curves = support.box_curves(token, boxes, image_size=16)
    assert auc(curves["fpr"], curves["tpr"]) == pytest.approx(loc["box_roc_auc"])
    assert curves["positive_fraction"] == pytest.approx(0.25)


def test_localisation_without_boxes_is_undefined_not_an_error():
    token = np.random.default_rng(0).random((4, 4))
    assert all(v is None for v in support.localisation_figures(token, None, None, image_size=16).values())
    whole = np.array([[0.0, 0.0, 16.0, 16.0]])
    assert support.localisation_figures(token, whole, None, image_size=16)["box_roc_auc"] is None
    assert support.box_curves(token, None, image_size=16) is None


def test_figures_csv_and_json():
    rows = [{"model": "a", "morf_aoc": 1.5, "pointing_hit": None}, {"model": "b", "extra": 2}]
    text = support.figures_csv(rows)
    assert text.splitlines() == ["model,morf_aoc,pointing_hit,extra", "a,1.5,,", "b,,,2"]
    data = json.loads(support.figures_json(rows, method="visits"))
    assert data == {"context": {"method": "visits"}, "rows": rows}


# -------------------------------------------------------------------------------------- spectra
@pytest.mark.parametrize("matrix", ["native", "infsa"])
def test_spectral_summary_covers_every_layer_and_head(tiny_model, matrix):
    x = torch.randn(1, 1, 16, 16)
    out = support.spectral_summary(tiny_model, x, matrix=matrix)
    config = tiny_model.config
    assert [(s.layer, str(s.head)) for s in out] == [
        (layer, str(h)) for layer in range(config.depth) for h in ["mean", *range(config.num_heads)]]
    for s in out:
        n = 1 + (config.img_size // config.patch_size) ** 2
        assert s.eigenvalues.shape == (n,)
        assert np.all(np.diff(np.abs(s.eigenvalues)) <= 1e-12)  # by decreasing modulus
        assert s.spectral_radius == pytest.approx(np.abs(s.eigenvalues[0]))
        assert 0 <= s.absorption_valid_share <= 1
        assert -1 - 1e-9 <= s.cosine_left <= 1 + 1e-9
        assert set(s.row()) >= {"layer", "head", "gamma_x_radius", "absorption_valid_share", "cosine_left"}


# ------------------------------------------------------------------------------- metrics reports
def test_report_tables_flatten_lists_of_objects(tmp_path):
    report = {"protocol": {"n": 1}, "results": [], "names": ["a"],
              "per_layer": [{"layer": 0, "left": {"mean": 0.9}, "ids": [1, 2], "curve": list(range(50)), "g": 0.5},
                            {"layer": 1, "left": {"mean": 0.8}, "ids": [3], "curve": [], "g": [0.5, 0.25]}]}
    (tmp_path / "eigencheck-x.json").write_text(json.dumps(report))
    files = support.metrics_files(tmp_path)
    assert list(files) == ["eigencheck-x"]
    tables = support.report_tables(json.loads(files["eigencheck-x"].read_text()))
    assert tables == {"per_layer": [  # long lists left out, a column mixing numbers and text becomes text
        {"layer": 0, "left.mean": 0.9, "ids": "[1, 2]", "g": "0.5"},
        {"layer": 1, "left.mean": 0.8, "ids": "[3]", "curve": "[]", "g": "[0.5, 0.25]"}]}
    assert support.metrics_files(tmp_path / "missing") == {}
    assert support.report_tables([1, 2]) == {}


def test_group_series_makes_one_trace_per_group():
    rows = [{"v": "a", "s": "x", "t": 1, "y": 0.1, "status": "ok"},
            {"v": "a", "s": "x", "t": 2, "y": 0.2, "status": "ok"},
            {"v": "b", "s": "x", "t": 1, "y": None, "status": "ok"},
            {"v": "b", "s": "x", "t": 2, "y": 9, "status": "oom"}]
    assert support.group_series(rows, x="t", y="y", group="v") == {"a": ([1, 2], [0.1, 0.2]), "b": ([2], [9])}
    assert support.group_series(rows, x="t", y="y", group=("v", "s"), where={"status": "ok"}) == {
        "a · x": ([1, 2], [0.1, 0.2])}


def test_dataset_curves_pick_the_method():
    curves = {"fractions": [0, 1], "morf_mean": [1, 0.2]}
    report = {"results": [{"model": "m", "variant": "softmax", "method": "visits", "curves": curves},
                          {"model": "m", "variant": "softmax", "method": "perron", "curves": curves},
                          {"model": "n", "variant": "pure_infsa", "method": "visits"}]}
    assert support.dataset_curves(report, "visits") == [{"model": "m", "variant": "softmax", "curves": curves}]
    assert support.dataset_curves(report, "random") == []
    assert support.dataset_curves(None, "visits") == []
