"""``app/exports.py``: the downloads keep every map and escape every text cell."""

from __future__ import annotations

import csv
import io

import numpy as np


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
