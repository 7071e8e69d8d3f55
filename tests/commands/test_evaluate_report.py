"""``infsa-viz evaluate`` on the shipped models: the report equals the committed one — every text, key,
order and structure exactly, every number to one unit of its last printed digit (another CPU's BLAS may
round a figure the other way).

The golden files (``tests/commands/golden/evaluate-small.*``) were written by the code before the
statistics left the evaluation engine (:mod:`infsa_viz.stats`); a figure, interval, test or
protocol text that moves fails here. Where a change is meant to move them, rewrite the files with
``INFSA_VIZ_UPDATE_GOLDEN=1 python3 dev.py test tests/commands/test_evaluate_report.py`` and say
why in the commit.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path
from typing import Any

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
        expected = golden.read_text(encoding="utf-8")
        if suffix == ".json":
            _same(json.loads(found), json.loads(expected), golden.name)
        else:
            _same(list(csv.reader(io.StringIO(found))), list(csv.reader(io.StringIO(expected))), golden.name)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _last_digit(value: Any) -> float:
    """One unit of the last digit ``value`` is printed with (``0.67198`` -> ``1e-5``; 0 for integers)."""
    text = str(value)
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals) if "." in mantissa or exponent else 0.0


def _same(found: Any, expected: Any, where: str) -> None:
    """Equal structure, keys and order, texts exactly, numbers to a unit of the last printed digit (nan = nan)."""
    if isinstance(expected, dict):
        assert isinstance(found, dict) and list(found) == list(expected), f"{where}: keys moved"
        for key in expected:
            _same(found[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(found, list) and len(found) == len(expected), f"{where}: length moved"
        for i, (a, b) in enumerate(zip(found, expected, strict=True)):
            _same(a, b, f"{where}[{i}]")
    elif (b := _number(expected)) is not None and (a := _number(found)) is not None and type(found) is type(expected):
        assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1.01 * _last_digit(expected) + 1e-6 * abs(b), \
            f"{where}: {found!r} != {expected!r}"
    else:
        assert found == expected, f"{where}: {found!r} != {expected!r}"
