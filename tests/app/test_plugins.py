"""``app/plugins.py``: a plugin that fails to load, whatever it raises, is one line naming it (the others
load); what a plugin registers reaches the app's exports with no change to the app (the AppTest of the
whole plugin is tests/test_extending.py)."""

from __future__ import annotations

import csv
import io
import json
import sys

import pytest

from infsa_viz.evaluation import records_csv
from infsa_viz.plugins import _module_name
from tests.test_extending import _toy_model


@pytest.mark.parametrize("body,kind", [("raise SystemExit(3)", "SystemExit"),
                                       ("class Stop(BaseException): pass\nraise Stop('halt')", "Stop"),
                                       ("raise RuntimeError('broken')", "RuntimeError"),
                                       ("import no_such_module_here", "ModuleNotFoundError")])
def test_a_failing_plugin_is_named_in_one_line_and_the_others_load(app, tmp_path, body, kind):
    bad, good = tmp_path / "bad_plugin.py", tmp_path / "good_plugin.py"
    bad.write_text(body + "\n")
    good.write_text("LOADED = True\n")
    problems = app.plugins.load_plugins([str(bad), str(good)])
    assert len(problems) == 1 and str(bad) in problems[0] and kind in problems[0] and "\n" not in problems[0]
    assert sys.modules[_module_name(str(good))].LOADED
    assert _module_name(str(bad)) not in sys.modules  # a failed plugin is not half-registered


def test_a_plugin_raising_keyboard_interrupt_at_import_does_not_stop_the_app(app, tmp_path):
    plugin = tmp_path / "interrupted.py"
    plugin.write_text("raise KeyboardInterrupt\n")
    problems = app.plugins.load_plugins([str(plugin)])
    assert len(problems) == 1 and "interrupted.py" in problems[0] and "KeyboardInterrupt" in problems[0]


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
