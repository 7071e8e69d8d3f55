"""Curves of the current image (MoRF / LeRF, box ROC / PR) and the dataset-level reports in
``metrics/*.json``: the results a user reads first, the benchmark reports of the developers on demand."""

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
from infsa_viz.reports import dataset_curves, group_series, metrics_files, report_tables

#: Charts of the known reports: file stem (or prefix) → (table, x, y, group) to plot.
CHARTS = {
    "training": ("results", "variant", "test_accuracy", "model"),
    "attention-quality": ("results", "method", None, "variant"),
    "eigencheck": ("per_layer", "layer", "left.mean", "variant"),
}
#: Reports about the models and maps (shown); the others are the developers' benchmarks.
RESULT_REPORTS = ("training", "attention-quality", "verdict", "headroom", "eigencheck")
EXPECTED = ("training", "attention-quality", "eigencheck-*")


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
        chart = next((c for name, c in CHARTS.items() if stem == name or stem.startswith(name + "-")), None)
        if chart and chart[0] in tables:
            table, x, y, group = chart
            rows = tables[table]
            if y is None:  # choose the metric
                numeric = [k for k, v in rows[0].items() if isinstance(v, (int, float)) and not k.startswith("n_")]
                y = st.selectbox("Metric", numeric, key=f"chart-metric-{stem}",
                                 index=numeric.index("morf_aoc") if "morf_aoc" in numeric else 0) if numeric else None
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
perturb, roc, pr = go.Figure(), go.Figure(), go.Figure()
curves_rows: list[dict] = []
for i, (entry, result) in enumerate(results):
    label, color = safe.html(entry.label), charts.colour(i)  # plotly reads a little HTML in legends
    if isinstance(result, str):
        st.error(safe.line(f"{safe.md(entry.label)}: {safe.md(result)}"))
        continue
    record, curve = result.record, result.box_curve
    curves_rows += [{"model": entry.name, "variant": entry.variant, "curve": name, "x": float(x), "y": float(y)}
                    for name, xs, ys in (("morf", result.fractions, record.morf), ("lerf", result.fractions, record.lerf))
                    for x, y in zip(xs, ys)]
    if curve is not None:
        curves_rows += [{"model": entry.name, "variant": entry.variant, "curve": name, "x": float(x), "y": float(y)}
                        for name, xs, ys in (("roc", curve.fpr, curve.tpr), ("pr", curve.recall, curve.precision))
                        for x, y in zip(xs, ys)]
    perturb.add_scatter(x=result.fractions, y=record.morf, mode="lines+markers", name=f"{label} MoRF",
                        legendgroup=label, line=dict(color=color))
    perturb.add_scatter(x=result.fractions, y=record.lerf, mode="lines", name=f"{label} LeRF",
                        line=dict(dash="dash", color=color), legendgroup=label)
    if curve is not None:
        roc.add_scatter(x=curve.fpr, y=curve.tpr, mode="lines", name=f"{label} (AUC {record.box_roc_auc:.3f})",
                        line=dict(color=color))
        pr.add_scatter(x=curve.recall, y=curve.precision, mode="lines", name=f"{label} (AP {record.box_pr_auc:.3f})",
                       line=dict(color=color))
steps = next((len(r.fractions) - 1 for _, r in results if not isinstance(r, str)), 0)
st.caption(f"{safe.md(image.source)}, method **{sel.method}**: probability of the scored class (the label for models trained "
           f"on this image's classes, else the prediction) as ViT patches are removed most- (MoRF) or least-relevant "
           f"first (LeRF), mean baseline, {steps} steps: a fast MoRF drop and a slow LeRF drop are better. Box "
           "curves score every pixel of the bilinearly upsampled map against the target box.")
models = len(results)
st.plotly_chart(charts.layout(perturb, entries=2 * models, xaxis_title="share of patches removed",
                              title="MoRF (solid) / LeRF (dashed)",
                              yaxis_title="p(scored class)", yaxis_range=[0, 1.02],
                              xaxis_tickformat=".0%", yaxis_tickformat=".0%"), key="perturbation_curves")
if roc.data:
    roc.add_scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance", line=dict(dash="dot", color="gray"))
    st.plotly_chart(charts.layout(roc, entries=models + 1, title="Box ROC (higher is better)",
                                  xaxis_title="false-positive rate", yaxis_title="true-positive rate"),
                    key="roc_curves")
    st.plotly_chart(charts.layout(pr, entries=models, title="Box precision-recall",
                                  xaxis_title="recall", yaxis_title="precision"), key="pr_curves")
else:
    st.info("No ground-truth box for this image and these models (uploads and images of other classes have "
            "none): ROC / PR curves need one.")

if curves_rows:
    exports.buttons(exports.stem(image.base, "curves", sel.method), key="curves", table=lambda: curves_rows,
                    records=lambda: [r.record for _, r in results if not isinstance(r, str)],
                    settings=exports.settings(sel, extra={"curves": "morf/lerf: p(scored class) against the share "
                                                          "of patches removed; roc/pr: box curves of the map"}))

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
        mean_perturb, mean_pr = go.Figure(), go.Figure()
        for i, e in enumerate(entries):
            label, c = safe.html(f"{e['variant']} · {Path(str(e['model'])).name}"), e["curves"]
            if c.get("morf_mean"):
                mean_perturb.add_scatter(x=c["fractions"], y=c["morf_mean"], mode="lines", name=f"{label} MoRF",
                                         legendgroup=label, line=dict(color=charts.colour(i)))
            if c.get("lerf_mean"):
                mean_perturb.add_scatter(x=c["fractions"], y=c["lerf_mean"], mode="lines", name=f"{label} LeRF",
                                         line=dict(dash="dash", color=charts.colour(i)), legendgroup=label)
            if c.get("precision_mean"):
                mean_pr.add_scatter(x=c["recall"], y=c["precision_mean"], mode="lines", name=label,
                                    line=dict(color=charts.colour(i)))
        st.plotly_chart(charts.layout(mean_perturb, entries=2 * len(entries), xaxis_title="share of patches removed",
                                      title=f"{sel.method}: mean MoRF / LeRF",
                                      yaxis_title="relative probability (1 = clean image)",
                                      xaxis_tickformat=".0%"), key="dataset_perturbation")
        st.plotly_chart(charts.layout(mean_pr, entries=len(entries), title=f"{sel.method}: mean box PR",
                                      xaxis_title="recall", yaxis_title="precision"), key="dataset_pr")
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
for stem in EXPECTED:
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
