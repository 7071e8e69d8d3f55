"""Side by side: the same image and method on every selected model, one colour scale."""

import json

import numpy as np
import streamlit as st

import common
import sidebar
from infsa_viz.evaluation import records_csv
from infsa_viz.maps import METHODS
from infsa_viz.overlay import encode_png, overlay_grid

sel = sidebar.selection()
st.title("Side by side")
sidebar.require_inputs(sel)
image = sel.image
spec = METHODS[sel.method]
explains = f" Explains {common.target_label(sel.target)}." if spec.explains_class else ""
st.caption(f"**{sel.method}** ({spec.family}): {spec.description}.{explains} Image: {image.source}.")
show_figures = st.toggle("Per-map figures (MoRF-AOC, pointing game, box AUCs)", value=True, key="badges")

if show_figures and spec.explains_class:  # a gradient map is costly: compute it once, with its figures
    explained = sidebar.explain_models(sel, sel.method, sel.options)
    views = [(entry, r if isinstance(r, str) else r.view) for entry, r in explained]
else:  # the maps first (milliseconds), the figures under them
    explained, views = None, sidebar.map_views(sel, sel.method, sel.options)
tiles, scale = common.draw(sel.display, sel.method, views)
details, columns = {}, st.columns(len(views))
for column, (entry, view) in zip(columns, views):
    with column:
        if isinstance(view, str):
            st.error(f"{entry.label}: {view}")
            continue
        i = list(tiles).index(entry.path)
        st.image(tiles[entry.path], caption=entry.label, width="stretch", output_format="PNG")  # sized to its column, colour bar under it
        st.markdown(common.prediction_line(entry, image))
        if view.target is not None:
            st.caption(f"explains {common.class_name(entry, view.target)}")
        if (line := common.validity_line(view.validity)) is not None:
            st.caption(line)
        details[entry.label] = {
            "logits": [round(float(v), 6) for v in common.logits(entry, image)], "options": view.options,
            "target": view.target, "validity": view.validity, "metadata": view.metadata,
            "colour": {"divisor": scale.divisors[i], "limits": list(scale.limits[i]), "mode": scale.mode,
                       "signed": scale.signed, "colormap": scale.colormap, "clip": scale.clip},
        }
records = []
if show_figures and tiles:
    if explained is None:
        explained = sidebar.explain_models(sel, sel.method, sel.options)
    for column, (entry, result) in zip(columns, explained):
        if not isinstance(result, str):
            column.markdown(common.badges(result.record))
            records.append(result.record)

if not tiles:
    st.stop()
st.caption(common.scale_caption(scale))

shown = [(entry, view) for entry, view in views if entry.path in tiles]
resized = [(entry, common.model_input(entry, image)) for entry, _ in shown]
resized = [(entry, prepared) for entry, prepared in resized
           if image.index is None or prepared.display[0].shape != image.data.images[0].shape]
if not resized:
    st.caption("Model input: the test image as it is (already each model's input size and channels).")
with st.expander("Model input: the exact pixels each model sees", expanded=True) if resized else st.container():
    for column, (entry, prepared) in zip(st.columns(max(1, len(resized))), resized):
        with column:
            zoom = max(1, common.DISPLAY_PX // prepared.display[0].shape[0])
            pixels = np.repeat(np.repeat(prepared.display[0], zoom, 0), zoom, 1)
            st.image(pixels, caption=f"{entry.label}: model input", width="stretch", output_format="PNG")
            st.caption(common.input_summary(entry, image))
            for warning in common.input_warnings(entry, image):
                st.warning(warning)

st.markdown("**Most probable classes** (softmax of each model's logits): " + " · ".join(
    f"{entry.label}: " + ", ".join(f"{common.class_name(entry, int(c))} {p[c]:.0%}"
                                   for c in np.argsort(-p, kind="stable")[:3])
    for entry, p in ((entry, common.probabilities(entry, image)) for entry, _ in shown)))

with st.expander("What each map is (logits, resolved options, target, validity, metadata, colour scale)"):
    st.json(details)

titles = [f"{entry.variant} ({entry.name})" for entry, _ in shown]  # ASCII: OpenCV draws the grid titles
grid = overlay_grid(list(tiles.values()), titles)
stem = f"{image.key.replace(':', '-')[:24]}-{sel.method}"
left, middle, right = st.columns(3)
left.download_button("Overlay grid (PNG)", encode_png(grid), f"{stem}.png", "image/png", key="download_png")
if records:
    middle.download_button("Figures (CSV)", records_csv(records), f"{stem}.csv", "text/csv", key="download_csv")
    right.download_button("Figures (JSON)", json.dumps([r.scalars() for r in records], indent=2) + "\n",
                          f"{stem}.json", "application/json", key="download_json")
