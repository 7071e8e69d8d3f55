from __future__ import annotations

import pytest

from infsa_viz.io import atomic_write, read_json, write_json


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "a" / "out.json"
    write_json(target, {"x": 1})
    write_json(target, {"x": 2})
    assert read_json(target) == {"x": 2}
    assert [p.name for p in target.parent.iterdir()] == ["out.json"]


def test_failed_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "f.txt"
    atomic_write(target, "old")
    with pytest.raises(TypeError):
        atomic_write(target, 123)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_read_json_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="file not found"):
        read_json(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="bad.json: not valid JSON"):
        read_json(tmp_path / "bad.json")


@pytest.mark.parametrize("text", ["=1+1", "+1", "-2", "@SUM(A1)", "\tx", "\rx", "=HYPERLINK(\"http://x\")"])
def test_csv_cells_that_start_like_a_formula_get_a_quote(text):
    from infsa_viz.io import csv_cell

    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["plain", "a=b", "", -0.5, 3, None, "[1, -2]"])
def test_other_csv_cells_stay_as_they_are(value):
    from infsa_viz.io import csv_cell

    assert csv_cell(value) == value
