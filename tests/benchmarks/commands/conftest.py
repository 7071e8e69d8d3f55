"""``bench_main(*argv)``: run ``python -m benchmarks`` in process (its exit code; reports go to ``--out``)."""

from __future__ import annotations

import pytest

from benchmarks import BENCH_COMMANDS, PROG
from infsa_viz.cli import main


@pytest.fixture
def bench_main(monkeypatch):
    monkeypatch.setenv("INFSA_VIZ_PROGRESS", "0")

    def call(*argv: str) -> int:
        return main(list(argv), commands=BENCH_COMMANDS, prog=PROG)

    return call
