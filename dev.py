#!/usr/bin/env python3
"""Quickstart driver: all set-up on a fresh machine with only python3.

    python3 dev.py app     # create .venv, install, launch the Streamlit app on the shipped models
    python3 dev.py test    # create .venv, install, run the test suite (CI runs exactly this)

Set-up is idempotent: the virtual environment in ``.venv`` is created once, and the project is
reinstalled only when ``pyproject.toml`` changes. PyTorch is pinned to the CPU wheel
``torch==2.13.0`` here (a bare ``torch`` requirement can pull a multi-GB CUDA build); set
``INFSA_VIZ_TORCH`` to another requirement (e.g. ``torch==2.5.1``) or to ``keep`` to use the
torch you already have in the environment.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".install-stamp"
TORCH = os.environ.get("INFSA_VIZ_TORCH", "torch==2.13.0")
QUANTUS = "quantus==0.6.0"


def _run(*cmd: str | Path) -> None:
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT)


def ensure_env() -> None:
    """Create ``.venv`` and install the project with every extra (app, captum, test), once per pyproject change."""
    if not PYTHON.exists():
        print(f"dev.py: creating {VENV}", file=sys.stderr)
        venv.EnvBuilder(with_pip=True).create(VENV)
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + (TORCH + QUANTUS).encode()).hexdigest()
    if STAMP.exists() and STAMP.read_text().strip() == want:
        return
    pip = (PYTHON, "-m", "pip", "install", "--disable-pip-version-check", "-q")
    if TORCH != "keep":
        _run(*pip, TORCH)
    _run(*pip, "-e", ".[app,captum,test]")
    # Test-only cross-check; --no-deps keeps opencv-python-headless (see pyproject's test extra).
    _run(*pip, "--no-deps", QUANTUS)
    STAMP.write_text(want + "\n")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("app", "test"):
        print(__doc__, file=sys.stderr)
        return 2
    ensure_env()
    command, rest = argv[0], argv[1:]
    if command == "test":
        return subprocess.call([str(PYTHON), "-m", "pytest", *rest], cwd=ROOT)
    if not any(a.split("=")[0] == "--server.address" for a in rest):  # this machine only, unless told otherwise
        rest = ["--server.address", "127.0.0.1", *rest]
    return subprocess.call([str(BIN / "streamlit"), "run", "app", *rest], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
