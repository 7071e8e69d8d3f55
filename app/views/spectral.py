"""Spectral view of one layer and head: eigenvalues, absorption validity, Linear-vs-Perron cosine,
expected visits as a map."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import common
import sidebar
from infsa_viz.maps import selector_options
from infsa_viz.maps.spectral import Visits
from infsa_viz.spectral import MATRICES

sel = sidebar.selection()
st.title("Spectral")
sidebar.require_inputs(sel)
image = sel.image
left, right = st.columns(2)
matrix = left.radio("Matrix", MATRICES, key="spectral_matrix", horizontal=True,
                    help="native: what each layer applies (softmax P, pure InfSA Â, Linear-InfSA 1·aᵀ); "
                         "infsa: Â = ReLU(QKᵀ)/‖·‖_F built from each layer's own q, k")
view_kind = right.radio("Spectrum", ["complex plane", "sorted magnitudes"], key="spectrum_view", horizontal=True)
left, right = st.columns(2)
axis = left.radio("Magnitude axis", ["linear", "log"], key="spectrum_axis", horizontal=True,
                  help="log shows the small eigenvalues, which are mostly numerical noise; linear (default) "
                       "shows the few that matter")
top_k = right.slider("Show the top k eigenvalues", 1, 64, 12, key="spectrum_top_k",
                     help="by magnitude; the rest are near zero")
st.caption(f"Layer {'last' if sel.layer == -1 else sel.layer}, head {sel.head} (sidebar); {image.source}. "
           "γ is the learned ρ for InfSA layers and a fixed γ for layers without one; the dashed circle is "
           "|λ| = 1/γ, where the Neumann series Σ γᵗAᵗ stops converging.")

visits = sidebar.map_views(sel, Visits.name, selector_options(Visits.name, layer=sel.layer, head=sel.head, strict=False))
tiles, scale = common.draw(sel.display, Visits.name, visits)
rows = []
for column, (entry, visit) in zip(st.columns(len(visits)), visits):
    if isinstance(visit, str):  # the model could not be read or explained: its one-line reason
        column.subheader(entry.label)
        column.error(visit)
        continue
    try:
        spectra = common.spectra(entry, image, matrix)
    except ValueError as err:
        column.subheader(entry.label)
        column.error(str(err))
        continue
    rows += [{"model": entry.name, **s.row()} for s in spectra]
    layers = sorted({s.layer for s in spectra})
    layer = layers[sel.layer] if -len(layers) <= sel.layer < len(layers) else None
    spec = next((s for s in spectra if s.layer == layer and str(s.head) == str(sel.head)), None)
    with column:
        st.subheader(entry.label)
        if spec is None:
            st.error(f"layer {sel.layer} / head {sel.head} does not exist in this model")
            continue
        lam = spec.eigenvalues[np.argsort(-np.abs(spec.eigenvalues), kind="stable")][:top_k]
        fig = go.Figure()
        if view_kind == "complex plane":
            t = np.linspace(0, 2 * np.pi, 181)
            fig.add_scatter(x=np.cos(t) / spec.gamma, y=np.sin(t) / spec.gamma, mode="lines", name="|λ| = 1/γ",
                            line=dict(dash="dash", color="gray"))
            fig.add_scatter(x=lam.real, y=lam.imag, mode="markers", name="eigenvalues",
                            text=[f"|λ| = {abs(v):.4g}" for v in lam])
            fig.update_layout(xaxis_title="Re λ", yaxis_title="Im λ", yaxis_scaleanchor="x")
        else:
            fig.add_scatter(x=np.arange(1, len(lam) + 1), y=np.abs(lam), mode="lines+markers", name="|λ|")
            fig.add_hline(y=1 / spec.gamma, line_dash="dash", annotation_text="1/γ")
            fig.update_layout(xaxis_title="rank (by |λ|)", yaxis_title="|λ|", yaxis_type=axis)
        fig.update_layout(height=320, margin=dict(l=10, r=10, t=30, b=10), showlegend=False,
                          title=f"layer {spec.layer}, head {spec.head} ({spec.matrix})")
        st.plotly_chart(fig, key=f"spectrum-{entry.path}")
        a, b = st.columns(2)
        a.metric("spectral radius ρ(A)", f"{spec.spectral_radius:.4g}")
        b.metric("γ · ρ(A)", f"{spec.gamma * spec.spectral_radius:.4g}", help=f"γ = {spec.gamma:.4g}")
        a.metric("absorption valid", f"{spec.absorption_valid_share:.0%}",
                 help="share of rows with γ·Σ_j A_ij ≤ 1 (the absorbing-chain reading holds there); "
                      f"min 1 − γΣ_j A_ij = {spec.min_absorption:.3g}")
        b.metric("cos(a, Perron)", f"{spec.cosine_left:.3f}",
                 help="cosine between Linear-InfSA's a and the dense LEFT Perron vector of Â from this "
                      f"layer's q, k (right Perron: {spec.cosine_right:.3f}); head 'mean' = mean over heads")
        if isinstance(visit, str):
            st.error(f"visits: {visit}")
            continue
        tile = tiles[entry.path]
        st.image(tile, caption=f"expected visits · {entry.label}", width="stretch", output_format="PNG")
        st.caption(common.validity_line(visit.validity) or "")

if scale is not None:
    st.caption(common.scale_caption(scale))
st.subheader("Every layer and head")
st.dataframe(rows, key="spectral_table", hide_index=True)
st.download_button("Spectral table (CSV)", pd.DataFrame(rows).to_csv(index=False), "spectral.csv", "text/csv",
                   key="download_spectral")
