"""Spectral view of one layer and head: eigenvalues, absorption validity, Linear-vs-Perron cosine,
expected visits as a map. Models are laid out two per row so figures stay readable when narrow."""

import numpy as np
import streamlit as st

import compute
import draw
import exports
import safe
import sidebar
import urlstate
import warmup
from infsa_viz.maps import selector_options
from infsa_viz.maps.spectral import Visits
from infsa_viz.spectral import MATRICES

PER_ROW = 2

warmup.settled()  # before plotly reads sys.modules["pandas"]
import plotly.graph_objects as go  # noqa: E402

sel = sidebar.selection()
st.title("Spectral")
sidebar.require_inputs(sel)
image = sel.image
for key, choices, default in (("spectral_matrix", list(MATRICES), MATRICES[0]),
                              ("spectrum_view", ["complex plane", "sorted magnitudes"], "complex plane"),
                              ("spectrum_axis", ["linear", "log"], "linear")):
    urlstate.keep(key, choices, default)
urlstate.keep_range("spectrum_top_k", 1, 64, 12)
left, right = st.columns(2)
matrix = left.radio("Matrix", MATRICES, key="spectral_matrix", horizontal=True,
                    help="native: what each layer applies (softmax P, pure InfSA Â, Linear-InfSA 1·aᵀ); "
                         "infsa: Â = ReLU(QKᵀ)/‖·‖_F built from each layer's own q, k")
view_kind = right.radio("Spectrum", ["complex plane", "sorted magnitudes"], key="spectrum_view", horizontal=True)
left, right = st.columns(2)
axis = left.radio("Magnitude axis", ["linear", "log"], key="spectrum_axis", horizontal=True,
                  help="log shows the small eigenvalues, which are mostly numerical noise; linear (default) "
                       "shows the few that matter")
top_k = right.slider("Top k eigenvalues", 1, 64, key="spectrum_top_k", help="by magnitude; the rest are near zero")
st.caption(f"Layer {'last' if sel.layer == -1 else sel.layer}, head {sel.head} (sidebar); {safe.md(image.source)}. "
           "γ is the learned ρ for InfSA layers and a fixed γ for layers without one; the dashed circle is "
           "|λ| = 1/γ, where the Neumann series Σ γᵗAᵗ stops converging.")

options = selector_options(Visits.name, layer=sel.layer, head=sel.head, strict=False)
visits = sidebar.each_model(sel, compute.map_view, Visits.name, options)
pngs, scale = draw.tiles(sel.display, Visits.name, visits)


def _spectrum_figure(spec, lam: np.ndarray) -> go.Figure:
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
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=30, b=10), showlegend=False,
                      title=f"layer {spec.layer}, head {spec.head} ({spec.matrix})")
    return fig


rows = []
for start in range(0, len(visits), PER_ROW):
    for column, (entry, visit) in zip(st.columns(PER_ROW), visits[start:start + PER_ROW]):
        with column:
            st.markdown(f"**{safe.md(entry.label)}**")
            if isinstance(visit, str):  # the model could not be read or explained: its one-line reason
                st.error(safe.line(safe.md(visit)))
                continue
            try:
                spectra = compute.spectra(entry, image, matrix)
            except ValueError as err:
                st.error(safe.line(safe.md(err)))
                continue
            rows += [{"model": entry.name, **s.row()} for s in spectra]
            layers = sorted({s.layer for s in spectra})
            layer = layers[sel.layer] if -len(layers) <= sel.layer < len(layers) else None
            spec = next((s for s in spectra if s.layer == layer and str(s.head) == str(sel.head)), None)
            if spec is None:
                st.error(f"layer {sel.layer} / head {sel.head} does not exist in this model")
                continue
            lam = spec.eigenvalues[np.argsort(-np.abs(spec.eigenvalues), kind="stable")][:top_k]
            st.plotly_chart(_spectrum_figure(spec, lam), key=f"spectrum-{entry.path}")
            st.markdown(
                f"- spectral radius ρ(A) **{spec.spectral_radius:.4g}**; γ = {spec.gamma:.4g}, "
                f"γ·ρ(A) **{spec.gamma * spec.spectral_radius:.4g}**\n"
                f"- absorption valid on **{spec.absorption_valid_share:.0%}** of rows (γ·Σ_j A_ij ≤ 1; "
                f"min 1 − γΣ_j A_ij = {spec.min_absorption:.3g})\n"
                f"- cos(a, Perron) **{spec.cosine_left:.3f}** (left; right {spec.cosine_right:.3f}): "
                "Linear-InfSA's a against the dense Perron vector of Â")
            st.image(pngs[entry.path], caption=f"expected visits · {safe.md(entry.label)}", width="stretch",
                     output_format="PNG")
            if scale is not None and scale.common_limits is None:
                st.html(draw.colour_bar(scale, list(pngs).index(entry.path), draw.short_unit(scale)))
            st.caption(draw.validity_line(visit.validity) or "")

if scale is not None:
    if scale.common_limits is not None:
        st.html(draw.colour_bar(scale, 0, draw.short_unit(scale)))
    st.caption(draw.scale_caption(scale))
st.subheader("Every layer and head")
st.dataframe(rows, key="spectral_table", hide_index=True)
shown = [(e, v) for e, v in visits if e.path in pngs]


exports.buttons(exports.stem(image.base, "spectral"), key="spectral",
                settings=exports.settings(sel, method=Visits.name, options=options,
                                          extra={"matrix": matrix, "spectrum": view_kind, "top_k": top_k}),
                png=(lambda: exports.overlays_png([(e.name, v) for e, v in shown], scale, display=sel.display))
                if shown else None,
                maps=lambda: {e.label: v.map for e, v in shown})
st.download_button("Spectral table (CSV)", lambda: exports.table_csv(rows), "spectral.csv", "text/csv",
                   key="download_spectral", on_click="ignore")
