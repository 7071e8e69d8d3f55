"""Attention at the token level, several models side by side: one query token's attention row,
the expected visits from it and the layer's Perron vector (with the absorbing-chain reading), and
every layer × head row of that token. A patch picker (click a patch) chooses the token."""

import numpy as np
import streamlit as st

import catalog
import compute
import draw
import exports
import safe
import sidebar
import tokens
import urlstate
import warmup
from infsa_viz.overlay import colour_scale, encode_png, overlay, overlay_grid

warmup.settled()  # before plotly reads sys.modules["pandas"]
import plotly.graph_objects as go  # noqa: E402

sel = sidebar.selection()
st.title("Attention")
sidebar.require_inputs(sel)
image = sel.image
usable = catalog.loaded(sel.models)
by_path = {e.path: e for e in usable}
urlstate.keep_list("attention_models", list(by_path), list(by_path))
chosen = st.multiselect("Models", list(by_path), key="attention_models", format_func=lambda p: by_path[p].label,
                        help="Models shown side by side (the patch picker shows the first)")
entries = [by_path[p] for p in chosen]
if not entries:
    st.info("Choose at least one model.")
    st.stop()
first = entries[0]
att = tokens.attention(first, image)
display = compute.model_input(first, image).display[0]
N = att.matrices.shape[-1]
urlstate.keep_range("query_token", 0, N - 1, 0)


def _picked() -> None:
    """A click on the patch picker sets the query token."""
    points = st.session_state["token_picker"].selection.get("points", [])
    if points:
        st.session_state["query_token"] = att.prefix + int(points[0]["point_index"])


left, right = st.columns([1, 2])
with left:
    layout = tokens.layout(att)
    token = int(st.number_input(f"Query token (0 … {N - 1}; click a patch)", 0, N - 1, key="query_token",
                                help=f"{layout}; patches row by row"))
    h, w = att.grid
    side = display.shape[0]
    ys, xs = np.divmod(np.arange(h * w), w)
    picker = go.Figure(go.Image(z=np.repeat(display[..., None], 3, -1) if display.ndim == 2 else display,
                                hoverinfo="skip"))
    marked = np.arange(h * w) == token - att.prefix
    picker.add_scatter(x=(xs + 0.5) * side / w, y=(ys + 0.5) * side / h, mode="markers",
                       hovertemplate="patch %{pointNumber}<extra></extra>",
                       marker={"symbol": "square", "size": max(4, 220 // max(h, w)), "opacity": 0.35,
                               "color": np.where(marked, "red", "white").tolist()})
    picker.update_layout(height=230, margin={"l": 0, "r": 0, "t": 0, "b": 0}, showlegend=False,
                         xaxis={"visible": False}, yaxis={"visible": False}, clickmode="event+select")
    st.plotly_chart(picker, key="token_picker", on_select=_picked, selection_mode="points")
with right:
    st.caption(f"query: **{att.token_name(token)}** (token {token}); layer "
               f"{'last' if sel.layer == -1 else sel.layer}, head {sel.head} (sidebar). Tokens of "
               f"{safe.md(first.name)}: {layout}. Each model reads the same token index; the three maps of a "
               "model show the patches only (their own colour bars, raw values); the class token and registers "
               "are shown apart, below each model's maps.")

NAMES = ("attention from the token", "expected visits from it", "Perron vector of the layer")
UNITS = ("attention weight", "expected visits", "eigenvector entry")
exported: dict[str, np.ndarray] = {}
drawn: list[tuple[str, np.ndarray]] = []
for entry in entries:
    model_att = tokens.attention(entry, image)
    model_display = compute.model_input(entry, image).display[0]
    st.markdown(f"**{safe.md(entry.label)}**")
    n = model_att.matrices.shape[-1]
    if token >= n:
        st.error(f"token {token} does not exist in this model ({n} tokens)")
        continue
    layer = sel.layer % model_att.matrices.shape[0]
    if sel.head != "mean" and int(sel.head) >= model_att.matrices.shape[1]:
        st.error(f"head {sel.head} does not exist in this model ({model_att.matrices.shape[1]} heads)")
        continue
    reading = tokens.token_reading(model_att, layer, sel.head, token)
    for column, m, name, unit in zip(st.columns(3), (reading.row, reading.visits, reading.perron), NAMES, UNITS):
        scale = colour_scale([m], "raw", colormap=sel.display.colormap, clip=sel.display.clip)
        tile = overlay(model_display, m, scale, alpha=sel.display.alpha, zoom=draw.zoom_for(model_display))
        column.image(encode_png(tile), caption=f"{name} · {safe.md(entry.name)}", width="stretch", output_format="PNG")
        column.html(draw.colour_bar(scale, 0, unit))
        exported[f"{entry.name} {name}"] = m
        drawn.append((f"{entry.name}: {name.split()[0]}", tile))
    source = reading.gamma_source  # "learned rho", "given", or a fixed value with its reason
    gamma = f"γ = {source}" if source.startswith(f"{reading.gamma:g} ") else f"γ = {reading.gamma:.3g} ({source})"
    text = (f"absorbing-chain reading on this token's row: γ·Σ_j A_tj = {reading.row_mass:.3f} "
            f"{'≤' if reading.row_mass <= 1 else '>'} 1; holds on {reading.share:.0%} of all rows; {gamma}")
    st.markdown(f":green[{text}]" if reading.row_mass <= 1 and reading.share == 1 else f":orange[{text}]")
    if model_att.prefix:  # what the spatial maps leave out: the class token, distillation token, registers
        names, values = model_att.apart(token, sel.head)
        title = " · ".join(group for group, _ in model_att.groups())
        with st.expander(f"{title}: attention from the query token, every layer", expanded=entry is first):
            st.caption(f"{safe.md(entry.name)}: {tokens.layout(model_att)}. Each row: layer, the query's attention "
                       f"(head {sel.head}) to each token before the patches and to all patches together; the "
                       "spatial maps above show the patches only.")
            st.dataframe({"layer": [f"L{li}" for li in range(len(values))],
                          **{name: values[:, i] for i, name in enumerate(names)}},
                         hide_index=True, column_config={name: st.column_config.NumberColumn(format="%.4f")
                                                         for name in names})  # one precision in every cell

    with st.expander(f"Every layer × head of {safe.md(entry.name)}", expanded=entry is first):
        st.caption(f"Row of token {token} in every layer (rows) and head (columns; 'mean' = head mean), on one raw "
                   "scale (attention weights)" + ("; Linear-InfSA applies 1·aᵀ, so every query row is the same a."
                                                  if entry.variant == "linear_infsa" else "."))
        L, H = model_att.matrices.shape[:2]
        rows = model_att.to_grid(model_att.matrices[:, :, token, :])  # (L, H, h, w)
        cells = [m for layer_rows in rows for m in [*layer_rows, layer_rows.mean(0)]]
        scale = colour_scale(cells, "raw", colormap=sel.display.colormap, clip=sel.display.clip)
        zoom = max(1, 96 // model_display.shape[0])
        grid_tiles = [overlay(model_display, m, scale, i, alpha=sel.display.alpha, zoom=zoom)
                      for i, m in enumerate(cells)]
        titles = [f"L{li} " + (f"H{hi}" if hi < H else "mean") for li in range(L) for hi in range(H + 1)]
        st.image(encode_png(overlay_grid(grid_tiles, titles, ncols=H + 1)), width="stretch", output_format="PNG",
                 caption=f"{safe.md(entry.label)}: {L} layers × {H} heads + mean")
        st.html(draw.colour_bar(scale, 0, "attention weight; " + scale.clipping))

exports.buttons(exports.stem(image.base, "attention", f"token{token}"), key="attention", maps=lambda: exported,
                settings=exports.settings(sel, method="attention", options={"layer": sel.layer, "head": sel.head},
                                          extra={"query_token": token, "token": att.token_name(token),
                                                 "views": list(NAMES)}),
                png=lambda: encode_png(overlay_grid([t for _, t in drawn], [n for n, _ in drawn], ncols=3)))
