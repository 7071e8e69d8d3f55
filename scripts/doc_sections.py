"""Generated sections of a markdown file: text between ``<!-- BEGIN name -->`` and ``<!-- END name -->``.

The maintainer scripts that write a table into ``docs/`` (``scripts/verdict.py``,
``scripts/verdict_calibration.py``, ``scripts/paper_gap.py``) replace only their own section, so
the prose around it stays as written.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["VARIANT_NAMES", "markers", "read_section", "study_to_docs", "write_section"]

#: How the docs' tables name the attention variants.
VARIANT_NAMES = {"softmax": "softmax", "pure_infsa": "pure InfSA", "linear_infsa": "Linear-InfSA"}


def markers(name: str) -> tuple[str, str]:
    return f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"


def _bounds(text: str, name: str, path: Path) -> tuple[int, int]:
    begin, end = markers(name)
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start or text.count(begin) != 1:
        raise ValueError(f"{path} has no single section {name!r}; expected one '{begin}' ... '{end}' pair")
    return start + len(begin), stop


def read_section(path: str | Path, name: str) -> str:
    """The text of section ``name`` of ``path``, without the marker lines."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    start, stop = _bounds(text, name, path)
    return text[start:stop].strip("\n")


def write_section(path: str | Path, name: str, body: str) -> Path:
    """Replace section ``name`` of ``path`` with ``body`` (atomically).

    Raises:
        ValueError: ``path`` lacks the section's markers (or holds them twice).
    """
    from infsa_viz.io import atomic_write

    path = Path(path)
    text = path.read_text(encoding="utf-8")
    start, stop = _bounds(text, name, path)
    return atomic_write(path, text[:start] + "\n" + body.strip("\n") + "\n" + text[stop:])


def study_to_docs(path: Path, docs: Path, tables: Callable[[dict[str, Any]], dict[str, str]],
                  study: Callable[[], dict[str, Any]] | None) -> int:
    """Run ``study`` (unless ``None``: tables only) and write its record to ``path`` with its wall time
    (``protocol.seconds``), then write each of ``tables(record)``'s sections into ``docs``.

    Returns:
        0, or 2 after one line on stderr when a section or (with ``study=None``) the record is
        missing, or the study refuses its inputs (``ValueError``).
    """
    from infsa_viz.io import read_json, write_json

    try:
        if study is not None:
            start = time.perf_counter()
            record = study()
            record["protocol"]["seconds"] = round(time.perf_counter() - start, 1)
            write_json(path, record)
            print(f"wrote {path} ({record['protocol']['seconds']} s)", file=sys.stderr)
        for section, table in tables(read_json(path)).items():
            write_section(docs, section, table)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
