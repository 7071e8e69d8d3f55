"""AppTest: every page renders on the shipped models, one interaction per page works, and what
the app draws and reports is what the library computes."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from infsa_viz import load_model, preprocess
from infsa_viz.data import TEST_SIZE, test_split
from infsa_viz.images import decode_image
from infsa_viz.maps import attribute_images
from infsa_viz.overlay import colour_scale
from infsa_viz.preprocess import prepare
from infsa_viz.spectral import expected_visits

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


def _shown(markdown: str) -> str:
    """Markdown text as the reader sees it: backslash escapes (the app escapes names) resolved."""
    return re.sub(r"\\(.)", r"\1", markdown)


def _captions(at) -> list[str]:
    """Captions of the overlays (not of the model-input images); a compact tile's alternative text,
    as the reader sees them."""
    return [_shown(i.caption or i.alt) for image in at.image for i in image.proto.imgs
            if not (i.caption or i.alt).endswith(": model input")]


def _figures(at) -> str:
    """The side-by-side page's table of per-map figures (markdown)."""
    (table,) = [m.value for m in at.markdown if m.value.startswith("| model | MoRF-AOC")]
    return _shown(table)


def test_side_by_side_renders_every_model(shipped_models):
    at = _app().run()
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    captions = _captions(at)
    assert captions == [e.label for e in shipped_models]
    assert {e.variant for e in shipped_models} <= {c.split(" · ")[0] for c in captions}
    rows = _figures(at).splitlines()[2:]
    assert [r.split(" | ")[0].lstrip("| ") for r in rows] == [e.label for e in shipped_models]
    assert any("all: higher is better" in m.value for m in at.markdown)
    assert {b.label for b in at.get("download_button")} >= {"Overlays (PNG)", "Raw maps (NPZ)", "Figures (CSV)",
                                                            "Figures (JSON)"}
    assert sum("predicts **digit" in m.value and "(p = 0." in m.value for m in at.markdown) == len(shipped_models)
    assert at.selectbox(key="layer").disabled is False  # attention reads one layer
    assert len(at.get("html")) >= 2  # the page's style and the shared colour bar


def test_first_screen_shows_an_image_every_model_gets_right(shipped_models):
    at = _app().run()
    index = at.number_input(key="image_number").value - 1  # numbered from 1
    split, models = test_split(), [load_model(m.path).eval() for m in shipped_models]
    with torch.no_grad():
        right = np.logical_and.reduce([m(prepare(m.config, split.images[:64]).tensor).argmax(-1).numpy()
                                       == split.labels[:64] for m in models])
    assert index == int(np.argmax(right))
    assert sum(":green[correct]" in m.value for m in at.markdown) == len(shipped_models)
    assert "n/a" not in _figures(at).split("\n")[2].split(" | ")[1]  # MoRF-AOC defined: each predicts the label


def test_side_by_side_method_and_image_change(shipped_models):
    at = _app().run()
    at.selectbox(key="method").set_value("perron").run()
    _ok(at)
    assert any("**perron**" in _shown(c.value) for c in at.caption)
    at.selectbox(key="head").set_value(0).run()
    at.number_input(key="image_number").set_value(7).run()
    _ok(at)
    assert any("test image #7" in _shown(c.value) for c in at.caption)
    assert len(_captions(at)) == len(shipped_models)
    at.button(key="next_image").click().run()
    assert any("test image #8" in _shown(c.value) for c in at.caption)
    at.button(key="previous_image").click().run()
    at.button(key="previous_image").click().run()
    assert any("test image #6" in _shown(c.value) for c in at.caption)


def test_model_selection_and_another_model_directory(tmp_path, shipped_models, monkeypatch):
    at = _app().run()
    at.multiselect(key="models").unselect(shipped_models[0].path).run()
    _ok(at)
    assert _captions(at) == [e.label for e in shipped_models[1:]]
    at.text_input(key="extra_model").input(str(tmp_path / "missing")).run()
    _ok(at)  # outside every folder the server was started with: refused, in words that say nothing of the disk
    (refused,) = [_shown(e.value) for e in at.sidebar.error]
    assert "not a model this server offers" in refused and "does not exist" not in refused
    monkeypatch.setenv("INFSA_VIZ_MODEL_ROOTS", str(tmp_path))  # a declared root: its paths may be typed
    at = _app().run()
    at.text_input(key="extra_model").input(str(tmp_path / "missing")).run()
    _ok(at)
    assert any("does not exist" in _shown(e.value) for e in at.sidebar.error)
    at.multiselect(key="models").unselect(shipped_models[0].path).run()
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
    at.radio(key="spectrum_axis").set_value("log").run()
    at.slider(key="spectrum_top_k").set_value(5).run()
    _ok(at)
    assert len(at.get("plotly_chart")) == len(shipped_models)
    assert sum("absorbing-chain reading holds on" in _shown(c.value) for c in at.caption) == len(shipped_models)


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
def test_curves_page_renders_and_follows_the_image():
    at = _app().run()
    at.switch_page("views/curves.py").run()
    _ok(at)
    assert {c.key for c in at.get("plotly_chart")} >= {"perturbation_curves", "roc_curves", "pr_curves"}
    if (ROOT / "metrics" / "attention-quality.json").is_file():  # one row's protocol, picked by a selectbox
        rows = at.selectbox(key="protocol_row")
        rows.set_value(len(rows.options) - 1).run()
        _ok(at)
    at.number_input(key="image_number").set_value(3).run()
    _ok(at)
    assert any("test image #3" in _shown(c.value) for c in at.caption)
    at.button(key="random_image").click().run()
    _ok(at)
    assert 1 <= at.number_input(key="image_number").value <= TEST_SIZE


def test_only_misclassified_browses_errors(shipped_models):
    at = _app().run()
    at.checkbox(key="only_wrong").check().run()
    _ok(at)
    assert at.error or len(_captions(at)) == len(shipped_models)  # a perfect model says so in an error box
    assert at.number_input(key="wrong_number").label.startswith("Misclassified image (1 … ")


def test_misclassified_browsing_shows_the_chosen_models_errors_in_order(shipped_models):
    model_dir = shipped_models[-1].path
    at = _app().run()
    at.checkbox(key="only_wrong").check().run()
    at.selectbox(key="wrong_model").set_value(model_dir).run()
    at.number_input(key="wrong_number").set_value(4).run()  # the 4th error
    _ok(at)
    split = test_split()
    model = load_model(model_dir).eval()
    with torch.no_grad():
        predicted = model(prepare(model.config, split.images).tensor).argmax(-1).numpy()
    wrong = np.flatnonzero(predicted != split.labels)  # the model's errors, ascending
    assert f"Image: test image #{int(wrong[3]) + 1}." in _shown(at.caption[0].value)
    assert at.number_input(key="wrong_number").label == f"Misclassified image (1 … {len(wrong)})"


def test_figures_toggle_hides_and_shows_the_per_map_figures(shipped_models):
    at = _app().run()
    assert len(_figures(at).splitlines()) == 2 + len(shipped_models)
    at.toggle(key="badges").set_value(False).run()
    _ok(at)
    assert not any(m.value.startswith("| model | MoRF-AOC") for m in at.markdown)
    assert len(_captions(at)) == len(shipped_models)  # the overlays stay


def test_bad_upload_shows_an_error_not_an_exception():
    at = _app().run()
    at.radio(key="image_set").set_value("upload").run()
    _ok(at)
    assert at.info  # asks for a file
    assert at.get("file_uploader")[0].proto.type == [".png", ".jpg", ".jpeg"]  # the browser offers PNG/JPEG only
    at.file_uploader(key="upload").set_value(("notes.png", b"this is not an image", "image/png")).run()
    _ok(at)
    assert any("not a readable image" in e.value for e in at.error), [e.value for e in at.error]
    assert not at.image


def _details(at) -> dict:
    """The side-by-side page's "What each map is" JSON, by model label."""
    (details,) = [json.loads(j.value) for j in at.json]
    return details


@torch.no_grad()
def _logits(model_dir: str, images, resize: str | None = None) -> np.ndarray:
    model = load_model(model_dir).eval()
    config = model.config
    if resize is not None:
        config = dataclasses.replace(config, preprocessing=dataclasses.replace(config.preprocessing, resize=resize))
    return model(prepare(config, images).tensor)[0].numpy()


def test_shared_scale_is_computed_on_the_maps_drawn(shipped_models):
    at = _app().run()
    at.number_input(key="image_number").set_value(12).run()  # numbered from 1: index 11
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    assert at.radio(key="scale").value == "shared"
    assert any(c.value.startswith("One colour scale for all maps (share of the map's absolute mass)")
               and "clipped at the 99th percentile" in _shown(c.value) for c in at.caption)
    details = _details(at)
    maps = []
    for m in shipped_models:
        model = load_model(m.path)
        x = preprocess(model, test_split().images[11:12])
        maps.append(attribute_images(model, x, "attention", **details[m.label]["options"]).maps[0])
    scale = colour_scale(maps, "shared", clip=99)
    cells = sum(m.numel() for m in maps)
    for i, m in enumerate(shipped_models):
        colour = details[m.label]["colour"]
        assert (colour["mode"], colour["signed"], colour["clip"]) == ("shared", False, 99.0)
        np.testing.assert_allclose(colour["divisor"], scale.divisors[i], rtol=1e-6)
        np.testing.assert_allclose(colour["limits"], scale.limits[i], rtol=1e-6, atol=1e-9)
    top = np.concatenate([scale.normalised(i, maps[i]).ravel() for i in range(len(maps))])
    assert float((top >= 1.0).mean()) <= 0.01 + 1 / cells  # the 99th percentile: about 1 % at the top colour


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
    at.number_input(key="image_number").set_value(6).run()  # numbered from 1: index 5
    _ok(at)
    assert any("test image #6" in _shown(c.value) for c in at.caption)
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
    index = at.number_input(key="image_number").value - 1  # numbered from 1
    assert [d["target"] for d in _details(at).values()] == [int(test_split().labels[index])] * len(shipped_models)
    at.radio(key="image_set").set_value("upload").run()
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
    at.radio(key="image_set").set_value("upload").run()
    at.file_uploader(key="upload").set_value(("square.png", png, "image/png")).run()
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    assert len(_captions(at)) == len(shipped_models)
    details = _details(at)
    image = decode_image(png, name="square.png")
    assert at.radio(key="upload_fit").value == "model's own"  # each model's own preprocessing by default
    for m in shipped_models:
        np.testing.assert_allclose(details[m.label]["logits"], _logits(m.path, [image]), rtol=0, atol=1e-6)
    assert "label" not in at.selectbox(key="target").options  # an upload has no label to explain
    warnings = [w.value for w in at.warning]
    assert sum("aspect ratio 1.44 is stretched" in w for w in warnings) == 1  # said once, for every model
    assert len(warnings) == len(set(warnings))
    at.radio(key="upload_fit").set_value("letterbox").run()
    _ok(at)
    details = _details(at)
    for m in shipped_models:
        np.testing.assert_allclose(details[m.label]["logits"], _logits(m.path, [image], resize="pad"),
                                   rtol=0, atol=1e-6)
    summaries = [c.value for c in at.caption if "130×90 RGB → 48×48 gray" in c.value]
    assert len(summaries) == len(shipped_models) and all("padded to a square" in c for c in summaries)
    assert not any("aspect ratio" in w.value for w in at.warning)


def test_class_picker_top_k_and_disabled_controls(shipped_models):
    at = _app().run()
    assert at.selectbox(key="target").disabled  # attention explains no class
    at.selectbox(key="method").set_value("rollout").run()
    assert at.selectbox(key="layer").disabled and "Disabled" in at.selectbox(key="layer").help
    at.selectbox(key="method").set_value("input_x_gradient").run()
    at.selectbox(key="target").set_value("top 2").run()
    _ok(at)
    index = at.number_input(key="image_number").value - 1  # numbered from 1
    image = test_split().images[index:index + 1]
    for m in shipped_models:  # the second most probable class of each model
        assert _details(at)[m.label]["target"] == int(np.argsort(-_logits(m.path, image), kind="stable")[1])
        assert _details(at)[m.label]["colour"]["signed"] and _details(at)[m.label]["colour"]["colormap"] == "rdbu"
    assert any("diverging, white = 0" in _shown(c.value) for c in at.caption)


def test_clip_slider_sets_the_percentile():
    at = _app().run()
    at.slider(key="clip").set_value(100.0).run()
    _ok(at)
    assert {d["colour"]["clip"] for d in _details(at).values()} == {None}
    assert any("no clipping" in _shown(c.value) for c in at.caption)


def test_methods_by_models_grid_has_one_scale_per_row(shipped_models):
    at = _app().run()
    at.switch_page("views/grid.py").run()
    at.multiselect(key="grid_methods").set_value(["attention", "visits"]).run()
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    captions = _captions(at)
    assert captions == [f"{method} · {m.label}" for method in ("attention", "visits") for m in shipped_models]
    assert all(image.proto.imgs[0].url.endswith(".png") for image in at.image)  # drawn pixels, not JPEG
    assert not any(image.proto.imgs[0].caption for image in at.image)  # compact: the header names the models
    assert sum("infsa-colour-bar" in h.proto.body for h in at.get("html")) == 2  # one colour bar per row
    at.toggle(key="grid_compact").set_value(False).run()
    _ok(at)
    assert sum(c.value.startswith("One colour scale for all maps") for c in at.caption) == 2


def test_attention_page_reads_the_chosen_token(shipped_models):
    at = _app().run()
    at.switch_page("views/attention.py").run()
    _ok(at)
    assert any("query: **CLS**" in _shown(c.value) for c in at.caption)
    assert len(_captions(at)) == 4 * len(shipped_models)  # every model side by side
    at.multiselect(key="attention_models").set_value([shipped_models[-1].path]).run()
    at.number_input(key="query_token").set_value(7).run()
    _ok(at)
    assert any("patch (row 1, col 0)" in _shown(c.value) for c in at.caption)  # 6 × 6 patches after the CLS token
    assert len(_captions(at)) == 4  # attention row, visits, Perron, and the layer × head grid
    line = next(m.value for m in at.markdown if "absorbing-chain reading on this token's row" in m.value)
    model = load_model(shipped_models[-1].path)
    from infsa_viz.model import capture_attention

    index = at.number_input(key="image_number").value - 1  # numbered from 1
    _, records = capture_attention(model, preprocess(model, test_split().images[index:index + 1]))
    A = records[-1].attention_matrix()[0].double().mean(0)  # (N, N) head mean of the last layer
    gamma = 0.9 if records[-1].rho is None else float(records[-1].rho.double().mean())
    assert f"γ·Σ_j A_tj = {gamma * float(A[7].sum()):.3f}" in line
    visits = expected_visits(A[None], gamma, start=7).visits[0]
    naive = torch.linalg.solve((torch.eye(len(A), dtype=A.dtype) - gamma * A).T, torch.eye(len(A), dtype=A.dtype)[7])
    torch.testing.assert_close(visits, naive)  # the reading shown is sᵀ(I − γA)⁻¹ from token 7


def test_gallery_filters_overlays_by_class_correctness_and_confidence(shipped_models):
    at = _app().run()
    at.switch_page("views/gallery.py").run()
    _ok(at)
    assert len(_captions(at)) == 24  # one page of overlays
    model = load_model(shipped_models[0].path).eval()
    split = test_split()
    with torch.no_grad():
        p = torch.softmax(model(prepare(model.config, split.images).tensor).double(), -1).numpy()
    at.radio(key="gallery_correct").set_value("wrong").run()
    at.selectbox(key="gallery_class").set_value(3).run()
    at.slider(key="gallery_confidence").set_value((0.2, 0.9)).run()
    at.selectbox(key="gallery_order").set_value("least confident").run()
    _ok(at)
    shown = [int(c.split(":")[0][1:]) - 1 for c in _captions(at)]  # captions number images from 1
    expected = np.flatnonzero((p.argmax(-1) != split.labels) & (split.labels == 3) & (p.max(-1) >= 0.2)
                              & (p.max(-1) <= 0.9))
    expected = expected[np.argsort(p.max(-1)[expected], kind="stable")][:24]
    assert shown == expected.tolist() and len(shown) > 0
    at.button(key=f"gallery_show_{shown[0]}").click().run()
    assert at.number_input(key="image_number").value == shown[0] + 1


def test_glossary_lists_every_method_and_figure():
    at = _app().run()
    at.switch_page("views/glossary.py").run()
    _ok(at)
    from infsa_viz.maps import METHODS

    (methods,) = [m.value for m in at.markdown if m.value.startswith("| method |")]
    assert [line.split(" | ")[0].lstrip("| ") for line in methods.splitlines()[2:]] == list(METHODS)
    assert any("| MoRF-AOC |" in m.value and "higher is better" in m.value for m in at.markdown)


def test_user_models_from_the_environment_and_a_broken_one(tmp_path, shipped_models, monkeypatch):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"attention": "softmax"}')
    (broken / "model.safetensors").write_bytes(b"not weights")
    monkeypatch.setenv("INFSA_VIZ_MODELS", os.pathsep.join([str(tmp_path), str(tmp_path / "nowhere")]))
    at = _app().run()
    options = at.multiselect(key="models").options
    assert any("broken" in o for o in options)
    warnings = [_shown(w.value) for w in at.sidebar.warning]
    assert "nowhere: not a directory" in warnings and "broken: does not load (ValueError)" in warnings
    assert all("\n" not in w for w in warnings) and not any(str(tmp_path) in w for w in warnings)
    assert str(broken.resolve()) not in at.multiselect(key="models").value  # not selected by default
    at.multiselect(key="models").select(str(broken.resolve())).run()
    _ok(at)  # not a crash: the page says once, in one line, that it does not load
    errors = [_shown(e.value) for e in at.error if "broken" in e.value]
    assert len(errors) == 1 and "broken does not load" in errors[0] and "\n" not in errors[0]
    assert len(_captions(at)) == len(shipped_models)
    at.switch_page("views/grid.py").run()  # never repeated per row
    _ok(at)
    assert len([e for e in at.error if "broken" in e.value]) == 1


def test_a_transformers_vit_directory_is_a_model_like_any_other(tmp_path, shipped_models, monkeypatch):
    pytest.importorskip("transformers")
    from tests.formats.test_hf import build_hf

    build_hf(tmp_path / "hf-vit")
    monkeypatch.setenv("INFSA_VIZ_MODELS", str(tmp_path))
    at = _app().run()
    (option,) = [o for o in at.multiselect(key="models").options if "hf-vit" in o]
    assert option.startswith("softmax · ")  # transformers ViTs are softmax models
    at.multiselect(key="models").select(option).run()
    _ok(at)
    assert not at.error, [e.value for e in at.error]
    assert option in _captions(at)  # drawn through its own RGB preprocessing beside the gray digit models


def test_rollout_head_fusion_and_discard_ratio_are_the_librarys(shipped_models):
    at = _app().run()
    at.selectbox(key="method").set_value("rollout").run()
    head = at.selectbox(key="head")
    assert head.label == "Head fusion" and list(head.options) == ["mean", "max", "min"] and not head.disabled
    head.set_value("max").run()
    at.select_slider(key="discard_ratio").set_value(0.5).run()
    _ok(at)
    index = at.number_input(key="image_number").value - 1  # numbered from 1
    model = load_model(shipped_models[0].path)
    expected = attribute_images(model, preprocess(model, test_split().images[index:index + 1]), "rollout", head="max",
                         discard_ratio=0.5)
    options = _details(at)[shipped_models[0].label]["options"]
    assert (options["head"], options["discard_ratio"]) == ("max", 0.5) and options == expected.options
    query = {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}
    assert (query["head"], query["discard"]) == ("max", "0.5")


def test_each_shown_map_is_computed_once_with_its_figures(shipped_models, monkeypatch):
    """Side by side draws each model's map and then scores the same map: one map computation per
    shown map (figures included), for a map of no class and for a class-explaining one."""
    import streamlit as st

    from infsa_viz.maps.base import MapMethod

    calls: list[str] = []
    original = MapMethod.attribute

    def counted(self, *args, **kwargs):
        calls.append(self.name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(MapMethod, "attribute", counted)
    st.cache_data.clear()
    at = _app().run()
    _ok(at)
    assert len(_figures(at).splitlines()) == 2 + len(shipped_models)  # the figures are shown
    assert calls == ["attention"] * len(shipped_models)
    calls.clear()
    at.selectbox(key="method").set_value("saliency").run()
    _ok(at)
    assert len(_figures(at).splitlines()) == 2 + len(shipped_models)
    assert calls == ["saliency"] * len(shipped_models)
