"""Safe loading stays proven: no pickle, torch.load, eval/exec or shell=True anywhere we ship or run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("infsa_viz", "app", "benchmarks", "scripts", "examples", "dev.py")
FORBIDDEN = {
    "torch.load": re.compile(r"\btorch\.load\s*\("),
    "pickle": re.compile(r"^\s*(import|from)\s+(c?pickle|dill|joblib|shelve)\b|\bpickle\.loads?\s*\("),
    "eval": re.compile(r"(?<![\w.])eval\s*\("),
    "exec": re.compile(r"(?<![\w.])exec\s*\("),
    "shell=True": re.compile(r"shell\s*=\s*True"),
    "numpy allow_pickle": re.compile(r"allow_pickle\s*=\s*True"),
}


def _sources() -> list[Path]:
    files = []
    for name in SCANNED:
        path = ROOT / name
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return files


def test_scanned_tree_is_not_empty():
    assert len(_sources()) > 50


@pytest.mark.parametrize("pattern", sorted(FORBIDDEN))
def test_no_unsafe_calls(pattern):
    hits = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
            for path in _sources() for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if FORBIDDEN[pattern].search(line)]
    assert not hits, f"{pattern} found:\n" + "\n".join(hits)


@pytest.mark.parametrize("line,pattern", [("x = torch.load(f)", "torch.load"), ("import pickle", "pickle"),
                                          ("y = eval(s)", "eval"), ("run(cmd, shell=True)", "shell=True")])
def test_the_scanner_finds_what_it_looks_for(line, pattern):
    assert FORBIDDEN[pattern].search(line)
    assert not FORBIDDEN["eval"].search("model.eval()")
