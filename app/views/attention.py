"""Attention at the token level: the layer × head grid of one query token's attention row, and
a patch picker (click a patch) with the absorbing-chain reading of that token beside it."""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

import common
import sidebar
import tokens
from infsa_viz.overlay import colour_scale, overlay, overlay_grid, with_colorbar

sel = sidebar.selection()
st.title("Attention")
sidebar.require_inputs(sel)
image = sel.image
usable = [e for e in sel.models if common.load_error(e) is None]
for entry in sel.models:
    if (error := common.load_error(entry)) is not None:
        st.error(f"{entry.label}: {error}")
if not usable:
    st.stop()
by_path = {e.path: e for e in usable}
path = st.selectbox("Model", list(by_path), key="attention_model", format_func=lambda p: by_path[p].label)
entry = by_path[path]
att = tokens.attention(entry, image)
display = common.model_input(entry, image).display[0]
N = att.matrices.shape[-1]
if st.session_state.get("query_token", 0) >= N:
    st.session_state["query_token"] = 0


def _picked() -> None:
    """A click on the patch picker sets the query token."""
    points = st.session_state["token_picker"].selection.get("points", [])
    if points:
        st.session_state["query_token"] = att.prefix + int(points[0]["point_index"])


left, *cols = st.columns(4)
with left:
    token = int(st.number_input(f"Query token (0 … {N - 1}; click a patch below)", 0, N - 1, key="query_token",
                                help="0 is the CLS token when the model has one; patches follow row by row"))
    st.caption(f"query: **{att.token_name(token)}** of {entry.label}; layer "
               f"{'last' if sel.layer == -1 else sel.layer}, head {sel.head} (sidebar)")
    h, w = att.grid
    side = display.shape[0]
    ys, xs = np.divmod(np.arange(h * w), w)
    cx, cy = (xs + 0.5) * side / w, (ys + 0.5) * side / h
    picker = go.Figure(go.Image(z=np.repeat(display[..., None], 3, -1) if display.ndim == 2 else display,
                                hoverinfo="skip"))
    marked = np.arange(h * w) == token - att.prefix
    picker.add_scatter(x=cx, y=cy, mode="markers", hovertemplate="patch %{pointNumber}<extra></extra>",
                       marker={"symbol": "square", "size": 14, "opacity": 0.35,
                               "color": np.where(marked, "red", "white").tolist()})
    picker.update_layout(height=230, margin={"l": 0, "r": 0, "t": 0, "b": 0}, showlegend=False,
                         xaxis={"visible": False}, yaxis={"visible": False}, clickmode="event+select")
    st.plotly_chart(picker, key="token_picker", on_select=_picked, selection_mode="points")

layer = sel.layer % att.matrices.shape[0]
reading = tokens.token_reading(att, layer, sel.head, token)
maps = [reading.row, reading.visits, reading.perron]
names = [f"attention from {att.token_name(token)}", "expected visits from it", "Perron vector of the layer"]
for i, (column, m, name) in enumerate(zip(cols, maps, names)):
    scale = colour_scale([m], "raw", colormap=sel.display.colormap, clip=sel.display.clip)
    tile = overlay(display, m, scale, alpha=sel.display.alpha, zoom=max(1, common.DISPLAY_PX // display.shape[0]))
    column.image(with_colorbar(tile, scale, label="attention weight" if i == 0 else
                               "expected visits" if i == 1 else "eigenvector entry"),
                 caption=name, width="stretch", output_format="PNG")
gamma = f"γ = {reading.gamma:.3g} ({'learned ρ' if reading.learned else 'fixed: this layer learns no ρ'})"
text = (f"absorbing-chain reading on this token's row: γ·Σ_j A_tj = {reading.row_mass:.3f} "
        f"{'≤' if reading.row_mass <= 1 else '>'} 1; holds on {reading.share:.0%} of all rows; {gamma}")
st.markdown(f":green[{text}]" if reading.row_mass <= 1 and reading.share == 1 else f":orange[{text}]")


st.subheader("Every layer × head")
st.caption(f"Row of {att.token_name(token)} in every layer (rows) and head (columns; 'mean' = head mean), "
           "on one raw scale (attention weights) with its colour bar; "
           + ("Linear-InfSA applies 1·aᵀ, so every query row is the same a." if entry.variant == "linear_infsa" else ""))
L, H = att.matrices.shape[:2]
rows = att.to_grid(att.matrices[:, :, token, :])  # (L, H, h, w)
cells = [m for layer_rows in rows for m in [*layer_rows, layer_rows.mean(0)]]
scale = colour_scale(cells, "raw", colormap=sel.display.colormap, clip=sel.display.clip)
zoom = max(1, 96 // display.shape[0])
tiles = [overlay(display, m, scale, i, alpha=sel.display.alpha, zoom=zoom) for i, m in enumerate(cells)]
titles = [f"L{li} " + (f"H{hi}" if hi < H else "mean") for li in range(L) for hi in range(H + 1)]
grid = overlay_grid(tiles, titles, ncols=H + 1)
st.image(with_colorbar(grid, scale, label="attention weight; " + scale.clipping), width="stretch", output_format="PNG",
         caption=f"{entry.label}: {L} layers × {H} heads + mean")
