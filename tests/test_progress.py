"""Progress bars: tqdm on a terminal, silent otherwise (infsa_viz/progress.py)."""

from __future__ import annotations

import io
import sys

from infsa_viz.progress import progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_quiet_when_stderr_is_not_a_terminal_or_without_a_description(monkeypatch):
    items = [1, 2, 3]
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress(items, desc="work") is items
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert progress(items) is items  # library inner loops name no bar
    monkeypatch.setenv("INFSA_VIZ_PROGRESS", "0")
    assert progress(items, desc="work") is items


def test_a_bar_on_a_terminal_yields_the_same_items(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.delenv("INFSA_VIZ_PROGRESS", raising=False)
    bar = progress(range(5), desc="work", unit="chunk")
    assert bar is not None and list(bar) == [0, 1, 2, 3, 4]
    assert list(progress([7], enabled=True)) == [7]
    assert progress([7], desc="x", enabled=False) == [7]
