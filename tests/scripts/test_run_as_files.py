"""Every maintainer script runs as a file (``python scripts/x.py``), the way its docstring says, not
only as a module: a script importing ``scripts.*`` must make the repository importable itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.name for p in (ROOT / "scripts").glob("*.py")
                 if p.name != "__init__.py" and "__main__" in p.read_text(encoding="utf-8"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_runs_as_a_file(script, tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / script), "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage" in done.stdout.lower()
