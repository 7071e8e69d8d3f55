"""scripts/verdict_calibration.py on a few replications: every setting, its JSON and the docs table."""

from __future__ import annotations

import json
import shutil

import pytest

from scripts import verdict_calibration
from scripts.doc_sections import markers, read_section
from scripts.readme_tables import METRICS


def test_a_small_run_writes_every_setting_and_the_table(tmp_path):
    docs = tmp_path / "verdict.md"
    docs.write_text("\n".join(markers(verdict_calibration.SECTION)) + "\n", encoding="utf-8")
    shutil.copy(METRICS / "verdict.json", tmp_path / "verdict.json")  # the correlations are measured from it
    argv = ["--replications", "20", "--power-replications", "10", "--coverage-replications", "4", "--n-images", "40",
            "--metrics", str(tmp_path), "--docs", str(docs)]
    assert verdict_calibration.main(argv) == 0
    record = json.loads((tmp_path / "verdict-calibration.json").read_text())
    rows = record["rows"]
    assert [(r["n_seeds"], r["seed_sd"]) for r in rows] == [(s, sd) for s in (12, 6) for sd in (0.0, 1.0, 3.0, 6.0)]
    assert set(rows[0]["null"]) == {"2", "30"} and set(rows[0]["power"]) == {"2", "5", "detectable"}
    scenario = rows[0]["null"]["30"]["scenario"]
    assert scenario["family"] == 30 and (scenario["n_maps"], scenario["n_figures"]) == (5, 3)
    measured = record["protocol"]["correlations"]
    assert 0 <= scenario["model_correlation"] == measured["model_correlation"] <= scenario["figure_correlation"] <= 1
    assert rows[0]["power"]["detectable"]["scenario"]["difference"] == pytest.approx(rows[0]["detectable_difference"],
                                                                                    abs=1e-3)
    table = read_section(docs, verdict_calibration.SECTION)
    assert table == verdict_calibration.table(record) and table.count("\n| 12 |") == 4
    assert verdict_calibration.main([*argv, "--tables-only"]) == 0


def test_correlations_are_measured_between_the_comparisons_of_one_variant():
    """Two maps of one figure move together across seeds (correlation 1); across figures they move
    against each other (-1, clipped to 0)."""
    def comparison(figure, method, differences):
        return {"figure": figure, "method": method, "variant": "pure_infsa",
                "per_seed": [{"difference": d} for d in differences]}

    record = {"benchmarks": {"b": {"verdict": [comparison("morf_aoc", "attention", [1.0, 2.0, 3.0]),
                                               comparison("morf_aoc", "rollout", [2.0, 4.0, 6.0]),
                                               comparison("box_pr_auc", "attention", [3.0, 2.0, 1.0])]}}}
    measured = verdict_calibration.measured_correlations(record)
    assert measured["figure_correlation"] == 1.0 and measured["model_correlation"] == 0.0
    assert measured["pairs"] == {"same_figure": 1, "across_figures": 2} and measured["seeds"] == [3]
    # two groups of models (training settings) of one benchmark are different models: never paired
    other = [{**c, "group": "p100", "per_seed": [{"difference": d} for d in (5.0, 1.0, 9.0)]}
             for c in record["benchmarks"]["b"]["verdict"]]
    grouped = verdict_calibration.measured_correlations({"benchmarks": {"b": {"verdict": [
        {**c, "group": "p10"} for c in record["benchmarks"]["b"]["verdict"]] + other}}})
    assert grouped["pairs"] == {"same_figure": 2, "across_figures": 4}
    with pytest.raises(ValueError, match="no comparisons"):
        verdict_calibration.measured_correlations({"benchmarks": {}})


def test_bad_counts_exit_2(capsys):
    assert verdict_calibration.main(["--replications", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--replications=1" in err and len(err.splitlines()) == 1
