"""The examples run as a user runs them (smoke: they finish and print their figures)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
pytestmark = pytest.mark.slow  # each example is a fresh Python process over the shipped models
needs_models = pytest.mark.skipif(not (ROOT / "models" / "softmax-vit4" / "config.json").is_file(),
                                  reason="the shipped models are not in this checkout")


def run(script: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@needs_models
def test_metrics_example():
    out = run("metrics_for_a_model.py", "--n-images", "16", "--method", "attention")
    assert "MoRF-AOC" in out and "PR-AUC" in out


@needs_models
def test_compare_example(tmp_path):
    out = run("compare_maps.py", "--n-images", "8", "--index", "3", "--out", str(tmp_path / "c.png"))
    assert out.count("box PR-AUC") == 3 and (tmp_path / "c.png").stat().st_size > 1000
