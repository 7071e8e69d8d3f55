"""``bench_main(*argv)``: run ``python -m benchmarks`` in process (its exit code; reports go to ``--out``)."""

from __future__ import annotations

import pytest

from benchmarks import BENCH_COMMANDS, PROG, READS
from infsa_viz.cli import main


@pytest.fixture
def bench_main(monkeypatch):
    monkeypatch.setenv("INFSA_VIZ_PROGRESS", "0")

    def call(*argv: str) -> int:
        return main(list(argv), commands=BENCH_COMMANDS, prog=PROG, reads=READS)

    return call


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here runs a benchmark end to end (one process per case): marked slow."""
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.slow)
