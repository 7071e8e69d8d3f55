"""Side by side: the same image and method on every selected model, one colour scale."""

import json

import plotly.graph_objects as go
import streamlit as st

import common
from infsa_viz import app_support as support
from infsa_viz.maps import METHODS
from infsa_viz.overlay import color_limits, encode_png, overlay, overlay_grid

sel = common.selection()
st.title("Side by side")
common.require_inputs(sel)
sample = sel.sample
spec = METHODS[sel.method]
st.caption(f"**{sel.method}** ({spec.family}): {spec.description}. Options {json.dumps(sel.options) or '{}'}; "
           f"{sel.scale} colour scale. Image: {sample.source}.")
show_figures = st.toggle("Per-map figures (MoRF-AOC, pointing game, box AUCs)", value=True, key="badges")

views, maps, errors, details = [], [], {}, {}
for entry in sel.models:
    view = common.model_view(entry, sample)
    try:
        token, details[entry.label] = common.token_map(view, sample.key, sel.method, sel.options)
    except ValueError as err:
        errors[entry.path] = str(err)
        token = None
    views.append(view)
    maps.append(token)

drawn = [m for m in maps if m is not None]
limits = iter(color_limits(drawn, sel.scale)) if drawn else iter(())
tiles, titles, rows = [], [], []
for column, view, token in zip(st.columns(len(views)), views, maps):
    entry = view.entry
    with column:
        if token is None:
            st.error(f"{entry.label}: {errors[entry.path]}")
            continue
        lim = next(limits)
        tile = overlay(view.shown, token, limits=lim, alpha=sel.alpha, colormap=sel.colormap,
                       boxes=view.boxes if sel.show_boxes else None,
                       distractor_boxes=view.distractor_boxes if sel.show_boxes else None,
                       scale=common.DISPLAY_SCALE)
        tiles.append(tile)
        titles.append(f"{entry.variant} ({entry.name})")  # ASCII: OpenCV draws the grid titles
        st.image(tile, caption=entry.label, width=tile.shape[1])
        verdict = "" if sample.label is None else (
            " :green[(correct)]" if view.predicted == sample.label else f" :red[(label {sample.label})]")
        st.markdown(f"predicts **{view.predicted}** with p = {view.probs[view.predicted]:.3f}{verdict}")
        row = {"image": sample.source, "model": entry.name, "variant": entry.variant, "method": sel.method,
               "options": json.dumps(sel.options), "label": sample.label, "predicted": view.predicted,
               "p_predicted": float(view.probs[view.predicted]),
               "color_min": lim[0], "color_max": lim[1]}
        if show_figures:
            fig = common.figures(view, sample, sel.method, sel.options, token)
            row.update({k: fig[k] for k in support.FIGURE_FIELDS})
            st.markdown(common.badges(fig))
        rows.append(row)

if not tiles:
    st.stop()
shared = color_limits(drawn, sel.scale)[0] if sel.scale != "per-map" else None
if shared is not None:
    how = "each map divided by its mass" if sel.scale == "shared" else "raw values"
    st.caption(f"One colour scale for all maps ({how}): {shared[0]:.4g} (dark) to {shared[1]:.4g} (bright).")

with st.expander("What each map is (resolved options and metadata)"):
    st.json(details)

probs = go.Figure([go.Bar(name=v.entry.label, x=list(range(len(v.probs))), y=v.probs) for v in views])
probs.update_layout(barmode="group", height=260, margin=dict(l=10, r=10, t=30, b=10), title="Class probabilities",
                    xaxis=dict(title="class", dtick=1), yaxis=dict(title="p", range=[0, 1]))
st.plotly_chart(probs, key="probabilities")

grid = overlay_grid(tiles, titles, colorbar=shared, colormap=sel.colormap)
stem = f"{sample.key.replace(':', '-')[:24]}-{sel.method}"
left, middle, right = st.columns(3)
left.download_button("Overlay grid (PNG)", encode_png(grid), f"{stem}.png", "image/png", key="download_png")
middle.download_button("Figures (CSV)", support.figures_csv(rows), f"{stem}.csv", "text/csv", key="download_csv")
right.download_button("Figures (JSON)", support.figures_json(rows, image=sample.source, method=sel.method,
                                                             options=sel.options, scale=sel.scale),
                      f"{stem}.json", "application/json", key="download_json")
