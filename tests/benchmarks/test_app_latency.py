"""``python -m benchmarks app-latency``: its background load and its options (the browser runs are
the benchmark itself; ``tests/app/test_browser.py`` drives the same server)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.app_latency import GOAL_LOAD, GOALS, LOADED_GOALS, BackgroundLoad

ROOT = Path(__file__).resolve().parents[2]


def test_the_background_load_runs_its_workers_and_ends_them():
    with BackgroundLoad(2) as load:
        procs = list(load.procs)
        assert len(procs) == 2 and all(p.poll() is None for p in procs)  # busy, running
    assert all(p.poll() is not None for p in procs) and not load.procs  # ended with the block
    with pytest.raises(ValueError, match="workers=-1"):
        BackgroundLoad(-1)


def test_the_goals_are_the_issues():
    assert GOALS["process_start_to_first_overlay_s"] == 5.0 and LOADED_GOALS["process_start_to_first_overlay_s"] == 8.0
    assert (GOALS["cached_method_switch_s"], GOALS["uncached_attention_switch_s"]) == (0.3, 0.6) and GOAL_LOAD == 4


def test_bad_options_are_one_line_and_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "app-latency", "--dev-runs", "-1", "--out",
                           str(tmp_path / "r.json")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    if "is missing" in proc.stderr:
        pytest.skip("no chromium: the options are checked after it")
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0 and "--dev-runs=-1" in proc.stderr
    assert not (tmp_path / "r.json").exists()
