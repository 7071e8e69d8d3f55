"""``python -m benchmarks``: its own command table on infsa-viz's CLI, run from the repository root."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import BENCH_COMMANDS
from infsa_viz.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchmarks", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_commands_are_modules_with_add_arguments_and_run_and_not_infsa_viz_commands():
    assert set(BENCH_COMMANDS) == {"throughput", "maps", "morf", "profile", "reliability", "app-latency",
                                   "metric-cost", "backbones", "linalg"}
    assert not set(BENCH_COMMANDS) & set(COMMANDS)
    for module_path, _ in BENCH_COMMANDS.values():
        module = importlib.import_module(module_path)
        assert callable(module.add_arguments) and callable(module.run)


def test_help_lists_every_command():
    proc = _run("--help")
    assert proc.returncode == 0 and proc.stdout.startswith("usage: python -m benchmarks")
    assert [name for name in BENCH_COMMANDS if name not in proc.stdout] == []


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
def test_command_help_and_usage_errors():
    proc = _run("maps", "--help")
    assert proc.returncode == 0 and "--sides" in proc.stdout and "--threads" in proc.stdout
    proc = _run("maps")  # --out is required
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--out" in proc.stderr
    proc = _run("bench")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
