"""The multi-criteria ranking: ranks per model, ties, direction and missing values."""

from __future__ import annotations

import pytest

from infsa_viz.metrics import rank_methods


def test_ranks_per_model_with_ties_direction_and_gaps():
    rows = [
        {"model": "m", "method": "a", "x": 3.0, "y": 1.0},
        {"model": "m", "method": "b", "x": 3.0, "y": 2.0},
        {"model": "m", "method": "c", "x": 1.0, "y": None},
        {"model": "n", "method": "a", "x": 0.0, "y": 5.0},
        {"model": "n", "method": "b", "x": 1.0, "y": 4.0},
    ]
    out = {(r["model"], r["method"]): r for r in rank_methods(rows, criteria={"x": True, "y": False})}
    assert out["m", "a"]["ranks"] == {"x": 1.5, "y": 1.0}
    assert out["m", "b"]["ranks"] == {"x": 1.5, "y": 2.0}
    assert out["m", "c"]["ranks"] == {"x": 3.0} and out["m", "c"]["n_criteria"] == 1
    assert out["m", "a"]["mean_rank"] == pytest.approx(1.25)
    assert out["n", "b"]["ranks"] == {"x": 1.0, "y": 1.0}
