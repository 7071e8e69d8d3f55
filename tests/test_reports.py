"""Reading metrics reports for display: tables of flat rows and chart series (infsa_viz/reports.py)."""

from __future__ import annotations

import json

from infsa_viz.reports import dataset_curves, group_series, metrics_files, report_tables


def test_report_tables_flatten_lists_of_objects(tmp_path):
    report = {"protocol": {"n": 1}, "results": [], "names": ["a"],
              "per_layer": [{"layer": 0, "left": {"mean": 0.9}, "ids": [1, 2], "curve": list(range(50)), "g": 0.5},
                            {"layer": 1, "left": {"mean": 0.8}, "ids": [3], "curve": [], "g": [0.5, 0.25]}]}
    (tmp_path / "eigencheck-x.json").write_text(json.dumps(report))
    files = metrics_files(tmp_path)
    assert list(files) == ["eigencheck-x"]
    tables = report_tables(json.loads(files["eigencheck-x"].read_text()))
    assert tables == {"per_layer": [  # long lists left out, a column mixing numbers and text becomes text
        {"layer": 0, "left.mean": 0.9, "ids": "[1, 2]", "g": "0.5"},
        {"layer": 1, "left.mean": 0.8, "ids": "[3]", "curve": "[]", "g": "[0.5, 0.25]"}]}
    assert metrics_files(tmp_path / "missing") == {}
    assert report_tables([1, 2]) == {}


def test_a_rows_protocol_and_curves_stay_out_of_its_table_row():
    report = {"results": [{"method": "visits", "morf_aoc": 80.0, "curves": {"fractions": [0, 1]},
                           "protocol": {"evaluation": {"steps": 20}}}]}
    assert report_tables(report) == {"results": [{"method": "visits", "morf_aoc": 80.0}]}


def test_group_series_makes_one_trace_per_group():
    rows = [{"v": "a", "s": "x", "t": 1, "y": 0.1, "status": "ok"},
            {"v": "a", "s": "x", "t": 2, "y": 0.2, "status": "ok"},
            {"v": "b", "s": "x", "t": 1, "y": None, "status": "ok"},
            {"v": "b", "s": "x", "t": 2, "y": 9, "status": "oom"}]
    assert group_series(rows, x="t", y="y", group="v") == {"a": ([1, 2], [0.1, 0.2]), "b": ([2], [9])}
    assert group_series(rows, x="t", y="y", group=("v", "s"), where={"status": "ok"}) == {
        "a · x": ([1, 2], [0.1, 0.2])}


def test_dataset_curves_pick_the_method():
    curves = {"fractions": [0, 1], "morf_mean": [1, 0.2]}
    report = {"results": [{"model": "m", "variant": "softmax", "method": "visits", "curves": curves},
                          {"model": "m", "variant": "softmax", "method": "perron", "curves": curves},
                          {"model": "n", "variant": "pure_infsa", "method": "visits"}]}
    assert dataset_curves(report, "visits") == [{"model": "m", "variant": "softmax", "curves": curves}]
    assert dataset_curves(report, "random") == []
    assert dataset_curves(None, "visits") == []
