"""Map benchmark: cases come from the registry (every method but the baselines, plus the InfSA reading);
a failed case is classified and skipped at larger sides."""

from __future__ import annotations

import signal
import subprocess

import pytest

from benchmarks import maps
from benchmarks.maps import GRADIENT_STEPS, map_cases
from infsa_viz.maps import METHODS


def test_cases_cover_every_registered_explanation_method():
    cases = map_cases()
    measured = {name for name, _ in cases}
    assert measured == {name for name, method in METHODS.items() if method.role == "explanation"}
    assert [name for name, _ in cases] == sorted((name for name, _ in cases), key=list(METHODS).index)
    for name, options in cases:
        method = METHODS[name]
        method.resolve(options)  # raises ValueError for an option the method does not take
        if options.get("matrix") == "infsa":
            assert "matrix" in method.defaults
        elif method.family == "gradient" and "n_steps" in method.defaults:
            assert options == {"n_steps": GRADIENT_STEPS}
        elif method.family == "gradient" and "steps" in method.defaults:  # TAM
            assert options == {"steps": GRADIENT_STEPS}
        else:
            assert options == {}


def test_the_state_of_the_art_baselines_are_measured():
    measured = {name for name, _ in map_cases()}
    assert {"chefer2021", "attn_lrp", "grad_cam", "tam", "attention_flow"} <= measured


def test_methods_with_a_matrix_option_are_also_measured_on_the_infsa_reading():
    with_matrix = [name for name, method in METHODS.items() if "matrix" in method.defaults]
    assert with_matrix  # visits, Perron, … read a matrix
    cases = map_cases()
    for name in with_matrix:
        assert cases.count((name, {})) == cases.count((name, {"matrix": "infsa"})) == 1


def _fake_run(returncode=0, stdout="", stderr="", raises=None):
    def fake(command, **kwargs):
        assert command[1:3] == ["-m", "benchmarks.maps"] and "PYTHONPATH" in kwargs["env"]
        if raises is not None:
            raise raises
        return subprocess.CompletedProcess(command, returncode, stdout, stderr)
    return fake


@pytest.mark.parametrize("fake, statuses", [
    (_fake_run(stdout='{"seconds": 0.5}'), ["ok", "ok"]),
    (_fake_run(raises=subprocess.TimeoutExpired("maps", 5)), ["timeout", "skipped"]),
    (_fake_run(returncode=-signal.SIGKILL), ["oom", "skipped"]),
    (_fake_run(returncode=1, stderr="Traceback\nMemoryError"), ["oom", "skipped"]),
    (_fake_run(returncode=1, stderr="Traceback\nImportError: no module"), ["error", "skipped"]),
])
def test_failures_are_classified_and_larger_sides_skipped(monkeypatch, fake, statuses):
    monkeypatch.setattr(maps, "map_cases", lambda: [("visits", {})])
    monkeypatch.setattr(maps.subprocess, "run", fake)
    rows = maps.run_map_benchmark(variants=("softmax",), sides=(64, 128), time_limit_s=5)
    assert [r["status"] for r in rows] == statuses and [r["tokens"] for r in rows] == [65, 257]
    if statuses[1] == "skipped":
        assert rows[1]["message"] == f"{statuses[0]} at a smaller size"


def test_every_variant_runs_every_case_at_every_side_in_order(monkeypatch):
    monkeypatch.setattr(maps.subprocess, "run", _fake_run(stdout='{"seconds": 0.5}'))
    rows = maps.run_map_benchmark(variants=("softmax", "linear_infsa"), sides=(32, 64), time_limit_s=5)
    assert [(r["variant"], r["method"], r["options"], r["side"]) for r in rows] == [
        (v, m, o, side) for v in ("softmax", "linear_infsa") for m, o in map_cases() for side in (32, 64)
    ]
    assert {r["status"] for r in rows} == {"ok"} and {r["seconds"] for r in rows} == {0.5}
    assert all(r["cost"] == METHODS[r["method"]].cost and r["cost"] for r in rows)  # forwards/backwards per image
