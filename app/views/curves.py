"""Curves of the current image (every per-image curve a metric declares: MoRF / LeRF, box ROC /
PR, …) and the dataset-level reports in ``metrics/*.json``: the results a user reads first, the
benchmark reports of the developers on demand. What is drawn, and how, is read from the metric
registry (:class:`~infsa_viz.metrics.registry.Curve`) and :mod:`infsa_viz.reports`."""

from pathlib import Path

import streamlit as st

import catalog
import charts  # first: it waits for the warm-up imports (warmup.py) before plotly builds a figure
import compute
import exports
import plotly.graph_objects as go
import safe
import sidebar
import urlstate
from infsa_viz.metrics.registry import FIGURES, METRICS, criteria, image_metrics
from infsa_viz.reports import (
    EXPECTED_REPORTS,
    REPORT_CHARTS,
    RESULT_REPORTS,
    dataset_curves,
    group_series,
    metrics_files,
    report_tables,
)

#: Per chart, its curves with the metric that keeps them (the metrics the app computes per image).
CHARTS = {}
for _name in image_metrics():
    for _curve in METRICS[_name].curves:
        CHARTS.setdefault(_curve.chart, []).append((METRICS[_name], _curve))


def _title(curves) -> str:
    """A chart's title from its curves: their names (solid / dashed) and their figure's direction."""
    if len(curves) > 1:
        return " / ".join(f"{c.label} ({'dashed' if c.dash else 'solid'})" for _, c in curves)
    (_, curve), = curves
    figure = FIGURES.get(curve.figure) if curve.figure else None
    return curve.label + (f" ({figure.direction})" if figure is not None and figure.higher_is_better is not None else "")


def _axes(curve) -> dict:
    x_percent, y_percent = curve.percent
    return dict(xaxis_title=curve.x_label, yaxis_title=curve.y_label, xaxis_tickformat=".0%" if x_percent else None,
                yaxis_tickformat=".0%" if y_percent else None)


def _is_result(stem: str) -> bool:
    return any(stem == p or stem.startswith(p + "-") for p in RESULT_REPORTS)


def _report(stem: str, path: Path) -> None:
    try:
        report = compute.metrics_report(path)
    except ValueError as err:
        st.warning(str(err))
        return
    tables = report_tables(report)
    with st.expander(f"metrics/{path.name}", expanded=stem in ("training", "attention-quality")):
        chart = next((c for name, c in REPORT_CHARTS.items() if stem == name or stem.startswith(name + "-")), None)
        if chart and chart.table in tables:
            table, x, y, group = chart
            rows = tables[table]
            if y is None:  # choose the metric
                numeric = [k for k, v in rows[0].items() if isinstance(v, (int, float)) and not k.startswith("n_")]
                first = next((k for k in criteria() if k in numeric), None)
                if numeric:
                    urlstate.keep(f"chart-metric-{stem}", numeric, first or numeric[0])
                y = st.selectbox("Metric", numeric, key=f"chart-metric-{stem}") if numeric else None
            if y is not None:
                st.plotly_chart(charts.bars(rows, x, y, group), key=f"chart-{stem}")
        if "cases" in tables:  # benchmark: latency against tokens, log-log
            series = group_series(tables["cases"], x="tokens", y="latency_s", group=("section", "shape", "variant"),
                                  where={"status": "ok"})
            if series:
                st.plotly_chart(charts.lines(series, title="Latency against tokens", x="tokens (log)",
                                             y="latency (s, log; lower is better)", log=True), key=f"chart-{stem}")
        for name, rows in tables.items():
            st.caption(f"`{name}` ({len(rows)} rows)")
            st.dataframe(rows, key=f"table-{stem}-{name}", hide_index=True)
        rest = {k: v for k, v in report.items() if k not in tables} if isinstance(report, dict) else report
        if rest:
            st.caption("protocol and summary")
            st.json(rest, expanded=False)


sel = sidebar.selection()
st.title("Curves & reports")
sidebar.require_inputs(sel)
image = sel.image

st.header("This image")
results = sidebar.each_model(sel, compute.explain, sel.method, sel.options)
plots = {chart: go.Figure() for chart in CHARTS}
curves_rows: list[dict] = []  # every curve drawn, point by point, for the table export
for i, (entry, result) in enumerate(results):
    label, color = safe.html(entry.label), charts.colour(i)  # plotly reads a little HTML in legends
    if isinstance(result, str):
        st.error(safe.line(f"{safe.md(entry.label)}: {safe.md(result)}"))
        continue
    record = result.record
    for chart, curves in CHARTS.items():
        for metric, curve in curves:
            y = record.curves.get(curve.name)
            x = result.protocols.get(metric.name, {}).get(curve.x) if isinstance(curve.x, str) else curve.x
            if y is None or x is None or not (y == y).any():  # not measured for this image (e.g. no box)
                continue
            figure = FIGURES.get(curve.figure) if curve.figure else None
            value = f" ({figure.label} {figure.format_value(getattr(record, figure.key))})" if figure else ""
            plots[chart].add_scatter(x=list(x), y=list(y), mode="lines", name=f"{label} {curve.label}{value}",
                                     legendgroup=label, line=dict(color=color, dash="dash" if curve.dash else None))
            curves_rows += [{"model": entry.name, "variant": entry.variant, "curve": curve.name, "x": float(a),
                             "y": float(b)} for a, b in zip(x, y)]
for chart, curves in CHARTS.items():
    metrics = list(dict.fromkeys(m.name for m, _ in curves))
    st.caption(" ".join(f"**{c.label}**" for _, c in curves) + ": " + "; ".join(METRICS[m].rule for m in metrics)
               + f" (image {safe.md(image.source)}, method **{sel.method}**).")
    plot, first = plots[chart], curves[0][1]
    if not plot.data:
        st.info(f"Nothing to draw for {_title(curves)} on this image and these models (an upload, or an image of "
                "other classes, has no box).")
        continue
    if first.diagonal:
        plot.add_scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance", line=dict(dash="dot", color="gray"))
    st.plotly_chart(charts.layout(plot, entries=len(plot.data), title=_title(curves), **_axes(first)),
                    key=f"{chart}_curves")

if curves_rows:
    exports.buttons(exports.stem(image.base, "curves", sel.method), key="curves", table=lambda: curves_rows,
                    records=lambda: [r.record for _, r in results if not isinstance(r, str)],
                    settings=exports.settings(sel, extra={"curves": {c.name: f"{c.y_label} against {c.x_label}"
                                                                    for curves in CHARTS.values() for _, c in curves}}))

st.header("Dataset reports")
files = metrics_files(catalog.ROOT / "metrics")
if "attention-quality" in files:
    try:
        quality = compute.metrics_report(files["attention-quality"])
        entries = dataset_curves(quality, sel.method)
    except ValueError as err:
        quality, entries = None, None
        st.warning(str(err))
    if entries:
        for chart, curves in CHARTS.items():
            plot = go.Figure()
            for i, e in enumerate(entries):
                label, found = safe.html(f"{e['variant']} · {Path(str(e['model'])).name}"), e["curves"]
                for _, curve in curves:
                    if curve.mean and found.get(curve.mean) and found.get(curve.mean_x):
                        plot.add_scatter(x=found[curve.mean_x], y=found[curve.mean], mode="lines",
                                         name=f"{label} {curve.label}", legendgroup=label,
                                         line=dict(dash="dash" if curve.dash else None, color=charts.colour(i)))
            if plot.data:
                st.plotly_chart(charts.layout(plot, entries=len(plot.data),
                                              title=f"{sel.method}: mean {_title(curves)}", **_axes(curves[0][1])),
                                key=f"dataset_{chart}")
    elif entries is not None:
        st.info(f"`metrics/attention-quality.json` has no curves for method {sel.method!r}.")
    rows = [r for r in quality.get("results", []) if isinstance(r, dict) and r.get("method") == sel.method
            ] if isinstance(quality, dict) else []
    if rows:
        with st.expander(f"Protocol of one {sel.method} row of the attention-quality report"):
            names = [f"{r.get('variant')} · {Path(str(r.get('model'))).name}" for r in rows]
            urlstate.keep("protocol_row", list(range(len(rows))), 0)
            pick = st.selectbox("Row", range(len(rows)), format_func=names.__getitem__, key="protocol_row")
            if isinstance(rows[pick].get("protocol"), dict):
                st.json(rows[pick]["protocol"])
            else:
                st.info("This row carries no protocol of its own (a report written before rows held one); "
                        "the report's protocol is in the expander of its file below.")
for stem in EXPECTED_REPORTS:
    if not any(s == stem or (stem.endswith("*") and s.startswith(stem[:-1])) for s in files):
        st.info(f"`metrics/{stem}.json` is not there yet: the report appears here once it is produced.")
for stem, path in files.items():
    if _is_result(stem):
        _report(stem, path)
developer = [(stem, path) for stem, path in files.items() if not _is_result(stem)]
urlstate.keep("developer_reports", [True, False], False)
if developer and st.toggle(f"Benchmark reports for developers ({len(developer)}: speed, latency, reliability)",
                           key="developer_reports"):
    for stem, path in developer:
        _report(stem, path)
