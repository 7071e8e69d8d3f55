"""The view in the URL: every choice is written to the query, a copied link reproduces the view,
values that do not fit the app are ignored."""

from __future__ import annotations

import pytest

from tests.app.test_apptest import _app, _captions, _details, _ok, _shown


def _query(at) -> dict[str, str]:
    return {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}


def test_the_url_follows_the_sidebar_and_a_copied_link_reproduces_the_view(shipped_models):
    at = _app().run()
    assert _query(at)["method"] == "attention" and _query(at)["image"] == str(at.number_input(key="image_number").value)
    at.multiselect(key="models").unselect(shipped_models[0].path).run()
    at.number_input(key="image_number").set_value(42).run()
    at.selectbox(key="method").set_value("saliency").run()
    at.selectbox(key="target").set_value("top 2").run()
    at.selectbox(key="colormap").set_value("viridis").run()
    at.slider(key="clip").set_value(97.5).run()
    _ok(at)
    query = _query(at)
    assert query["models"] == ",".join(m.name for m in shipped_models[1:])
    assert (query["image"], query["method"], query["class"], query["colormap"], query["clip"]) == \
        ("42", "saliency", "top 2", "viridis", "97.5")

    copy = _app()
    copy.query_params = dict(query)
    copy.run()  # a new session, as a reload or another browser
    _ok(copy)
    assert copy.number_input(key="image_number").value == 42
    assert copy.selectbox(key="method").value == "saliency" and copy.selectbox(key="target").value == "top 2"
    assert copy.selectbox(key="colormap").value == "viridis" and copy.slider(key="clip").value == 97.5
    assert _captions(copy) == _captions(at) == [m.label for m in shipped_models[1:]]
    assert _details(copy) == _details(at)  # the same maps, targets and colour scales


def test_values_that_do_not_fit_are_ignored(shipped_models):
    at = _app()
    at.query_params = {"models": "nope", "image": "abc", "method": "nope", "class": "zzz", "layer": "99",
                       "head": "7", "scale": "odd", "alpha": "x", "set": "elsewhere"}
    at.run()
    _ok(at)
    assert at.selectbox(key="method").value == "attention" and at.selectbox(key="target").value == "predicted"
    assert at.selectbox(key="layer").value == -1 and at.radio(key="scale").value == "shared"
    assert len(_captions(at)) == len(shipped_models)
    notices = [_shown(w.value) for w in at.main.warning]  # one line each, naming the parameter
    for param in ("image", "method", "class", "layer", "head", "scale", "alpha", "set"):
        assert sum(n.startswith(f"The link's {param}=") for n in notices) == 1, (param, notices)
    assert all(len(n) <= 400 and "\n" not in n for n in notices)  # one line each, whole (the fix is kept)
    (where,) = [n for n in notices if n.startswith("The link's set=")]
    assert where.endswith("(a folder is named when the server starts: -- --data folder:NAME=PATH); the default is shown.")


def test_a_link_to_an_upload_asks_for_the_file(shipped_models):
    at = _app()
    at.query_params = {"set": "upload", "upload": "cat.png"}
    at.run()
    _ok(at)
    assert at.radio(key="image_set").value == "upload"
    assert any("upload it again" in _shown(e.value) and "cat.png" in _shown(e.value) for e in at.error)


def test_a_model_typed_in_by_path_is_in_the_link_too(tmp_path, shipped_models, make_config, monkeypatch):
    from infsa_viz import VisionTransformer, save_model

    save_model(VisionTransformer(make_config("pure_infsa")), tmp_path / "mine")
    monkeypatch.setenv("INFSA_VIZ_MODEL_ROOTS", str(tmp_path))  # a folder whose models may be typed in
    at = _app().run()
    at.multiselect(key="models").set_value([shipped_models[0].path]).run()
    at.text_input(key="extra_model").input(str(tmp_path / "mine")).run()
    _ok(at)
    query = _query(at)
    # named by its root's short name and the path under it: the link shows nothing of the server's disk
    assert query["models"] == f"{shipped_models[0].name},{tmp_path.resolve().name}/mine"
    copy = _app()
    copy.query_params = dict(query)
    copy.run()
    _ok(copy)
    assert _captions(copy) == _captions(at) == [shipped_models[0].label, "pure_infsa · mine"]


def _round_trip(page: str, changes, check) -> None:
    """Change widgets on ``page``, open the resulting link in a new session, check the same state."""
    at = _app().run()
    at.switch_page(f"views/{page}.py").run()
    for change in changes:
        change(at)
        at.run()
    _ok(at)
    copy = _app()
    copy.query_params = _query(at)
    copy.switch_page(f"views/{page}.py")
    copy.run()
    _ok(copy)
    assert not copy.main.warning, [w.value for w in copy.main.warning]  # every value fits: no notice
    assert check(copy), dict(copy.query_params)


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
def test_every_pages_own_state_is_in_the_link(shipped_models):
    _round_trip("grid", [lambda at: at.multiselect(key="grid_methods").set_value(["visits", "saliency"]),
                         lambda at: at.toggle(key="grid_compact").set_value(False)],
                lambda c: c.multiselect(key="grid_methods").value == ["visits", "saliency"]
                and c.toggle(key="grid_compact").value is False)
    _round_trip("attention", [lambda at: at.number_input(key="query_token").set_value(9),
                              lambda at: at.multiselect(key="attention_models").set_value([shipped_models[1].path])],
                lambda c: (c.number_input(key="query_token").value, c.multiselect(key="attention_models").value)
                == (9, [shipped_models[1].path]))
    _round_trip("gallery", [lambda at: at.selectbox(key="gallery_order").set_value("least confident"),
                            lambda at: at.slider(key="gallery_confidence").set_value((0.1, 0.8)),
                            lambda at: at.number_input(key="gallery_page").set_value(2)],
                lambda c: (c.selectbox(key="gallery_order").value, c.slider(key="gallery_confidence").value,
                           c.number_input(key="gallery_page").value) == ("least confident", (0.1, 0.8), 2))
    _round_trip("spectral", [lambda at: at.radio(key="spectral_matrix").set_value("infsa"),
                             lambda at: at.slider(key="spectrum_top_k").set_value(5)],
                lambda c: (c.radio(key="spectral_matrix").value, c.slider(key="spectrum_top_k").value)
                == ("infsa", 5))
    _round_trip("intervention", [lambda at: at.multiselect(key="intervene_objects").set_value(["background"])],
                lambda c: c.multiselect(key="intervene_objects").value == ["background"])
    _round_trip("slice", [lambda at: at.select_slider(key="slice_images").set_value(100),
                          lambda at: at.multiselect(key="slice_metrics").set_value([]),
                          lambda at: at.selectbox(key="slice_correct").set_value("every model right")],
                lambda c: (c.select_slider(key="slice_images").value, c.selectbox(key="slice_correct").value)
                == (100, "every model right"))
    _round_trip("curves", [lambda at: at.toggle(key="developer_reports").set_value(True)],
                lambda c: c.toggle(key="developer_reports").value is True)
    _round_trip("compare", [lambda at: at.toggle(key="badges").set_value(False)],
                lambda c: c.toggle(key="badges").value is False)
    _round_trip("compare", [lambda at: at.selectbox(key="method").set_value("visits"),
                            lambda at: at.select_slider(key="gamma").set_value(0.5)],
                lambda c: (c.selectbox(key="method").value, c.select_slider(key="gamma").value) == ("visits", 0.5))
