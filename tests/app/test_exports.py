"""``app/exports.py``: the downloads keep every map and escape every text cell."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest


def test_npz_keeps_maps_whose_names_differ_only_in_punctuation(app):
    maps = {"softmax · attention": np.zeros((2, 2)), "softmax-attention": np.ones((2, 2)),
            "softmax/attention": np.full((2, 2), 2.0), "softmax-attention-2": np.full((2, 2), 3.0)}
    loaded = np.load(io.BytesIO(app.exports.maps_npz(maps)))
    assert len(loaded.files) == 4
    found = sorted(float(loaded[k][0, 0]) for k in loaded.files)
    assert found == [0.0, 1.0, 2.0, 3.0]


def test_table_csv_escapes_formulas(app):
    rows = [{"model": "=HYPERLINK(\"http://x\")", "layer": 0, "value": -0.5},
            {"model": "+1", "layer": 1, "value": 2.0, "note": "@SUM(A1)"},
            {"model": "\tx", "layer": 2, "value": 1.0}, {"model": "plain", "layer": 3, "value": 0.0}]
    read = list(csv.DictReader(io.StringIO(app.exports.table_csv(rows))))
    assert [r["model"] for r in read] == ["'=HYPERLINK(\"http://x\")", "'+1", "'\tx", "plain"]
    assert read[1]["note"] == "'@SUM(A1)" and read[0]["value"] == "-0.5"  # numbers stay numbers


@pytest.mark.slow
def test_no_server_path_in_any_link_file_name_or_export(tmp_path, shipped_models, make_config, monkeypatch):
    """A lab's server: a typed-in model under a model root and a named photo folder. The link, every
    download's file name and every export (PNG text, NPZ settings, CSV, JSON) name them by their short
    names, carry the settings and the link that reopens the view, and never the server's paths."""
    import json

    import cv2
    from streamlit.delta_generator import DeltaGenerator

    from infsa_viz import VisionTransformer, save_model
    from tests.app.test_apptest import _app, _ok

    server = tmp_path / "srv"
    save_model(VisionTransformer(make_config("linear_infsa")), server / "runs" / "mine")
    photos = server / "data" / "lab-photos"
    for name in ("cat", "dog"):
        (photos / name).mkdir(parents=True)
        cv2.imwrite(str(photos / name / "0.png"), np.full((40, 50, 3), 90, np.uint8))
    monkeypatch.setenv("INFSA_VIZ_MODEL_ROOTS", str(server / "runs"))
    monkeypatch.setenv("INFSA_VIZ_DATA", f"folder:photos={photos}")
    downloads: list[tuple[str, object]] = []
    monkeypatch.setattr(DeltaGenerator, "download_button",
                        lambda self, label, data, file_name=None, *a, **k: downloads.append((file_name, data)) or False)

    at = _app().run()
    at.text_input(key="extra_model").input(str(server / "runs" / "mine")).run()
    at.radio(key="image_set").set_value("folder:photos").run()
    _ok(at)
    downloads.clear()  # those of the first screen (the benchmark's images) do not count
    for page in ("views/compare.py", "views/intervention.py", "views/gallery.py", "views/curves.py",
                 "views/slice.py"):
        at.switch_page(page).run()
        _ok(at)
        query = {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}
        assert "runs/mine" in query["models"].split(",") and query["set"] == "folder:photos", query
        assert not any(str(server) in v for v in query.values()), query
    assert downloads
    for file_name, data in downloads:
        assert str(server) not in file_name and "/" not in file_name, file_name
        body = data() if callable(data) else data
        text = body.decode("latin-1") if isinstance(body, bytes) else body
        if file_name.endswith(".npz"):
            text = str(np.load(io.BytesIO(body))["settings"])
        elif file_name.endswith(".png"):
            assert b"tEXt" in body
        assert str(server) not in text and str(photos) not in text, file_name
        if file_name.endswith(".csv"):
            link, settings = text.splitlines()[:2]
            assert link.startswith("# link: /") and "set=folder%3Aphotos" in link
            assert json.loads(settings.removeprefix("# settings: "))["link"] == link.removeprefix("# link: ")
        if file_name.endswith((".settings.json", ".png", ".npz")) or file_name.endswith(".json"):
            assert "set=folder%3Aphotos" in text and "runs%2Fmine" in text, file_name
