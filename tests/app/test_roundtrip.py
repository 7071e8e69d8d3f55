"""Every widget of every page round-trips through the link.

Each scenario opens a page, sets widgets to values other than their defaults, and reopens the link
the app wrote in a new session (a reload, or a colleague's browser). The test walks the widget tree
AppTest builds and fails on any keyed widget whose value the reopened link does not restore, on
any widget that no URL parameter holds unless :data:`NOT_SETTINGS` says why, and on any setting
widget no scenario changes (a new widget must join a scenario). The links hold no server path.
"""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import pytest

from tests.app.test_apptest import _app, _ok

pytestmark = pytest.mark.slow

#: Widgets that are not a setting of the view, and why the link need not hold them.
NOT_SETTINGS = {
    "previous_image": "a button: it moves the image number, which the link holds",
    "next_image": "a button: it moves the image number, which the link holds",
    "random_image": "a button: it moves the image number, which the link holds",
    "upload": "a file: the link names it (upload=NAME) and asks for it again",
    "upload_fit": "shown with an upload only, which a link cannot carry (test_url: the link asks for the file)",
    "extra_model": "its model is in the link's models= (test_url: a model typed in is in the link)",
    "slice_open_button": "a button: it sets the image number, which the link holds",
}
#: Widget-key prefixes of buttons (download buttons are keyed ``<page>-<ext>``).
NOT_SETTING_PREFIXES = ("gallery_show_",)
DOWNLOAD_EXTS = ("-png", "-npz", "-csv", "-json", "-table.csv", "-settings.json")


def _walk(node):
    from streamlit.testing.v1.element_tree import Widget

    for child in getattr(node, "children", {}).values():
        if isinstance(child, Widget):
            yield child
        else:
            yield from _walk(child)


def _widgets(at) -> dict[str, object]:
    """Keyed widget → value, over the whole page (sidebar and main)."""
    from streamlit.testing.v1.element_tree import Button, DownloadButton

    out = {}
    for widget in _walk(at._tree):
        key = widget.key
        if key is None or isinstance(widget, (Button, DownloadButton)) or key.endswith(DOWNLOAD_EXTS):
            continue
        if key in NOT_SETTINGS or key.startswith(NOT_SETTING_PREFIXES):
            continue
        value = widget.value
        out[key] = list(value) if isinstance(value, tuple) else value
    return out


def _query(at) -> dict[str, str]:
    return {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}


def _widget(at, key: str):
    return next(w for w in _walk(at._tree) if w.key == key)


@pytest.fixture(scope="module")
def photos(tmp_path_factory) -> Path:
    """A folder of two photos (the Intervention page occludes a box on them)."""
    root = tmp_path_factory.mktemp("lab-data") / "photos"
    rng = np.random.default_rng(0)
    for name in ("cat", "dog"):
        (root / name).mkdir(parents=True)
        for i in range(2):
            cv2.imwrite(str(root / name / f"{i}.png"), rng.integers(0, 255, (40, 50, 3), dtype=np.uint8))
    return root


def _scenarios(models) -> dict[str, tuple[str | None, list[tuple[str, object]]]]:
    """Name → (page file, widgets set in order: key → value or a function of the widget)."""
    second = lambda w: next(o for o in w.options if o != w.value)  # noqa: E731  another option (values are names)
    return {
        "side by side": (None, [("models", [models[1].path, models[2].path]), ("image_number", 5),
                                ("method", "saliency"), ("target", "top 2"), ("colormap", "viridis"),
                                ("alpha", 0.7), ("scale", "raw"), ("clip", 97.5), ("show_boxes", False),
                                ("badges", False)]),
        "misclassified": (None, [("only_wrong", True), ("wrong_model", models[-1].path), ("wrong_number", 3)]),
        "grid": ("views/grid.py", [("method", "rollout"), ("head", "max"), ("discard_ratio", 0.5),
                                  ("grid_methods", ["attention", "rollout"]), ("grid_compact", False)]),
        "spectral": ("views/spectral.py", [("method", "visits"), ("layer", 1), ("head", 0), ("gamma", 0.5),
                                          ("spectral_matrix", "infsa"), ("spectrum_view", "sorted magnitudes"),
                                          ("spectrum_axis", "log"), ("spectrum_top_k", 10)]),
        "attention": ("views/attention.py", [("method", "integrated_gradients"), ("ig_steps", 8),
                                            ("baseline", 0.5), ("attention_models", [models[0].path]),
                                            ("query_token", 7)]),
        "intervention": ("views/intervention.py", [("intervene_objects", ["target"])]),
        "occlusion": ("views/intervention.py", [("image_set", "folder:photos"), ("image_number", 4),
                                                ("occlude_x", (0.1, 0.6)), ("occlude_y", (0.2, 0.9)),
                                                ("occlude_fill", "black")]),
        "gallery": ("views/gallery.py", [("gallery_model", models[1].path), ("gallery_class", 3),
                                        ("gallery_order", "most confident"), ("gallery_correct", "correct"),
                                        ("gallery_confidence", (0.2, 1.0)), ("gallery_page", 2)]),
        "slice": ("views/slice.py", [("slice_images", 100), ("slice_metrics", ["box_auc"]), ("slice_class", 3),
                                    ("slice_correct", "some model wrong"), ("slice_disagree", True),
                                    ("slice_figure", second),
                                    ("slice_range", lambda w: (w.min, w.max - (w.max - w.min) / 100)),
                                    ("slice_open", lambda w: int(w.options[1][1:]) - 1)]),
        "slice cue": ("views/slice.py", [("image_set", "cued-digits-p100"), ("slice_images", 100),
                                        ("slice_metrics", []), ("slice_cue", "conflicting")]),
        "checks": ("views/checks.py", [("checks_reference", models[1].path), ("checks_stage", second)]),
        "curves": ("views/curves.py", [("protocol_row", 1), ("developer_reports", True),
                                      ("chart-metric-*", second)]),
    }


#: Setting widgets no scenario changes, and why (each is still checked to round-trip where shown).
UNCHANGED: dict[str, str] = {}


def _set(at, key: str, value) -> None:
    if key.endswith("*"):
        for widget in [w for w in _walk(at._tree) if (w.key or "").startswith(key[:-1])]:
            widget.set_value(value(widget) if callable(value) else value)
            at.run()
        return
    widget = _widget(at, key)
    widget.set_value(value(widget) if callable(value) else value)
    at.run()


def test_every_widget_of_every_page_round_trips_through_the_link(shipped_models, photos, monkeypatch, app):
    if len(shipped_models) < 3:
        pytest.skip("needs the three shipped models")
    monkeypatch.setenv("INFSA_VIZ_DATA", f"folder:photos={photos}{os.pathsep}cued-digits-p100")
    urlstate = app.urlstate
    seen: dict[str, str] = {}
    changed: set[str] = set()
    for name, (page, steps) in _scenarios(shipped_models).items():
        at = _app().run()
        if page is not None:
            at.switch_page(page).run()
        defaults = _widgets(at)
        for key, value in steps:
            _set(at, key, value)
            _ok(at)
        values = _widgets(at)
        for key, _ in steps:
            keys = [k for k in values if k.startswith(key[:-1])] if key.endswith("*") else [key]
            assert keys, (name, key, "not shown")
            for k in keys:
                assert values[k] != defaults.get(k), (name, k, "the scenario left it at its default")
                changed.add(k)
        query = _query(at)
        assert not any(str(Path(p).parent) in v for v in query.values() for p in (str(photos), shipped_models[0].path)), \
            (name, query)  # no server path in the link
        copy = _app()
        copy.query_params = dict(query)
        copy.run()
        if page is not None:  # AppTest opens the default page; the link's page is its path
            copy.switch_page(page).run()
        _ok(copy)
        restored = _widgets(copy)
        for key, value in values.items():
            seen[key] = name
            assert urlstate.param_of(key) is not None, (name, key, "no URL parameter holds this widget")
            assert key in restored and restored[key] == value, (name, key, value, restored.get(key))
        assert not [w.value for w in copy.warning if "does not fit" in w.value], name
    left = set(seen) - changed - set(UNCHANGED)
    assert not left, f"setting widgets no scenario changes (add them to one): {sorted(left)}"


def test_the_prompts_and_the_prompt_explained_round_trip_through_the_link(backbones, monkeypatch, app):
    """A CLIP model's prompt box (shown only for a model that takes prompts, so apart from the scenarios
    above) and the prompt Explain class picks come back from the link, and every other widget with them."""
    monkeypatch.setenv("INFSA_VIZ_MODELS", str(backbones))
    at = _app()
    at.query_params.update(models="clip")
    at.run()
    assert _widgets(at)["prompts"] == ""
    for key, value in (("prompts", "a photo of a heron\na [dog] <b>\na bird"), ("method", "saliency"), ("target", 2)):
        _set(at, key, value)
        _ok(at)
    values = _widgets(at)
    assert values["prompts"].splitlines()[1] == "a [dog] <b>" and values["target"] == 2
    assert app.urlstate.param_of("prompts") == "prompts"
    copy = _app()
    copy.query_params = dict(_query(at))
    copy.run()
    _ok(copy)
    assert _widgets(copy) == values
    assert not copy.sidebar.error and not [w.value for w in copy.warning if "does not fit" in w.value]
