"""A hostile link on every page (AppTest): out-of-range and NaN values, a server path as model,
markdown and HTML in every text parameter, a model whose folder and class names carry markup.
No exception, a notice, nothing outside the started models loaded, no text unescaped."""

from __future__ import annotations

import re

import pytest

from tests.app.test_apptest import _app, _captions, _ok, _shown

#: Markup that would format text, link or fetch an outside image if it reached markdown or HTML.
HOSTILE = "**zq**<img src=http://evil.example/zq.png>![zq](http://evil.example/zq.png):red[zq]$zq$[zq](x)"
#: What must never survive unescaped (checked after every backslash-escaped character is removed).
MARKERS = ("**zq**", "<img", "![zq]", "](http", ":red[zq]", "$zq$", "[zq](x)")
PAGES = ["compare", "grid", "intervention", "slice", "checks", "attention", "spectral", "gallery", "curves",
         "glossary"]


def _hostile_query(kind: str, outside: str, params: list[str]) -> dict[str, str]:
    """Every parameter of the app broken one way: ``markup`` (markdown and HTML), ``nan`` or
    ``range`` (numbers out of range; text parameters still carry markup)."""
    bad = {"markup": HOSTILE, "nan": "nan", "range": "-1e300"}[kind]
    query = {param: bad for param in params}
    query |= {"models": f"{outside},/etc,{HOSTILE}", "upload": HOSTILE, "alpha": "7" if kind == "range" else bad,
              "clip": "-1" if kind == "range" else bad}
    return query


def _texts(at) -> list[str]:
    """Every piece of text the page renders as markdown or HTML."""
    out = [e.value for kind in ("markdown", "caption", "error", "warning", "info", "success", "title", "header",
                                "subheader") for e in getattr(at, kind)]
    out += [i.caption or "" for image in at.image for i in image.proto.imgs]
    out += [h.proto.body for h in at.get("html")]
    return out


def _unescaped(text: str) -> list[str]:
    bare = re.sub(r"\\.", "", text)  # what escaping left as markup
    return [m for m in MARKERS if m in bare]


@pytest.fixture(scope="module")
def outside_model(tmp_path_factory):
    """A real model on the server's disk, outside every folder it was started with."""
    from infsa_viz import VisionTransformer, save_model
    from tests.conftest import tiny_config

    path = tmp_path_factory.mktemp("outside") / "secret-model"
    save_model(VisionTransformer(tiny_config("softmax")), path)
    return path


@pytest.mark.parametrize("kind", ["markup", "nan", "range"])
@pytest.mark.parametrize("page", PAGES)
def test_a_hostile_link_falls_back_with_notices_on_every_page(page, kind, outside_model, shipped_models, app):
    at = _app()
    at.query_params = _hostile_query(kind, str(outside_model), list(app.urlstate.PARAMS))
    at.switch_page(f"views/{page}.py")
    at.run()
    _ok(at)
    notices = [_shown(w.value) for w in at.main.warning]
    assert any(n.startswith("The link's models=") for n in notices), notices  # the server path: refused, said
    assert all("\n" not in n and len(n) <= 400 for n in notices)  # one line each, whole, a link's value cut short
    assert not any(str(outside_model.parent) in n for n in notices + [_shown(e.value) for e in at.error])
    chosen = at.multiselect(key="models").value
    assert sorted(chosen) == sorted(m.path for m in shipped_models)  # nothing outside the started models
    assert not at.text_input(key="extra_model").value
    assert not any("secret-model" in c for c in _captions(at))
    leaks = {text: _unescaped(text) for text in _texts(at) if _unescaped(text)}
    assert not leaks, leaks


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
def test_a_hostile_model_folder_and_class_names_are_shown_as_text(tmp_path, monkeypatch, shipped_models):
    transformers = pytest.importorskip("transformers")
    import torch

    names = [f"{HOSTILE} {i}" for i in range(3)]
    config = transformers.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=16, num_hidden_layers=1,
                                    num_attention_heads=2, intermediate_size=32, attn_implementation="eager",
                                    id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)})
    torch.manual_seed(0)
    folder = tmp_path / "zq**<img src=x>**"
    transformers.ViTForImageClassification(config).eval().save_pretrained(folder)
    monkeypatch.setenv("INFSA_VIZ_MODELS", str(tmp_path))
    at = _app().run()
    _ok(at)
    for page in ("compare", "grid", "intervention", "slice", "gallery"):
        at.switch_page(f"views/{page}.py").run()
        if page == "gallery":  # its overlays and captions: of the hostile model's own classes
            at.selectbox(key="gallery_model").set_value(str(folder.resolve())).run()
        _ok(at)
        texts = _texts(at)
        assert page == "slice" or any("zq" in t for t in texts), page  # the model is shown (a table: cells) …
        leaks = {text: _unescaped(text) for text in texts if _unescaped(text)}
        assert not leaks, (page, leaks)  # … as text
