"""Glossary: the words, methods and figures the app shows, one line each."""

import streamlit as st

import draw

from infsa_viz.maps import METHODS
from infsa_viz.metrics.registry import METRICS
from infsa_viz.reports import REPORT_FIGURES

st.title("Glossary")
st.markdown("""
**InfSA (Infinite Self-Attention)** — per head Â = ReLU(QKᵀ)/‖ReLU(QKᵀ)‖_F, output ρ·Â·V with a learned
discount ρ; stacked layers sum a discounted Neumann series Σ ρᵗÂᵗ (Roffo & Palmer, arXiv 2603.00175).

**Linear-InfSA** — an O(N) variant: one global query q̄ and weights a_j ∝ ReLU(q̄·k_j), an estimate of
the Perron (dominant) eigenvector of Â.

**Absorbing-chain reading** — (I − γA)⁻¹ counts the expected visits of a random walk on the tokens
only where every row has γ·Σ_j A_ij ≤ 1; the app shows the share of rows where this holds (green: all
rows, orange: some rows fail, so the map is a well-defined series but not a visit count).

**Expected visits** — sᵀ(I − γA)⁻¹: how often a walk started at s (the CLS token) visits each patch.

**Perron vector** — the dominant eigenvector of a layer's attention graph (its stationary importance).

**CLS row** — the attention the classification token pays to every patch in one layer.

**Colour scale** — *shared*: each map divided by its mass Σ|m|, one scale for all (compare where maps
put their mass); *raw*: raw values on one scale (one method only); *per-map*: each map its own range.
Non-negative maps use a sequential colormap (dark = low); signed maps a diverging one (blue < 0,
white = 0, red > 0). The top colour is the 99th percentile of the values (of |value| if signed), as
Captum clips outliers; the colour bar under every overlay gives the numbers.
""")
st.subheader("Figures")
st.caption("Every figure the evaluation computes, from the metric registry (`infsa_viz.metrics.registry`; "
           "docs/metrics.md explains each metric in one paragraph).")
st.markdown(draw.markdown_table(["figure", "metric", "what it measures", "better"], [
    [f.label, metric.name, f.description or metric.rule, f.direction]
    for metric in METRICS.values() for f in metric.figures] + [
    [f.label, "—", f.description, f.direction] for f in REPORT_FIGURES.values() if f.description]))
st.subheader("Methods")
st.markdown(draw.markdown_table(["method", "family", "role", "what it shows", "explains a class", "signed",
                                 "reference"], [
    [name, spec.family, spec.role, spec.description, "yes" if spec.explains_class else "no",
     "yes" if spec.signed else "no", spec.reference] for name, spec in METHODS.items()]))
