"""The Intervention page (AppTest): its numbers are the library's interventions — per-object
evidence equal to ``object_importance`` on the same scene, map shares equal to ``object_mass``, a
changed set of objects equal to the model on ``Scene.intervene`` — on the cluttered and the cued
benchmark (cue removed, target swapped), and an occluded box on a photo."""

from __future__ import annotations

import re

import cv2
import numpy as np
import pytest
import torch

from infsa_viz import load_model
from infsa_viz.data import test_split
from infsa_viz.evaluation.interventions import object_importance
from infsa_viz.maps import attribute_images
from infsa_viz.metrics.evidence import object_mass
from infsa_viz.preprocess import prepare
from tests.app.test_apptest import _app, _ok, _shown

DELTA = re.compile(r"p\((.+?)\) ([0-9.]+) → ([0-9.]+): \*\*Δp = ([+-][0-9.]+)\*\*")


def _tables(at) -> list[dict[str, list]]:
    """The evidence tables (markdown, three decimals: they wrap at any width) as columns."""
    out = []
    for m in at.markdown:
        lines = _shown(m.value).splitlines()
        if not lines or not lines[0].startswith("| object | intervention | Δp alone"):
            continue
        header = [c.strip() for c in lines[0].strip("|").split("|")]
        rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
        out.append({h: [r[j] if j < 2 else float(r[j]) for r in rows] for j, h in enumerate(header)})
    return out


def _deltas(at) -> list[tuple[str, float, float, float]]:
    out = []
    for m in at.markdown:
        found = DELTA.search(_shown(m.value))
        if found:
            out.append((found[1], float(found[2]), float(found[3]), float(found[4])))
    return out


@torch.no_grad()
def _probability(model, images, cls: int) -> np.ndarray:
    return torch.softmax(model(prepare(model.config, images).tensor).double(), -1)[:, cls].numpy()


def test_the_pages_numbers_equal_object_importance_on_the_same_scene(shipped_models, monkeypatch):
    import io

    import pandas as pd
    from streamlit.delta_generator import DeltaGenerator

    downloads = {}
    monkeypatch.setattr(DeltaGenerator, "download_button",
                        lambda self, label, data, file_name=None, *a, **k: downloads.update({file_name: data}) or False)
    at = _app().run()
    at.switch_page("views/intervention.py").run()
    _ok(at)
    index = at.number_input(key="image_number").value - 1  # numbered from 1
    scene = test_split().scenes[index]
    tables = _tables(at)
    assert len(tables) == len(shipped_models)
    (exported,) = [data() for name, data in downloads.items() if name.endswith(".table.csv")]
    exported = pd.read_csv(io.StringIO(exported), comment="#")  # every digit, with the settings above
    for m, table in zip(shipped_models, tables):
        full = exported[exported["model"] == m.name]
        assert list(full["object"]) == list(table["object"])
        np.testing.assert_allclose(table["Δp alone"], full["Δp alone"], rtol=0, atol=5e-4)  # shown: 3 decimals
        model = load_model(m.path).eval()
        with torch.no_grad():
            cls = int(model(prepare(model.config, [scene.render()]).tensor).argmax())  # the prediction: explained
        truth = object_importance(model, [scene], explained=[cls])
        visible = truth.masks[0].reshape(truth.masks.shape[1], -1).sum(-1) > 0
        assert list(table["object"]) == [o for o, v in zip(truth.objects, visible) if v]  # absent objects hidden
        np.testing.assert_allclose(full["Δp alone"], truth.prob_drop[0][visible], rtol=0, atol=1e-12)
        np.testing.assert_allclose(full["Δlogit alone"], truth.logit_drop[0][visible], rtol=0, atol=1e-12)
        attention = attribute_images(model, prepare(model.config, [scene.render()]).tensor, "attention").maps
        share = object_mass(attention.numpy(), truth.masks)[0]
        np.testing.assert_allclose(full["map share"], share[visible], rtol=0, atol=1e-9)

    at.multiselect(key="intervene_objects").set_value(["distractor_1", "background"]).run()
    _ok(at)
    deltas = _deltas(at)
    assert len(deltas) == len(shipped_models)
    changed = scene.intervene(["distractor_1", "background"])
    for m, (name, clean, after, drop) in zip(shipped_models, deltas):
        model = load_model(m.path).eval()
        cls = int(name.split()[-1])
        assert clean == pytest.approx(_probability(model, [scene.render()], cls)[0], abs=6e-4)
        assert after == pytest.approx(_probability(model, [changed], cls)[0], abs=6e-4)
        assert drop == pytest.approx(clean - after, abs=1.1e-3)
    assert at.query_params["change"] in ("distractor_1,background", ["distractor_1,background"])
    # one colour scale for every model's clean and changed map: one colour bar; per map on request, labelled
    assert sum("infsa-colour-bar" in h.proto.body for h in at.get("html")) == 1
    assert any(_shown(c.value).startswith("One colour scale for all maps") for c in at.caption)
    at.radio(key="scale").set_value("per-map").run()
    _ok(at)
    bars = [h.proto.body for h in at.get("html") if "infsa-colour-bar" in h.proto.body]
    assert len(bars) == 2 * len(shipped_models) and all("own scale: " in b for b in bars)
    assert any(_shown(c.value).startswith("Each map stretched to its own range") for c in at.caption)


def test_the_cued_benchmark_removes_the_cue_and_swaps_the_target(shipped_models, monkeypatch):
    monkeypatch.setenv("INFSA_VIZ_DATA", "cued-digits-p10")
    at = _app().run()
    at.radio(key="image_set").set_value("cued-digits-p10").run()
    at.switch_page("views/intervention.py").run()
    _ok(at)
    options = at.multiselect(key="intervene_objects").options
    assert "cue (remove)" in options and "target (swap digit)" in options and "background (swap)" in options
    index = at.number_input(key="image_number").value - 1  # numbered from 1
    scene = test_split(benchmark="cued-digits-p10").scenes[index]
    assert len(options) == int(scene.present.sum())  # absent distractor slots are not offered
    at.multiselect(key="intervene_objects").set_value(["target"]).run()
    _ok(at)
    swapped = scene.intervene(["target"])
    model = load_model(shipped_models[0].path).eval()
    name, clean, after, _ = _deltas(at)[0]
    assert after == pytest.approx(_probability(model, [swapped], int(name.split()[-1]))[0], abs=6e-4)
    assert "cue" in list(_tables(at)[0]["object"])


def _png(pixels: np.ndarray) -> bytes:
    ok, data = cv2.imencode(".png", pixels)
    assert ok
    return data.tobytes()


def test_a_box_occluded_on_a_photo(own_models, monkeypatch, tmp_path, shipped_models):
    rng = np.random.default_rng(0)
    photo = rng.integers(0, 255, (60, 80, 3), dtype=np.uint8)
    monkeypatch.setenv("INFSA_VIZ_MODELS", str(own_models.root))
    at = _app().run()
    at.radio(key="image_set").set_value("upload").run()
    at.file_uploader(key="upload").set_value(("photo.png", _png(photo), "image/png")).run()
    at.switch_page("views/intervention.py").run()
    _ok(at)
    at.slider(key="occlude_x").set_value((0.1, 0.5)).run()
    at.slider(key="occlude_y").set_value((0.2, 0.6)).run()
    at.radio(key="occlude_fill").set_value("black").run()
    _ok(at)
    assert not _tables(at)  # a photo has no objects: the box is the intervention
    occluded = cv2.cvtColor(photo, cv2.COLOR_BGR2RGB)
    source = occluded.copy()
    occluded[12:36, 8:40] = 0  # rows 0.2..0.6 of 60, columns 0.1..0.5 of 80
    deltas = dict((n, (c, a)) for n, c, a, _ in _deltas(at))
    model = load_model(own_models.vit).eval()
    with torch.no_grad():
        p = torch.softmax(model(prepare(model.config, [source, occluded]).tensor).double(), -1).numpy()
    cls = int(p[0].argmax())
    from tests.app.conftest import PHOTO_CLASSES

    clean, after = deltas[PHOTO_CLASSES[cls]]
    assert (clean, after) == (pytest.approx(p[0, cls], abs=6e-4), pytest.approx(p[1, cls], abs=6e-4))
