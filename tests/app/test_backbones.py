"""Real backbones in the app (AppTest), built here with transformers (random weights, ``save_pretrained``,
offline) by the builders of the library's tests: a DINOv2 with registers, whose register tokens the token
viewer shows apart from the class token and the patches, and a whole CLIP model with its tokenizer, whose
prompts typed in the sidebar become the classes every page explains."""

from __future__ import annotations

import numpy as np
import torch

from infsa_viz import load_model
from infsa_viz.data import test_split
from infsa_viz.model import capture_attention
from infsa_viz.preprocess import prepare
from tests.app.test_apptest import _app, _details, _ok, _shown

PROMPTS = ("a photo of a heron", "a photo of a dog", "a bird")


def _open(monkeypatch, root, model: str, **query):
    monkeypatch.setenv("INFSA_VIZ_MODELS", str(root))
    at = _app()
    at.query_params.update(models=model, image="1", **query)
    at.run()
    _ok(at)
    return at


def test_the_token_viewer_shows_the_registers_apart(backbones, monkeypatch):
    at = _open(monkeypatch, backbones, "dino-registers")
    at.switch_page("views/attention.py").run()
    _ok(at)
    assert any("0 class token · 1–4 registers · 5–8 patches (2 × 2)" in _shown(c.value) for c in at.caption)
    at.number_input(key="query_token").set_value(3).run()
    _ok(at)
    assert any("query: **register 3 of 4**" in _shown(c.value) for c in at.caption)
    (table,) = at.dataframe
    frame = table.value
    assert list(frame.columns) == ["layer", "CLS", "register 1 of 4", "register 2 of 4", "register 3 of 4",
                                   "register 4 of 4", "patches (total)"]
    model = load_model(backbones / "dino-registers").eval()
    _, records = capture_attention(model, prepare(model, test_split().images[:1]).tensor)
    for layer, record in enumerate(records):  # the head mean of the query's row, prefix tokens one by one
        row = record.attention_matrix()[0].double().mean(0)[3].numpy()  # (N,)
        expected = [*row[:5], row[5:].sum()]
        np.testing.assert_allclose(frame.iloc[layer, 1:].to_numpy(float), expected, atol=1e-6)
    at.number_input(key="query_token").set_value(6).run()
    assert any("query: **patch (row 0, col 1)**" in _shown(c.value) for c in at.caption)  # after the registers


def _prompted(at, text: str):
    at.text_area(key="prompts").input(text).run()
    _ok(at)
    return at


def test_prompts_become_the_classes_every_page_explains(backbones, monkeypatch):
    at = _open(monkeypatch, backbones, "clip")
    assert at.text_area(key="prompts").value == ""
    _prompted(at, "\n".join(PROMPTS))
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]
    at.selectbox(key="method").set_value("saliency").run()
    at.selectbox(key="target").set_value(1).run()
    _ok(at)
    (details,) = _details(at).values()
    assert details["target"] == 1
    from infsa_viz.zero_shot import text_embeddings, zero_shot

    model = zero_shot(load_model(backbones / "clip"), text_embeddings(backbones / "clip", PROMPTS))
    with torch.no_grad():
        expected = model(prepare(model, test_split().images[:1]).tensor)[0].numpy()
    np.testing.assert_allclose(details["logits"], expected, atol=1e-5)  # CLIP's image-text similarities
    assert any("predicts **a" in m.value for m in at.markdown)
    for page in ("grid", "intervention", "checks", "attention", "spectral", "curves"):
        at.switch_page(f"views/{page}.py").run()
        _ok(at)
        assert not at.error, (page, [e.value for e in at.error])


def test_prompts_from_the_user_are_escaped_and_bad_boxes_say_why(backbones, monkeypatch):
    at = _open(monkeypatch, backbones, "clip")
    _prompted(at, "a *heron* <b>x</b>\na [dog](http://example.com)")
    text = " ".join(m.value for m in at.markdown)  # each prompt shown is escaped: seen as typed, never markup
    assert r"\<b\>" in text or r"a \[dog\](http:\/\/example.com)" in text
    assert "<b>" not in text.replace(r"\<b\>", "") and "[dog](" not in text and "*heron*" not in text.replace(r"\*", "")
    for box, why in (("   \n  ", "only spaces"), ("\n".join(f"p{i}" for i in range(17)), "17 prompts: at most 16"),
                     ("x" * 201, "201 characters: at most 200"), ("a bird\na bird", "distinct")):
        _prompted(at, box)
        errors = [e.value for e in at.sidebar.error]
        assert len(errors) == 1 and why in errors[0], (box[:20], errors)
        assert not any("predicts **a bird" in m.value for m in at.markdown)


def test_a_text_embedding_file_gives_prompts_to_a_vision_tower(backbones, tmp_path, monkeypatch):
    """A CLIP vision tower without a text side takes the prompts of the server's text-embedding file
    (``-- --text-embeddings FILE``); a prompt the file lacks is said in one line, without the server's path."""
    from tests.formats.test_backbones import build_backbone

    from infsa_viz.zero_shot import save_text_embeddings, text_embeddings, zero_shot

    root = tmp_path / "models"
    build_backbone(root / "clip-vision", "clip-vision-projection")  # image embeddings of width 12, as the file's
    file = save_text_embeddings(tmp_path / "prompts.safetensors", text_embeddings(backbones / "clip", PROMPTS))
    monkeypatch.setenv("INFSA_VIZ_TEXT_EMBEDDINGS", str(file))
    at = _prompted(_open(monkeypatch, root, "clip-vision"), "a bird\na photo of a heron")
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]
    (details,) = _details(at).values()
    model = zero_shot(load_model(root / "clip-vision"), text_embeddings(file, ["a bird", "a photo of a heron"]))
    with torch.no_grad():
        expected = model(prepare(model, test_split().images[:1]).tensor)[0].numpy()
    np.testing.assert_allclose(details["logits"], expected, atol=1e-5)
    _prompted(at, "a cat")
    (error,) = [e.value for e in at.sidebar.error]
    assert "a cat" in error and "prompts.safetensors" in error and str(tmp_path) not in error
