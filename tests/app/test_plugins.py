"""What a plugin registers reaches the app's exports with no change to the app (the AppTest of the
whole plugin is tests/test_extending.py)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from infsa_viz.evaluation import records_csv
from tests.test_extending import _toy_model


def test_a_plugin_metric_is_in_the_exports_of_an_explained_map(app, toy_plugin, tmp_path):
    """The figures the app exports (CSV, JSON) are the records' figures: a metric the registry shows
    for single images is computed for every explained map, here of a model of the plugin's format."""
    entry = app.catalog.model_entry(_toy_model(tmp_path))
    assert entry.format == "toy" and entry.label == "softmax · m.toyvit"
    image = app.inputs.set_image(app.inputs.image_sets([entry], app.inputs.data_specs([], {}))[0], 0)
    explained = app.compute.explain(entry, image, "centre_bias", {}, "predicted")
    exported = json.loads(app.exports.records_json([explained.record]))[0]
    assert exported["map_peak"] == pytest.approx(explained.record.map_peak) and 0 < exported["map_peak"] <= 1
    assert "map_peak" in next(csv.reader(io.StringIO(records_csv([explained.record]))))
    assert "map peak" in app.draw.figures_table([(entry.label, explained.record)]).splitlines()[0]
