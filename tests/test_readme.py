"""The README is a front door: short, toolkit first, and every command and snippet in it runs.

The Python snippet runs as it is; each ``infsa-viz`` command runs (outputs in a temporary folder);
each ``python3 dev.py`` command is checked by ``tests/app/test_readme_commands.py``.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAX_LINES = 150
QUICKSTART = ("python3 dev.py app", "python3 dev.py test")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def _commands() -> list[str]:
    return [line.split("  #")[0].strip() for block in _blocks("bash") for line in block.splitlines() if line.strip()]


def _section(title: str) -> list[str]:
    """The lines of a section, from its heading to the next heading (blank lines at its end left out)."""
    lines = README.splitlines()
    start = next(i for i, line in enumerate(lines) if line == title)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def test_the_readme_is_short_and_toolkit_first():
    lines = README.splitlines()
    assert len(lines) <= MAX_LINES, len(lines)
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[:4] == ["## Quickstart", "## In Python", "## The app", "## Command line"]
    for title in ("## Your own model", "## Supported backbones", "## Extending", "## Reliability",
                  "### Does a map follow a shortcut?"):
        assert title in lines, title  # where the lead adds the backbones, the shortcut answer, the table
    verdict = _section("## Are InfSA maps better than softmax maps?")
    assert len(verdict) <= 25 and "(docs/verdict.md)" in "\n".join(verdict)
    assert any(line.startswith("| benchmark (seeds) | variant − softmax |") for line in verdict)  # the calls
    for command in QUICKSTART:  # the two Quickstart commands, exactly
        assert any(line.startswith(command + " ") for line in _blocks("bash")[0].splitlines()), command
    (snippet,) = _blocks("python")
    assert len(snippet.strip().splitlines()) <= 15
    pages = [line for line in _section("## The app") if line.startswith("- **")]
    assert len(pages) == 10 and all(len(p) <= 140 for p in pages)  # one line each


def test_every_relative_link_of_the_readme_exists():
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", README):
        assert (ROOT / target).exists(), target


def test_the_python_snippet_runs():
    (snippet,) = _blocks("python")
    result = subprocess.run([sys.executable, "-c", "import torch; torch.set_num_threads(1)\n" + snippet],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    morf, box = result.stdout.splitlines()
    assert morf.startswith("MoRF-AOC ") and 0 <= float(morf.split()[-1]) <= 100
    assert box.startswith("box PR-AUC ") and 0 <= float(box.split()[-1]) <= 1


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
@pytest.mark.parametrize("command", [c for c in _commands() if c.startswith("infsa-viz ")])
def test_each_command_line_example_runs(command, tmp_path):
    argv = [a.replace("models/", f"{ROOT}/models/") if a.startswith("models/") or ",models/" in a else a
            for a in shlex.split(command)[1:]]
    argv = [a.replace(",models/", f",{ROOT}/models/") for a in argv]
    result = subprocess.run([sys.executable, "-m", "infsa_viz.cli", *argv, *(["--threads", "1"] if argv[0] != "info"
                                                                          else [])],
                            cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, (command, result.stderr[-2000:])
    if "--out" in argv:
        assert (tmp_path / argv[argv.index("--out") + 1]).is_file()
