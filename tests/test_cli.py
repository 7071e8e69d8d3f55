"""CLI plumbing: help, version, exit codes, one-line errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from infsa_viz import __version__
from infsa_viz.cli import COMMANDS, main
from infsa_viz.model import VisionTransformer, save_model


def test_help_and_version(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert [name for name in COMMANDS if name not in out] == []
    assert main(["--version"]) == 0
    assert __version__ in capsys.readouterr().out


def test_no_command_and_unknown_command_exit_2(capsys):
    assert main([]) == 2
    assert main(["frobnicate"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_value_error_is_one_line_exit_2(capsys, tmp_path):
    assert main(["info", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "does not exist" in err


def test_debug_shows_the_traceback(capsys, tmp_path):
    assert main(["info", str(tmp_path / "missing"), "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_bad_threads_is_rejected(capsys, tmp_path):
    assert main(["info", str(tmp_path), "--threads", "0"]) == 2
    assert "--threads=0" in capsys.readouterr().err


def test_info_prints_config_and_rho(capsys, tmp_path, make_config):
    save_model(VisionTransformer(make_config("pure_infsa")), tmp_path)
    assert main(["info", str(tmp_path)]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["config"]["attention"] == "pure_infsa"
    assert info["rho"] == [[0.5, 0.5], [0.5, 0.5]]


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
def test_console_script_entry_point_runs_as_module():
    proc = subprocess.run([sys.executable, "-m", "infsa_viz", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "info" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "infsa_viz", "info", "/nonexistent/x"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_import_is_light():
    code = ("import sys, infsa_viz; bad = [m for m in ('streamlit', 'plotly', 'captum') if m in sys.modules];"
            "assert not bad, bad")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
