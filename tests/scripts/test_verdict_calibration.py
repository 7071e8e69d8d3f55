"""scripts/verdict_calibration.py on a few replications: every setting, its JSON and the docs table."""

from __future__ import annotations

import json

import pytest

from scripts import verdict_calibration
from scripts.doc_sections import markers, read_section


def test_a_small_run_writes_every_setting_and_the_table(tmp_path):
    docs = tmp_path / "verdict.md"
    docs.write_text("\n".join(markers(verdict_calibration.SECTION)) + "\n", encoding="utf-8")
    argv = ["--replications", "20", "--power-replications", "10", "--coverage-replications", "4", "--n-images", "40",
            "--metrics", str(tmp_path), "--docs", str(docs)]
    assert verdict_calibration.main(argv) == 0
    record = json.loads((tmp_path / "verdict-calibration.json").read_text())
    rows = record["rows"]
    assert [(r["n_seeds"], r["seed_sd"]) for r in rows] == [(s, sd) for s in (6, 3) for sd in (0.0, 3.0, 6.0, 12.0)]
    assert set(rows[0]["null"]) == {"2", "20"} and set(rows[0]["power"]) == {"2/2", "2/5", "20/2", "20/5"}
    assert rows[0]["null"]["20"]["scenario"]["family"] == 20 and rows[0]["null"]["2"]["replications"] == 20
    table = read_section(docs, verdict_calibration.SECTION)
    assert table == verdict_calibration.table(record) and table.count("\n| 6 |") == 4
    assert verdict_calibration.main([*argv, "--tables-only"]) == 0


def test_bad_counts_exit_2(capsys):
    assert verdict_calibration.main(["--replications", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--replications=1" in err and len(err.splitlines()) == 1
