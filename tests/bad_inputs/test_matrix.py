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


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c.surface}-{c.id}", marks=[pytest.mark.slow] if c.memory else [])
                                  for c in CASES])
def test_case(case, paths):
    outcome = run_case(case, paths)
    assert outcome.passed, f"{case.id}: {outcome.why}: {outcome.message!r}"
