"""The app is a shell over the registries: no metric, figure or curve name is typed in ``app/``.

A figure the app shows, a column of its tables, an export field or a curve it draws comes from a
declaration in the metric registry (``Figure.image_format``, ``Metric.curves``); a name written in
``app/`` would be a missing field of a registry entry.
"""

from __future__ import annotations

import re
from pathlib import Path

from infsa_viz.metrics.registry import FIGURES, METRICS

APP = Path(__file__).resolve().parents[2] / "app"


def test_no_registered_name_is_written_in_the_app():
    names = ({f.name for f in FIGURES.values()} | {f.key for f in FIGURES.values()} | set(METRICS)
             | {c.name for m in METRICS.values() for c in m.curves}
             | {c.mean for m in METRICS.values() for c in m.curves if c.mean})
    found = []
    for path in sorted(APP.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for name in sorted(names):  # as a string ("morf_aoc") or an attribute (record.morf_aoc)
            for match in re.finditer(r"""(["'])%s\1|\.%s\b""" % (re.escape(name), re.escape(name)), text):
                found.append(f"{path.relative_to(APP)}:{text[:match.start()].count(chr(10)) + 1}: {name}")
    assert found == []
