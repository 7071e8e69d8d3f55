"""``infsa-viz evaluate`` on the shipped models: the report is byte-identical to the committed one.

The golden files (``tests/commands/golden/evaluate-small.*``) were written by the code before the
statistics left the evaluation engine (:mod:`infsa_viz.stats`); a figure, interval, test or
protocol text that moves fails here. Where a change is meant to move them, rewrite the files with
``INFSA_VIZ_UPDATE_GOLDEN=1 python3 dev.py test tests/commands/test_evaluate_report.py`` and say
why in the commit.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infsa_viz.cli import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
#: Two shipped models, a map, the floor and the box ceiling, two metric groups: every report section
#: (rows with intervals, rankings, paired tests, benchmark quality, seeds, verdict) on six images.
ARGV = ["evaluate", "--models", "models/softmax-vit4,models/pure-infsa-vit4", "--methods", "attention,random,box_oracle",
        "--metrics", "perturbation,box_auc", "--n-images", "6", "--chunk", "4", "--threads", "1"]


@pytest.mark.slow
def test_a_small_report_is_byte_identical_to_the_committed_one(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the models as the README names them, so the command in the report is stable
    out = tmp_path / "r.json"
    assert main([*ARGV, "--out", str(out)]) == 0
    for suffix in (".json", ".csv"):
        found = out.with_suffix(suffix).read_text(encoding="utf-8").replace(str(tmp_path), "<out>")
        golden = GOLDEN / f"evaluate-small{suffix}"
        if os.environ.get("INFSA_VIZ_UPDATE_GOLDEN") == "1":
            golden.write_text(found, encoding="utf-8")
        assert found == golden.read_text(encoding="utf-8"), f"{golden.name} moved"
