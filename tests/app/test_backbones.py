"""Real backbones in the app (AppTest), built here with transformers (random weights, ``save_pretrained``,
offline) by the builders of the library's tests: a DINOv2 with registers, whose register tokens the token
viewer shows apart from the class token and the patches, and a whole CLIP model with its tokenizer, whose
prompts typed in the sidebar become the classes every page explains."""

from __future__ import annotations

import numpy as np
import pytest

from infsa_viz import load_model
from infsa_viz.data import test_split
from infsa_viz.model import capture_attention
from infsa_viz.preprocess import prepare
from tests.app.test_apptest import _app, _ok, _shown

@pytest.fixture(scope="module")
def backbones(tmp_path_factory):
    """A folder holding ``dino-registers`` (4 registers, 2 × 2 patches, 5 classes) and ``clip`` (a whole
    CLIP model and its tokenizer)."""
    pytest.importorskip("transformers")
    from tests.formats.test_backbones import build_backbone
    from tests.test_zero_shot import build_clip

    root = tmp_path_factory.mktemp("backbones")
    build_backbone(root / "dino-registers", "dinov2-registers-classifier")
    build_clip(root / "clip")
    return root


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
