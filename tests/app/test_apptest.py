"""AppTest: every page renders on the shipped models, one interaction per page works, and what
the app draws and reports is what the library computes."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from infsa_viz import load_model, preprocess
from infsa_viz.data import TEST_SIZE, test_split
from infsa_viz.images import decode_image
from infsa_viz.maps import attribute
from infsa_viz.overlay import colour_scale

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app" / "streamlit_app.py"
TIMEOUT = 240  # first run: imports, the 2000-image test split, three models' maps and figures


@pytest.fixture(autouse=True, scope="module")
def _restore_torch_threads(shipped_models):
    """Every test needs the shipped models (skipped without them). The app sets one intra-op thread
    for the whole process; give the other tests theirs back."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _app():
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(str(APP), default_timeout=TIMEOUT)


def _ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _captions(at) -> list[str]:
    return [c for image in at.image for c in image.captions]


def test_side_by_side_renders_every_model(shipped_models):
    at = _app().run()
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    captions = _captions(at)
    assert captions == [e.label for e in shipped_models]
    assert {e.variant for e in shipped_models} <= {c.split(" · ")[0] for c in captions}
    assert sum("MoRF-AOC" in m.value for m in at.markdown) == len(shipped_models)
    assert {b.label for b in at.get("download_button")} >= {"Overlay grid (PNG)", "Figures (CSV)", "Figures (JSON)"}


def test_side_by_side_method_and_image_change(shipped_models):
    at = _app().run()
    at.selectbox(key="method").set_value("perron").run()
    _ok(at)
    assert any("**perron**" in c.value for c in at.caption)
    at.selectbox(key="head").set_value(0).run()
    at.number_input(key="image_index").set_value(7).run()
    _ok(at)
    assert any("test image #7" in c.value for c in at.caption)
    assert len(_captions(at)) == len(shipped_models)


def test_model_selection_and_another_model_directory(tmp_path, shipped_models):
    at = _app().run()
    at.multiselect(key="models").unselect(shipped_models[0].path).run()
    _ok(at)
    assert _captions(at) == [e.label for e in shipped_models[1:]]
    at.text_input(key="extra_model").input(str(tmp_path / "missing")).run()
    _ok(at)
    assert any("does not exist" in e.value for e in at.sidebar.error)
    at.text_input(key="extra_model").input(shipped_models[0].path).run()  # added back through the path box
    _ok(at)
    assert sorted(_captions(at)) == sorted(e.label for e in shipped_models)


def test_spectral_page_renders_and_switches_matrix(shipped_models):
    at = _app().run()
    at.switch_page("views/spectral.py").run()
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    assert len(_captions(at)) == len(shipped_models)  # one visits map per model
    at.radio(key="spectral_matrix").set_value("infsa").run()
    at.radio(key="spectrum_view").set_value("sorted magnitudes").run()
    _ok(at)
    assert len(at.get("plotly_chart")) == len(shipped_models)
    assert sum("absorbing-chain reading holds on" in c.value for c in at.caption) == len(shipped_models)


def test_curves_page_renders_and_follows_the_image():
    at = _app().run()
    at.switch_page("views/curves.py").run()
    _ok(at)
    assert {c.key for c in at.get("plotly_chart")} >= {"perturbation_curves", "roc_curves", "pr_curves"}
    if (ROOT / "metrics" / "attention-quality.json").is_file():  # one row's protocol, picked by a selectbox
        rows = at.selectbox(key="protocol_row")
        rows.set_value(len(rows.options) - 1).run()
        _ok(at)
    at.number_input(key="image_index").set_value(3).run()
    _ok(at)
    assert any("test image #3" in c.value for c in at.caption)
    at.button(key="random_image").click().run()
    _ok(at)
    assert 0 <= at.number_input(key="image_index").value < TEST_SIZE


def test_only_misclassified_browses_errors(shipped_models):
    at = _app().run()
    at.checkbox(key="only_wrong").check().run()
    _ok(at)
    assert at.error or len(_captions(at)) == len(shipped_models)  # a perfect model says so in an error box


def test_bad_upload_shows_an_error_not_an_exception():
    at = _app().run()
    at.radio(key="image_source").set_value("Upload").run()
    _ok(at)
    assert at.info  # asks for a file
    at.file_uploader(key="upload").set_value(("notes.png", b"this is not an image", "image/png")).run()
    _ok(at)
    assert any("not a readable image" in e.value for e in at.error), [e.value for e in at.error]
    assert not at.image


def _details(at) -> dict:
    """The side-by-side page's "What each map is" JSON, by model label."""
    (details,) = [json.loads(j.value) for j in at.json]
    return details


@torch.no_grad()
def _logits(model_dir: str, images) -> np.ndarray:
    model = load_model(model_dir).eval()
    return model(preprocess(model, images))[0].numpy()


def test_shared_scale_is_computed_on_the_maps_drawn(shipped_models):
    at = _app().run()
    at.number_input(key="image_index").set_value(11).run()
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    assert at.radio(key="scale").value == "shared"
    assert any(c.value.startswith("One colour scale for all maps (share of the map's absolute mass)")
               for c in at.caption)
    details = _details(at)
    maps = []
    for m in shipped_models:
        model = load_model(m.path)
        x = preprocess(model, test_split().images[11:12])
        maps.append(attribute(model, x, "attention", **details[m.label]["options"]).maps[0])
    scale = colour_scale(maps, "shared")
    for i, m in enumerate(shipped_models):
        colour = details[m.label]["colour"]
        assert colour["mode"] == "shared"
        np.testing.assert_allclose(colour["divisor"], scale.divisors[i], rtol=1e-6)
        np.testing.assert_allclose(colour["limits"], scale.limits[i], rtol=1e-6, atol=1e-9)
        saturated = float((scale.normalised(i, maps[i]) >= 1.0).mean())
        assert saturated <= 1 / maps[i].numel(), f"{m.label}: {saturated:.0%} of the cells at the top colour"


def test_visits_shows_where_the_absorbing_chain_reading_holds(shipped_models):
    at = _app().run()
    at.selectbox(key="method").set_value("visits").run()
    _ok(at)
    lines = [c.value for c in at.caption if "absorbing-chain reading holds on" in c.value]
    assert len(lines) == len(shipped_models)
    details = _details(at)
    for m, line in zip(shipped_models, lines):
        validity = details[m.label]["validity"]
        assert validity["layers"] and ("green" if validity["holds"] else "orange") in line


def test_logits_are_the_models_own_on_the_shown_test_image(shipped_models):
    at = _app().run()
    at.number_input(key="image_index").set_value(5).run()
    _ok(at)
    assert any("test image #5" in c.value for c in at.caption)
    details = _details(at)
    assert set(details) == {m.label for m in shipped_models}
    for m in shipped_models:
        expected = _logits(m.path, test_split().images[5:6])
        np.testing.assert_allclose(details[m.label]["logits"], expected, rtol=0, atol=1e-6)


def test_gradient_methods_explain_the_chosen_class(shipped_models):
    at = _app().run()
    at.selectbox(key="method").set_value("saliency").run()
    _ok(at)
    assert {d["target"] for d in _details(at).values()} <= set(range(10))  # the predictions
    at.selectbox(key="target").set_value(3).run()
    _ok(at)
    assert [d["target"] for d in _details(at).values()] == [3] * len(shipped_models)
    at.selectbox(key="target").set_value("label").run()
    _ok(at)
    assert [d["target"] for d in _details(at).values()] == [int(test_split().labels[0])] * len(shipped_models)
    at.radio(key="image_source").set_value("Upload").run()
    at.file_uploader(key="upload").set_value(("square.png", _rgba_png(), "image/png")).run()
    _ok(at)  # an upload has no label: the choice falls back to the prediction
    assert at.selectbox(key="target").value == "predicted"
    assert {d["target"] for d in _details(at).values()} <= set(range(10))


def _rgba_png() -> bytes:
    rgba = np.zeros((90, 130, 4), np.uint8)
    rgba[20:70, 40:90] = (255, 255, 255, 255)
    rgba[30:60, 10:30] = (200, 40, 90, 128)
    ok, png = cv2.imencode(".png", rgba)
    assert ok
    return png.tobytes()


def test_good_upload_of_any_size_renders_with_each_models_preprocessing(shipped_models):
    png = _rgba_png()
    at = _app().run()
    at.radio(key="image_source").set_value("Upload").run()
    at.file_uploader(key="upload").set_value(("square.png", png, "image/png")).run()
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    assert len(_captions(at)) == len(shipped_models)
    details = _details(at)
    image = decode_image(png, name="square.png")
    for m in shipped_models:
        np.testing.assert_allclose(details[m.label]["logits"], _logits(m.path, [image]), rtol=0, atol=1e-6)
    assert "the label" not in at.selectbox(key="target").options  # an upload has no label to explain
