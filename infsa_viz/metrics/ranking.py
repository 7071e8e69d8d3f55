"""A multi-criteria summary: each method's rank on each metric, and its mean rank, per model."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["rank_methods"]


def _ranks(values: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """1 = best; ties share the mean of their ranks; ``nan`` values get ``nan``."""
    out = np.full(len(values), np.nan)
    finite = np.flatnonzero(np.isfinite(values))
    key = -values[finite] if higher_is_better else values[finite]
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    ranks = np.empty(len(finite))
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and sorted_key[j + 1] == sorted_key[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    out[finite] = ranks
    return out


def rank_methods(rows: Sequence[Mapping[str, Any]], *, criteria: Mapping[str, bool] | None = None,
                 group: str = "model") -> list[dict[str, Any]]:
    """Rank the methods of each ``group`` (default: per model) on each criterion present.

    Args:
        rows: summary rows with ``group``, ``"method"`` and the criteria's keys (``None`` or a
            missing key = not measured, left out of that criterion's ranking).
        criteria: key → higher is better (default: the ranked figures of every registered metric,
            :func:`~infsa_viz.metrics.registry.criteria`).

    Returns:
        One dict per row: ``{group, method, ranks: {criterion: rank}, mean_rank, n_criteria}``,
        rank 1 = best, ties share their mean rank; ``mean_rank`` over the criteria the method has.
    """
    if criteria is None:
        from .registry import criteria as registered

        criteria = registered()
    out: list[dict[str, Any]] = []
    for name in dict.fromkeys(r[group] for r in rows):
        members = [r for r in rows if r[group] == name]
        table: dict[str, np.ndarray] = {}
        for key, higher in criteria.items():
            values = np.array([math.nan if r.get(key) is None else float(r[key]) for r in members])
            if np.isfinite(values).sum() >= 2:
                table[key] = _ranks(values, higher)
        for i, r in enumerate(members):
            ranks = {k: float(v[i]) for k, v in table.items() if np.isfinite(v[i])}
            out.append({group: name, "method": r["method"], "ranks": ranks,
                        "mean_rank": round(float(np.mean(list(ranks.values()))), 4) if ranks else None,
                        "n_criteria": len(ranks)})
    return out
