"""A researcher's own models beside the shipped ones, on every page (AppTest): a 6-class ViT at
224 px with the usual ImageNet processor (shortest edge 256, centre crop 224) and a DeiT with
distillation at 64 px, built with transformers (random weights, ``save_pretrained``). No
exception, their own class names, and no digit label scored against them."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from infsa_viz import load_model
from infsa_viz.data import test_split
from infsa_viz.preprocess import prepare
from tests.app.conftest import FRUIT_CLASSES, PHOTO_CLASSES
from tests.app.test_apptest import _app, _captions, _details, _figures, _ok, _shown

PAGES = ["compare", "grid", "intervention", "slice", "checks", "attention", "spectral", "gallery", "curves",
         "glossary"]
DIGITS = tuple(f"digit {i}" for i in range(10))


@pytest.fixture
def at(own_models, shipped_models, monkeypatch):
    """The app with the shipped models and the two of the user's, all selected."""
    monkeypatch.setenv("INFSA_VIZ_MODELS", str(own_models.root))
    at = _app().run()
    _ok(at)
    assert len(at.multiselect(key="models").value) == len(shipped_models) + 2
    return at


def _own_lines(at) -> list[str]:
    return [m.value for m in at.markdown
            if m.value.startswith("predicts **") and not m.value.startswith("predicts **digit")]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_works_with_the_users_models(at, page, own_models, shipped_models):
    at.switch_page(f"views/{page}.py").run()
    _ok(at)
    assert not [e.value for e in at.error], [e.value for e in at.error]
    text = " ".join([m.value for m in at.markdown] + [c.value for c in at.caption] + _captions(at))
    assert "wrong: the image shows" not in text  # the first screen: every digit model is right, the others unjudged
    if page in ("compare", "grid", "spectral"):  # pages that draw every selected model's map
        own = [c for c in _captions(at) if "photo-vit6" in c or "fruit-deit64" in c]
        assert len(own) == (2 * len(at.multiselect(key="grid_methods").value) if page == "grid" else 2)
    if page == "intervention":  # each model's prediction before and after, in its own class names
        lines = _own_lines(at)
        assert sum(any(f"**{n}**" in line for n in PHOTO_CLASSES) for line in lines) == 2
        assert sum(any(f"**{n}**" in line for n in FRUIT_CLASSES) for line in lines) == 2


def test_own_class_names_and_no_digit_label_scored_against_them(at, own_models, shipped_models):
    lines = _own_lines(at)
    assert len(lines) == 2
    assert any(any(f"**{n}**" in line for n in PHOTO_CLASSES) for line in lines)
    assert any(any(f"**{n}**" in line for n in FRUIT_CLASSES) for line in lines)
    assert not any(":green[correct]" in line or ":red[wrong" in line for line in lines)  # digits are not their classes
    details = _details(at)
    index = at.number_input(key="image_number").value - 1  # numbered from 1
    image = test_split().images[index:index + 1]
    for path, label in ((own_models.vit, "softmax · photo-vit6"), (own_models.deit, "softmax · fruit-deit64")):
        model = load_model(path).eval()
        with torch.no_grad():
            expected = model(prepare(model.config, image).tensor)[0].numpy()
        np.testing.assert_allclose(details[label]["logits"], expected, rtol=0, atol=1e-5)  # its own preprocessing
    rows = {r.split(" | ")[0].lstrip("| "): r for r in _figures(at).splitlines()[2:]}
    for label in ("softmax · photo-vit6", "softmax · fruit-deit64"):  # no digit scene: evidence and box figures n/a
        assert rows[label].split(" | ")[3:] == ["n/a", "n/a", "n/a", "n/a |"]
        assert "n/a" not in rows[label].split(" | ")[1]  # MoRF of its own prediction is defined
    at.selectbox(key="method").set_value("saliency").run()
    at.selectbox(key="target").set_value("label").run()
    _ok(at)
    targets = {label: d["target"] for label, d in _details(at).items()}
    assert targets[shipped_models[0].label] == int(test_split().labels[index])  # the digit models: the label
    probs = {label: np.asarray(d["logits"]) for label, d in _details(at).items()}
    assert targets["softmax · photo-vit6"] == int(probs["softmax · photo-vit6"].argmax())  # no label: its prediction
    assert "class 1 (digit 1 / pear / bicycle)" in at.selectbox(key="target").options


def test_a_class_only_some_models_have_is_said_in_one_line(at):
    at.selectbox(key="method").set_value("saliency").run()
    at.selectbox(key="target").set_value(7).run()
    _ok(at)
    errors = [_shown(e.value) for e in at.error]
    assert sorted(errors) == [
        "softmax · fruit-deit64: class=7 is not a class of the model; expected a class index in [0, 3)",
        "softmax · photo-vit6: class=7 is not a class of the model; expected a class index in [0, 6)"]


def test_a_letterbox_is_explained_for_the_centre_cropping_models(at, own_models):
    ok, png = cv2.imencode(".png", np.random.default_rng(0).integers(0, 255, (90, 130, 3), dtype=np.uint8))
    at.radio(key="image_set").set_value("upload").run()
    at.file_uploader(key="upload").set_value(("photo.png", png.tobytes(), "image/png")).run()
    at.radio(key="upload_fit").set_value("letterbox").run()
    _ok(at)
    assert not at.error
    notes = [c.value for c in at.caption if "letterboxing would show it a framing it never saw" in c.value]
    assert len(notes) == 2 and all("crops the centre" in n for n in notes)
    warnings = [w.value for w in at.warning]
    assert len(warnings) == len(set(warnings))  # each warning once per upload


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
def test_the_gallery_of_a_model_not_trained_on_the_set_filters_by_prediction(at, own_models):
    at.switch_page("views/gallery.py").run()
    at.selectbox(key="gallery_model").set_value(str(own_models.vit.resolve())).run()
    _ok(at)
    assert at.radio(key="gallery_correct").disabled  # its predictions are not scored against digit labels
    assert at.selectbox(key="gallery_class").label == "Class (predicted class)"
    captions = _captions(at)
    assert captions and not any("✓" in c or "✗" in c for c in captions)
    assert all(c.split(": ")[1].rsplit(" ", 1)[0] in PHOTO_CLASSES for c in captions)
