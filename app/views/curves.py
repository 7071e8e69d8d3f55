"""Curves of the current image (MoRF / LeRF, box ROC / PR) and the dataset-level reports in
``metrics/*.json``."""

import json
from pathlib import Path

import plotly.graph_objects as go
from plotly.colors import qualitative
import streamlit as st

import common
from infsa_viz import app_support as support

LAYOUT = dict(height=340, margin=dict(l=10, r=10, t=40, b=10))
#: Charts of the known reports: file stem (or prefix) → (table, x, y, group) to plot.
CHARTS = {
    "training": ("results", "variant", "test_accuracy", "model"),
    "attention-quality": ("results", "method", None, "variant"),
    "eigencheck": ("per_layer", "layer", "left.mean", "variant"),
}

sel = common.selection()
st.title("Curves & reports")
common.require_inputs(sel)
sample = sel.sample

st.header("This image")
st.caption(f"{sample.source}, method **{sel.method}** {json.dumps(sel.options)}: probability of "
           f"{'the label' if sample.label is not None else 'the predicted class'} as ViT patches are removed "
           "most- (MoRF) or least-relevant first (LeRF), mean baseline, 20 steps; box curves score every pixel "
           "of the bilinearly upsampled map against the target box.")
perturb, roc, pr = go.Figure(), go.Figure(), go.Figure()
for i, view in enumerate(common.model_view(e, sample) for e in sel.models):
    label, color = view.entry.label, qualitative.Plotly[i % len(qualitative.Plotly)]
    try:
        token, _ = common.token_map(view, sample.key, sel.method, sel.options)
    except ValueError as err:
        st.error(f"{label}: {err}")
        continue
    fig = common.figures(view, sample, sel.method, sel.options, token)
    perturb.add_scatter(x=fig["fractions"], y=fig["morf"], mode="lines+markers", name=f"{label} MoRF",
                        legendgroup=label, line=dict(color=color))
    perturb.add_scatter(x=fig["fractions"], y=fig["lerf"], mode="lines", name=f"{label} LeRF",
                        line=dict(dash="dash", color=color), legendgroup=label)
    curves = common.box_curves(view, sample, sel.method, sel.options, token)
    if curves is not None:
        auc = fig["box_roc_auc"], fig["box_pr_auc"]
        roc.add_scatter(x=curves["fpr"], y=curves["tpr"], mode="lines", name=f"{label} (AUC {auc[0]:.3f})",
                        line=dict(color=color))
        pr.add_scatter(x=curves["recall"], y=curves["precision"], mode="lines", name=f"{label} (AP {auc[1]:.3f})",
                       line=dict(color=color))
perturb.update_layout(title="MoRF / LeRF", xaxis_title="fraction of patches removed",
                      yaxis_title="probability", yaxis_range=[0, 1.02], **LAYOUT)
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
files = support.metrics_files(common.METRICS_DIR)
if "attention-quality" in files:
    try:
        entries = support.dataset_curves(common.metrics_report(files["attention-quality"]), sel.method)
    except ValueError as err:
        entries = None
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
for stem in ("training", "attention-quality", "eigencheck-*", "bench-cpu"):
    if not any(s == stem or (stem.endswith("*") and s.startswith(stem[:-1])) for s in files):
        st.info(f"`metrics/{stem}.json` is not there yet: the report appears here once it is produced.")
for stem, path in files.items():
    try:
        report = common.metrics_report(path)
    except ValueError as err:
        st.warning(str(err))
        continue
    tables = support.report_tables(report)
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
                series = support.group_series(rows, x=x, y=y, group=group)
                bars = go.Figure([go.Bar(name=g, x=[str(v) for v in xs], y=ys) for g, (xs, ys) in series.items()])
                bars.update_layout(barmode="group", title=f"{y} by {x}", **LAYOUT)
                st.plotly_chart(bars, key=f"chart-{stem}")
        if "cases" in tables:  # benchmark: latency against tokens, log-log
            lines = support.group_series(tables["cases"], x="tokens", y="latency_s",
                                         group=("section", "shape", "variant"), where={"status": "ok"})
            if lines:
                bench = go.Figure([go.Scatter(x=xs, y=ys, mode="lines+markers", name=name)
                                   for name, (xs, ys) in lines.items()])
                bench.update_layout(xaxis_type="log", yaxis_type="log", xaxis_title="tokens",
                                    yaxis_title="latency (s)", title="Latency against tokens", **LAYOUT)
                st.plotly_chart(bench, key=f"chart-{stem}")
        for name, rows in tables.items():
            st.caption(f"`{name}` ({len(rows)} rows)")
            st.dataframe(rows, key=f"table-{stem}-{name}", hide_index=True)
        rest = {k: v for k, v in report.items() if k not in tables} if isinstance(report, dict) else report
        if rest:
            st.caption("protocol and summary")
            st.json(rest, expanded=False)
