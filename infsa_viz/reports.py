"""Write evaluation reports: JSON (the record), CSV (the table) and a plotly HTML (the curves)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from .io import atomic_write, write_json

__all__ = ["TABLE_COLUMNS", "evaluation_csv", "evaluation_html", "write_evaluation", "write_plotly_js"]

#: Columns of the evaluation table, in order (the JSON rows hold more).
TABLE_COLUMNS = ("model", "variant", "method", "n_images", "n_scored", "accuracy", "morf_aoc", "lerf_auc",
                 "aopc", "box_roc_auc", "box_pr_auc", "pointing_game", "distractor_roc_auc", "box_undefined")


def evaluation_csv(report: dict[str, Any]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=TABLE_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in report["results"]:
        writer.writerow(row)
    return buf.getvalue()


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


def evaluation_html(report: dict[str, Any]) -> str:
    """Interactive HTML; loads ``plotly.min.js`` from its own folder (see :func:`write_plotly_js`)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=2, subplot_titles=(
        "MoRF: p(f)/p(0), most relevant patches removed first (lower = better map)",
        "LeRF: p(f)/p(0), least relevant removed first (higher = better map)",
        "Precision-recall of target-box pixels (mean interpolated precision)",
        "Box PR-AUC by method"))
    for row in report["results"]:
        name = f"{row['variant']} · {row['method']}"
        curves = row["curves"]
        group = dict(legendgroup=name, name=name)
        if curves.get("morf_mean"):
            fig.add_trace(go.Scatter(x=curves["fractions"], y=curves["morf_mean"], mode="lines", **group), 1, 1)
            fig.add_trace(go.Scatter(x=curves["fractions"], y=curves["lerf_mean"], mode="lines", showlegend=False,
                                     legendgroup=name, name=name), 1, 2)
        if curves.get("precision_mean"):
            fig.add_trace(go.Scatter(x=curves["recall"], y=curves["precision_mean"], mode="lines", showlegend=False,
                                     legendgroup=name, name=name), 2, 1)
    variants = sorted({r["variant"] for r in report["results"]})
    for variant in variants:
        rows = [r for r in report["results"] if r["variant"] == variant]
        fig.add_trace(go.Bar(x=[r["method"] for r in rows], y=[r["box_pr_auc"] for r in rows], name=variant), 2, 2)
    fig.update_xaxes(title_text="fraction of patches removed", row=1)
    fig.update_xaxes(title_text="recall", row=2, col=1)
    fig.update_layout(height=900, title="infsa-viz evaluate: " + str(report.get("dataset", {}).get("name", "")))
    return fig.to_html(include_plotlyjs="directory", full_html=True)


def write_evaluation(report: dict[str, Any], out: str | Path) -> list[Path]:
    """``out`` (.json) plus ``.csv`` and ``.html`` next to it; each written atomically."""
    out = Path(out)
    if out.suffix != ".json":
        raise ValueError(f"--out={str(out)!r} must end in .json (CSV and HTML are written next to it)")
    write_plotly_js(out.parent)
    paths = [write_json(out, report),
             atomic_write(out.with_suffix(".csv"), evaluation_csv(report)),
             atomic_write(out.with_suffix(".html"), evaluation_html(report))]
    return paths
