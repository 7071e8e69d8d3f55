"""Reading the JSON reports in ``metrics/`` for display: tables of flat rows, chart series and the
figures they hold.

Every report (evaluation, training, eigencheck, benchmarks) is a JSON object whose top-level
lists of objects are tables (``results``, ``cases``, ``per_layer``, …); these helpers flatten
them for the app's reports page (or any notebook). A column is read as a
:class:`~infsa_viz.metrics.registry.Figure`: a metric's (the registry's declaration) or one of the
few report figures no metric declares (:data:`REPORT_FIGURES`: accuracy, probability, rank,
latency); :data:`REPORT_CHARTS` says which column of which report is charted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple, Sequence

from .metrics.declarations import Figure

__all__ = ["EXPECTED_REPORTS", "MAX_LIST_IN_TABLE", "REPORT_CHARTS", "REPORT_FIGURES", "RESULT_REPORTS", "ReportChart",
           "axis_title", "dataset_curves", "figure", "group_series", "metrics_files", "report_tables"]

#: Figures of models and reports that no metric declares (a metric's figures are in the registry).
REPORT_FIGURES: dict[str, Figure] = {f.name: f for f in (
    Figure("probability", "p(predicted)", None, "probability", percent=True, ranked=False,
           description="the model's softmax probability of its predicted class"),
    Figure("accuracy", "accuracy", True, "share of images", percent=True, ranked=False),
    Figure("test_accuracy", "test accuracy", True, "share of images", percent=True, ranked=False),
    Figure("mean_rank", "mean rank", False, "rank", ranked=False),
    Figure("latency_s", "latency", False, "s", ranked=False),
)}


class ReportChart(NamedTuple):
    """A chart of one report: its table, the x column, the y column (``None``: the reader picks one of
    the numeric columns, the first ranked metric figure first) and the column grouping the bars."""

    table: str
    x: str
    y: str | None
    group: str


#: Charts of the known reports: file stem (or prefix before ``-``) → its chart.
REPORT_CHARTS = {
    "training": ReportChart("results", "variant", "test_accuracy", "model"),
    "attention-quality": ReportChart("results", "method", None, "variant"),
    "eigencheck": ReportChart("per_layer", "layer", "left.mean", "variant"),
}
#: Reports about the models and maps (the others are the developers' benchmarks).
RESULT_REPORTS = ("training", "attention-quality", "verdict", "headroom", "eigencheck")
#: Reports a reader should find (a trailing ``*``: any report with that prefix).
EXPECTED_REPORTS = ("training", "attention-quality", "eigencheck-*")


def figure(name: str) -> Figure:
    """The declaration of a column: a metric's figure (by name or per-image key), a report figure,
    or, for an undeclared name, a plain descriptive one (a dotted column reads its last part)."""
    from .metrics.registry import FIGURES

    key = name.split(".")[-1]
    known = {**{f.key: f for f in FIGURES.values()}, **FIGURES, **REPORT_FIGURES}
    return known.get(key, Figure(key, key.replace("_", " "), None, "", ranked=False))


def axis_title(name: str) -> str:
    """``"MoRF-AOC (higher is better)"``: a column's label with its direction, for an axis."""
    declared = figure(name)
    return declared.label + ("" if declared.higher_is_better is None else f" ({declared.direction})")


def metrics_files(directory: str | Path) -> dict[str, Path]:
    """The ``*.json`` reports in ``directory`` by stem (empty if the folder is missing)."""
    directory = Path(directory)
    return {p.stem: p for p in sorted(directory.glob("*.json"))} if directory.is_dir() else {}


#: Lists longer than this (curves, per-head values) are left out of report tables.
MAX_LIST_IN_TABLE = 8


#: Keys left out of table rows: a row's full protocol and its curves are shown on their own.
NOT_IN_TABLE = ("protocol", "curves")


def _flat(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if not prefix and key in NOT_IN_TABLE:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            if len(value) <= MAX_LIST_IN_TABLE:
                out[name] = json.dumps(value)
        else:
            out[name] = value
    return out


def _uniform_columns(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Columns mixing text with numbers become text (tables need one type per column)."""
    mixed = {k for k in {k for r in rows for k in r}
             if len({isinstance(r[k], str) for r in rows if r.get(k) is not None}) > 1}
    return [{k: (json.dumps(v) if k in mixed and not isinstance(v, str) and v is not None else v)
             for k, v in r.items()} for r in rows]


def report_tables(report: Any) -> dict[str, list[dict[str, Any]]]:
    """Every top-level list of objects in a JSON report (``results``, ``cases``, ``per_layer``, …)
    as rows of flat dicts: nested objects become dotted columns, short lists JSON text, long lists
    are left out (and so are each row's ``protocol`` and ``curves``), and a column mixing text
    and numbers becomes text."""
    if not isinstance(report, dict):
        return {}
    return {key: _uniform_columns([_flat(r) for r in value]) for key, value in report.items()
            if isinstance(value, list) and value and all(isinstance(r, dict) for r in value)}


def group_series(rows: Sequence[dict[str, Any]], *, x: str, y: str, group: str | Sequence[str],
                 where: dict[str, Any] | None = None) -> dict[str, tuple[list[Any], list[Any]]]:
    """``{group label: (xs, ys)}`` from table rows, for one chart trace per group.

    Rows whose ``y`` is missing or ``None``, or that differ from ``where``, are skipped; a group of
    several columns is labelled ``"a · b · c"``.
    """
    columns = [group] if isinstance(group, str) else list(group)
    out: dict[str, tuple[list[Any], list[Any]]] = {}
    for row in rows:
        if row.get(y) is None or any(row.get(k) != v for k, v in (where or {}).items()):
            continue
        xs, ys = out.setdefault(" · ".join(str(row.get(c)) for c in columns), ([], []))
        xs.append(row.get(x))
        ys.append(row[y])
    return out


def dataset_curves(report: Any, method: str) -> list[dict[str, Any]]:
    """The mean curves of ``method`` in an attention-quality report, one entry per model.

    Returns:
        ``[{"model", "variant", "curves": {"fractions", "morf_mean", "lerf_mean", "recall",
        "precision_mean", ...}}]``, only for rows that carry curves.
    """
    rows = report.get("results", []) if isinstance(report, dict) else []
    return [{"model": r.get("model"), "variant": r.get("variant"), "curves": r["curves"]}
            for r in rows if isinstance(r, dict) and r.get("method") == method and isinstance(r.get("curves"), dict)]
