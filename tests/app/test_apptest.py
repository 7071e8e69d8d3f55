"""AppTest: every page renders on the shipped models, and one interaction per page works."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from infsa_viz import app_support as support

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app" / "streamlit_app.py"
MODELS = support.discover_models(ROOT / "models")
TIMEOUT = 240  # first run: imports, the 2000-image test split, three models' maps and figures

pytestmark = pytest.mark.skipif(not MODELS, reason=f"no trained model under {ROOT / 'models'} yet")


@pytest.fixture(autouse=True, scope="module")
def _restore_torch_threads():
    """The app sets one intra-op thread for the whole process; give the other tests theirs back."""
    import torch

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


def test_side_by_side_renders_every_model():
    at = _app().run()
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    captions = _captions(at)
    assert captions == [e.label for e in MODELS]
    assert {e.variant for e in MODELS} <= {c.split(" · ")[0] for c in captions}
    assert sum("MoRF-AOC" in m.value for m in at.markdown) == len(MODELS)
    assert {b.label for b in at.get("download_button")} >= {"Overlay grid (PNG)", "Figures (CSV)", "Figures (JSON)"}


def test_side_by_side_method_and_image_change():
    at = _app().run()
    at.selectbox(key="method").set_value("perron").run()
    _ok(at)
    assert any("**perron**" in c.value for c in at.caption)
    at.selectbox(key="head").set_value(0).run()
    at.number_input(key="image_index").set_value(7).run()
    _ok(at)
    assert any("test image #7" in c.value for c in at.caption)
    assert len(_captions(at)) == len(MODELS)


def test_model_selection_and_another_model_directory(tmp_path):
    at = _app().run()
    at.multiselect(key="models").unselect(MODELS[0].path).run()
    _ok(at)
    assert _captions(at) == [e.label for e in MODELS[1:]]
    at.text_input(key="extra_model").input(str(tmp_path / "missing")).run()
    _ok(at)
    assert any("does not exist" in e.value for e in at.sidebar.error)
    at.text_input(key="extra_model").input(MODELS[0].path).run()  # added back through the path box
    _ok(at)
    assert sorted(_captions(at)) == sorted(e.label for e in MODELS)


def test_spectral_page_renders_and_switches_matrix():
    at = _app().run()
    at.switch_page("views/spectral.py").run()
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    assert len(_captions(at)) == len(MODELS)  # one visits map per model
    at.radio(key="spectral_matrix").set_value("infsa").run()
    at.radio(key="spectrum_view").set_value("sorted magnitudes").run()
    _ok(at)
    assert len(at.get("plotly_chart")) == len(MODELS)


def test_curves_page_renders_and_follows_the_image():
    at = _app().run()
    at.switch_page("views/curves.py").run()
    _ok(at)
    assert at.get("plotly_chart")  # MoRF / LeRF, ROC, PR (+ report charts where present)
    at.number_input(key="image_index").set_value(3).run()
    _ok(at)
    assert any("test image #3" in c.value for c in at.caption)
    at.button(key="random_image").click().run()
    _ok(at)
    assert 0 <= at.number_input(key="image_index").value < support.TEST_SPLIT_SIZE


def test_only_misclassified_browses_errors():
    at = _app().run()
    at.checkbox(key="only_wrong").check().run()
    _ok(at)
    assert at.error or len(_captions(at)) == len(MODELS)  # a perfect model says so in an error box


def test_bad_upload_shows_an_error_not_an_exception():
    at = _app().run()
    at.radio(key="image_source").set_value("Upload").run()
    _ok(at)
    assert at.info  # asks for a file
    at.file_uploader(key="upload").set_value(("notes.png", b"this is not an image", "image/png")).run()
    _ok(at)
    assert any("not a readable image" in e.value for e in at.error), [e.value for e in at.error]
    assert not at.image


def test_good_upload_of_any_size_renders():
    rgba = np.zeros((90, 130, 4), np.uint8)
    rgba[20:70, 40:90] = (255, 255, 255, 255)
    ok, png = cv2.imencode(".png", rgba)
    at = _app().run()
    at.radio(key="image_source").set_value("Upload").run()
    at.file_uploader(key="upload").set_value(("square.png", png.tobytes(), "image/png")).run()
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    assert len(_captions(at)) == len(MODELS)
