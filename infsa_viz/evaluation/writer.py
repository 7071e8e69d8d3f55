"""The one writer of evaluation results: the JSON record, the CSV table, the per-image CSV and
a plotly HTML of the curves, each written atomically."""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path
from typing import Any, Sequence

from ..io import atomic_write, csv_cell, read_json, write_json
from ..metrics.registry import figures_of
from .engine import Evaluation
from .records import ImageRecord

__all__ = ["TABLE_COLUMNS", "read_report", "records_csv", "report", "rows_csv", "table_columns", "write_evaluation",
           "write_plotly_js"]

log = logging.getLogger(__name__)

#: Columns of every table before the figures, and after them.
_LEADING = ("model", "variant", "method", "n_images", "n_scored", "accuracy")
_TRAILING = ("box_undefined", "chain_valid_images", "chain_valid_rows", "sanity_fails", "passes_morf_fails_sanity",
             "mean_rank")


def table_columns() -> tuple[str, ...]:
    """Columns of the evaluation table, in order: the run's, every registered table figure (registry
    order), then counts and flags (the JSON rows hold more: curves and protocol)."""
    return (*_LEADING, *(f.name for f in figures_of() if f.table), *_TRAILING)


#: The table's columns for the metrics registered at import (see :func:`table_columns`).
TABLE_COLUMNS = table_columns()


def report(evaluation: Evaluation, *, command: str | None = None) -> dict[str, Any]:
    """The JSON record: run settings, data set, one row per (model, method) with its protocol, and
    the multi-criteria ``rankings`` and the comparisons (``paired_tests``, ``benchmark_quality``, ``seeds``)."""
    return {"protocol": {**evaluation.protocol, "command": command}, "dataset": evaluation.dataset,
            "results": evaluation.rows, "rankings": evaluation.rankings, **evaluation.comparisons}


def read_report(path: str | Path, *, parts: Sequence[str] = ("protocol", "dataset", "results"),
                dataset: str | None = None) -> dict[str, Any]:
    """A report :func:`write_evaluation` wrote, checked: a JSON object with ``parts`` (by default all of
    ``protocol``, ``dataset`` and ``results``), its ``results`` rows naming their model, variant and method;
    with ``dataset``, the report must say it was made on that data set (its ``dataset.name``: a
    benchmark's report saved under another benchmark's name is refused, not summarised as that one).

    Raises:
        ValueError: the file is missing, empty, not JSON, or not such a report (naming what is wrong).
    """
    if dataset is not None and "dataset" not in parts:
        parts = (*parts, "dataset")
    record = read_json(path)
    expected = f"expected an evaluation report (infsa-viz evaluate --out): an object with {', '.join(parts)}"
    if not isinstance(record, dict):
        raise ValueError(f"{path}: {expected}, got {type(record).__name__}")
    kinds = {"protocol": dict, "dataset": dict, "results": list}
    missing = [k for k in parts if not isinstance(record.get(k), kinds.get(k, object))]
    if missing:
        raise ValueError(f"{path}: {expected}; {missing} missing or of the wrong type")
    for i, row in enumerate(record.get("results", [])):
        if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in ("model", "variant", "method")):
            raise ValueError(f"{path}: results[{i}] is not a report row (expected 'model', 'variant' and 'method')")
    if dataset is not None and record["dataset"].get("name") != dataset:
        raise ValueError(f"{path}: a report of {record['dataset'].get('name')!r} data, read as {dataset!r}'s; "
                         "expected a report made on that data set (was a file copied or renamed?)")
    return record


def _csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_cell("" if v is None else json.dumps(v) if isinstance(v, (list, dict)) else v)
                         for k, v in row.items()})
    return buf.getvalue()


def rows_csv(rows: Sequence[dict[str, Any]]) -> str:
    """The summary table (:func:`table_columns`) as CSV text."""
    return _csv(rows, table_columns())


def records_csv(records: Sequence[ImageRecord]) -> str:
    """One CSV row per record: its scalars, logits as a JSON list (no curves); empty = undefined."""
    rows = [r.scalars() for r in records]
    columns = list(rows[0]) if rows else []
    return _csv(rows, columns)


def write_plotly_js(directory: str | Path) -> Path:
    """Write ``plotly.min.js`` into ``directory`` once, for HTML files that reference it there.

    The HTML reports load plotly.js from their own folder (works offline, and one 4.7 MB copy
    serves every report in ``metrics/`` instead of one embedded copy per file).
    """
    from plotly.offline import get_plotlyjs

    path = Path(directory) / "plotly.min.js"
    if not path.is_file():
        atomic_write(path, get_plotlyjs())
    return path


def evaluation_html(record: dict[str, Any]) -> str:
    """Interactive HTML of a :func:`report`; loads ``plotly.min.js`` from its own folder."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=2, subplot_titles=(
        "MoRF: p(f)/p(0), most relevant patches removed first (lower = better map)",
        "LeRF: p(f)/p(0), least relevant removed first (higher = better map)",
        "Precision-recall of target-box pixels (mean interpolated precision)",
        "Box PR-AUC by method"))
    from plotly.colors import qualitative

    # one colour per method, one dash per variant: 30 curves stay tellable apart (10 colours did not)
    methods = list(dict.fromkeys(r["method"] for r in record["results"]))
    variants = list(dict.fromkeys(r["variant"] for r in record["results"]))
    dashes = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
    for row in record["results"]:
        name = f"{row['variant']} · {row['method']}"
        curves = row["curves"]
        line = {"color": qualitative.Dark24[methods.index(row["method"]) % len(qualitative.Dark24)],
                "dash": dashes[variants.index(row["variant"]) % len(dashes)]}
        group = dict(legendgroup=name, name=name, line=line)
        if curves.get("morf_mean"):
            fig.add_trace(go.Scatter(x=curves["fractions"], y=curves["morf_mean"], mode="lines", **group), 1, 1)
            fig.add_trace(go.Scatter(x=curves["fractions"], y=curves["lerf_mean"], mode="lines", showlegend=False,
                                     **group), 1, 2)
        if curves.get("precision_mean"):
            fig.add_trace(go.Scatter(x=curves["recall"], y=curves["precision_mean"], mode="lines", showlegend=False,
                                     **group), 2, 1)
    for variant in sorted({r["variant"] for r in record["results"]}):
        rows = [r for r in record["results"] if r["variant"] == variant]
        fig.add_trace(go.Bar(x=[r["method"] for r in rows], y=[r.get("box_pr_auc") for r in rows], name=variant), 2, 2)
    fig.update_xaxes(title_text="fraction of patches removed", row=1)
    fig.update_xaxes(title_text="recall", row=2, col=1)
    fig.update_layout(height=900, title="infsa-viz evaluate: " + str(record.get("dataset", {}).get("name", "")))
    return fig.to_html(include_plotlyjs="directory", full_html=True)


def write_evaluation(evaluation: Evaluation, out: str | Path, *, command: str | None = None,
                     per_image: bool = False) -> list[Path]:
    """``out`` (.json) plus ``.csv`` (the table), ``.html`` (the curves; needs plotly, else
    skipped with a warning) and, with ``per_image``, ``.images.csv`` next to it."""
    out = Path(out)
    if out.suffix != ".json":
        raise ValueError(f"--out={str(out)!r} must end in .json (CSV and HTML are written next to it)")
    record = report(evaluation, command=command)
    paths = [write_json(out, record), atomic_write(out.with_suffix(".csv"), rows_csv(evaluation.rows))]
    if per_image:
        paths.append(atomic_write(out.with_suffix(".images.csv"), records_csv(evaluation.records)))
    try:
        import plotly  # noqa: F401
    except ImportError:
        log.warning("plotly is not installed: %s not written (pip install 'infsa-viz[app]')", out.with_suffix(".html"))
        return paths
    write_plotly_js(out.parent)
    paths.append(atomic_write(out.with_suffix(".html"), evaluation_html(record)))
    return paths
