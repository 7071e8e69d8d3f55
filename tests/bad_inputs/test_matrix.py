"""The bad-input matrix (see ``cases.py``): every hostile input gets one clear line, exit 2 / ValueError."""

from __future__ import annotations

import pytest

from tests.bad_inputs.cases import all_cases, run_case
from tests.bad_inputs.fixtures import build

CASES = all_cases()


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    return build(tmp_path_factory.mktemp("hostile"))


def test_the_matrix_is_large_enough():
    assert len(CASES) >= 60


def test_every_reader_has_a_declared_size_bomb_under_the_memory_limit():
    from infsa_viz.formats import FORMATS

    bombs = {c.id for c in CASES if c.memory and c.id.startswith("info-bomb-")}
    for prefix in ("ours", "hf", "timm", "tv", "official"):  # one per reader of FORMATS
        assert any(b.startswith(f"info-bomb-{prefix}-") for b in bombs), prefix
    assert len(FORMATS) == 5


def _marks(case) -> list:
    marks = [pytest.mark.slow] if case.memory else []
    if not case.ci:  # covered by a faster unit test; the reliability benchmark runs it
        marks.append(pytest.mark.skip(reason="benchmark only: python -m benchmarks reliability"))
    if case.pending:  # another engineer's change; not run (a memory case would only wait for the allocator)
        marks.append(pytest.mark.xfail(reason=case.pending, run=False, strict=True))
    return marks


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c.surface}-{c.id}", marks=_marks(c)) for c in CASES])
def test_case(case, paths):
    outcome = run_case(case, paths)
    assert outcome.passed, f"{case.id}: {outcome.why}: {outcome.message!r}"
