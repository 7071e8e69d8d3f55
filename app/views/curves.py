"""Curves of the current image (MoRF / LeRF, box ROC / PR) and the dataset-level reports in
``metrics/*.json``."""

import json
from pathlib import Path

import plotly.graph_objects as go
from plotly.colors import qualitative
import streamlit as st

import common
import sidebar
from infsa_viz.reports import dataset_curves, group_series, metrics_files, report_tables

LAYOUT = {"height": 340, "margin": {"l": 10, "r": 10, "t": 40, "b": 10}}
#: Charts of the known reports: file stem (or prefix) → (table, x, y, group) to plot.
CHARTS = {
    "training": ("results", "variant", "test_accuracy", "model"),
    "attention-quality": ("results", "method", None, "variant"),
    "eigencheck": ("per_layer", "layer", "left.mean", "variant"),
}

PERCENT_HINTS = ("accuracy", "share", "pointing", "hit", "rate")


def _ci(row: dict, y: str) -> tuple[float, float] | None:
    """The confidence interval ``<y>_ci`` of a table row (JSON ``[lo, hi]`` or dotted ``lo``/``hi``)."""
    value = row.get(f"{y}_ci")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return float(value[0]), float(value[1])
    for lo, hi in (("lo", "hi"), ("low", "high"), ("lower", "upper")):
        if isinstance(row.get(f"{y}_ci.{lo}"), (int, float)) and isinstance(row.get(f"{y}_ci.{hi}"), (int, float)):
            return float(row[f"{y}_ci.{lo}"]), float(row[f"{y}_ci.{hi}"])
    return None


def _bars(rows: list[dict], x: str, y: str, group: str, stem: str) -> go.Figure:
    """Grouped bars of ``y`` by ``x``, one colour per ``group``, with 95 % CI error bars where the
    report has ``<y>_ci``; axes titled, shares as percentages, the better direction stated."""
    fig = go.Figure()
    groups: dict[str, list[dict]] = {}
    for row in rows:
        if isinstance(row.get(y), (int, float)):
            groups.setdefault(str(row.get(group)), []).append(row)
    with_ci = False
    for i, (name, members) in enumerate(groups.items()):
        cis = [_ci(r, y) for r in members]
        error = None
        if any(c is not None for c in cis):
            with_ci = True
            error = {"type": "data", "symmetric": False,
                     "array": [0 if c is None else max(0.0, c[1] - r[y]) for r, c in zip(members, cis)],
                     "arrayminus": [0 if c is None else max(0.0, r[y] - c[0]) for r, c in zip(members, cis)]}
        fig.add_bar(name=name, x=[str(r.get(x)) for r in members], y=[r[y] for r in members], error_y=error,
                    marker_color=qualitative.Plotly[i % len(qualitative.Plotly)])
    better = common.BETTER.get(y.split(".")[-1])
    percent = any(h in y for h in PERCENT_HINTS)
    fig.update_layout(barmode="group", title=f"{y} by {x}" + (" (error bars: 95 % CI)" if with_ci else ""),
                      xaxis_title=x, yaxis_title=y + (f" ({better} is better)" if better else ""),
                      legend_title_text=group, yaxis_tickformat=".0%" if percent else None, **LAYOUT)
    return fig


sel = sidebar.selection()
st.title("Curves & reports")
sidebar.require_inputs(sel)
image = sel.image

st.header("This image")
results = sidebar.explain_models(sel, sel.method, sel.options)
perturb, roc, pr = go.Figure(), go.Figure(), go.Figure()
for i, (entry, result) in enumerate(results):
    label, color = entry.label, qualitative.Plotly[i % len(qualitative.Plotly)]
    if isinstance(result, str):
        st.error(f"{label}: {result}")
        continue
    record, curve = result.record, result.box_curve
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
st.caption(f"{image.source}, method **{sel.method}** {json.dumps(sel.options)}: probability of "
           f"{'the label' if image.label is not None else 'the predicted class'} as ViT patches are removed "
           f"most- (MoRF) or least-relevant first (LeRF), mean baseline, {steps} steps; box curves score every "
           "pixel of the bilinearly upsampled map against the target box.")
perturb.update_layout(title="MoRF (solid; a fast drop is better) / LeRF (dashed; a slow drop is better)",
                      xaxis_title="patches removed", yaxis_title="probability", yaxis_range=[0, 1.02],
                      xaxis_tickformat=".0%", yaxis_tickformat=".0%", legend_title_text="model, order", **LAYOUT)
st.plotly_chart(perturb, key="perturbation_curves")
if roc.data:
    left, right = st.columns(2)
    roc.add_scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance", line=dict(dash="dot", color="gray"))
    roc.update_layout(title="Box ROC", xaxis_title="false-positive rate", yaxis_title="true-positive rate", **LAYOUT)
    pr.update_layout(title="Box precision-recall", xaxis_title="recall", yaxis_title="precision", **LAYOUT)
    left.plotly_chart(roc, key="roc_curves")
    right.plotly_chart(pr, key="pr_curves")
else:
    st.info("No ground-truth box for this image (uploads have none): ROC / PR curves need one.")

st.header("Dataset reports")
files = metrics_files(common.METRICS_DIR)
if "attention-quality" in files:
    try:
        quality = common.metrics_report(files["attention-quality"])
        entries = dataset_curves(quality, sel.method)
    except ValueError as err:
        quality, entries = None, None
        st.warning(str(err))
    if entries:
        mean_perturb, mean_pr = go.Figure(), go.Figure()
        for i, e in enumerate(entries):
            label, c = f"{e['variant']} · {Path(str(e['model'])).name}", e["curves"]
            color = qualitative.Plotly[i % len(qualitative.Plotly)]
            if c.get("morf_mean"):
                mean_perturb.add_scatter(x=c["fractions"], y=c["morf_mean"], mode="lines", name=f"{label} MoRF",
                                         legendgroup=label, line=dict(color=color))
            if c.get("lerf_mean"):
                mean_perturb.add_scatter(x=c["fractions"], y=c["lerf_mean"], mode="lines", name=f"{label} LeRF",
                                         line=dict(dash="dash", color=color), legendgroup=label)
            if c.get("precision_mean"):
                mean_pr.add_scatter(x=c["recall"], y=c["precision_mean"], mode="lines", name=label,
                                    line=dict(color=color))
        left, right = st.columns(2)
        mean_perturb.update_layout(title=f"{sel.method}: mean MoRF / LeRF over the test images",
                                   xaxis_title="fraction of patches removed", yaxis_title="p_k / p_0", **LAYOUT)
        mean_pr.update_layout(title=f"{sel.method}: mean box precision-recall", xaxis_title="recall",
                              yaxis_title="precision", **LAYOUT)
        left.plotly_chart(mean_perturb, key="dataset_perturbation")
        right.plotly_chart(mean_pr, key="dataset_pr")
    elif entries is not None:
        st.info(f"`metrics/attention-quality.json` has no curves for method {sel.method!r}.")
    rows = [r for r in quality.get("results", []) if isinstance(r, dict) and r.get("method") == sel.method
            ] if isinstance(quality, dict) else []
    if rows:
        with st.expander(f"Protocol of one {sel.method} row of the attention-quality report"):
            names = [f"{r.get('variant')} · {Path(str(r.get('model'))).name}" for r in rows]
            pick = st.selectbox("Row", range(len(rows)), format_func=names.__getitem__, key="protocol_row")
            if isinstance(rows[pick].get("protocol"), dict):
                st.json(rows[pick]["protocol"])
            else:
                st.info("This row carries no protocol of its own (a report written before rows held one); "
                        "the report's protocol is in the expander of its file below.")
for stem in ("training", "attention-quality", "eigencheck-*", "bench-cpu"):
    if not any(s == stem or (stem.endswith("*") and s.startswith(stem[:-1])) for s in files):
        st.info(f"`metrics/{stem}.json` is not there yet: the report appears here once it is produced.")
for stem, path in files.items():
    try:
        report = common.metrics_report(path)
    except ValueError as err:
        st.warning(str(err))
        continue
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
                st.plotly_chart(_bars(rows, x, y, group, stem), key=f"chart-{stem}")
        if "cases" in tables:  # benchmark: latency against tokens, log-log
            lines = group_series(tables["cases"], x="tokens", y="latency_s",
                                         group=("section", "shape", "variant"), where={"status": "ok"})
            if lines:
                bench = go.Figure([go.Scatter(x=xs, y=ys, mode="lines+markers", name=name)
                                   for name, (xs, ys) in lines.items()])
                bench.update_layout(xaxis_type="log", yaxis_type="log", xaxis_title="tokens (log)",
                                    yaxis_title="latency (s, log; lower is better)", title="Latency against tokens",
                                    legend_title_text="section · shape · variant", **LAYOUT)
                st.plotly_chart(bench, key=f"chart-{stem}")
        for name, rows in tables.items():
            st.caption(f"`{name}` ({len(rows)} rows)")
            st.dataframe(rows, key=f"table-{stem}-{name}", hide_index=True)
        rest = {k: v for k, v in report.items() if k not in tables} if isinstance(report, dict) else report
        if rest:
            st.caption("protocol and summary")
            st.json(rest, expanded=False)
