"""Side by side: the same image and method on every selected model, one colour scale."""

import json

import numpy as np
import plotly.graph_objects as go
import streamlit as st

import common
from infsa_viz.evaluation import records_csv
from infsa_viz.maps import METHODS
from infsa_viz.overlay import encode_png, overlay_grid

sel = common.selection()
st.title("Side by side")
common.require_inputs(sel)
image = sel.image
spec = METHODS[sel.method]
explains = f" Explains {common.target_label(sel.target)}." if spec.explains_class else ""
st.caption(f"**{sel.method}** ({spec.family}): {spec.description}. Options {json.dumps(sel.options) or '{}'}; "
           f"{sel.scale} colour scale.{explains} Image: {image.source}.")
show_figures = st.toggle("Per-map figures (MoRF-AOC, pointing game, box AUCs)", value=True, key="badges")

results = common.explain_models(sel, sel.method, sel.options)
tiles, scale = common.draw(sel, results)
details = {}
for column, (entry, result) in zip(st.columns(len(results)), results):
    with column:
        if isinstance(result, str):
            st.error(f"{entry.label}: {result}")
            continue
        i, tile, record = list(tiles).index(entry.path), tiles[entry.path], result.record
        st.image(tile, caption=entry.label)  # natural size, shrunk to fit the column
        verdict = "" if image.label is None else (
            " :green[(correct)]" if record.correct else f" :red[(label {image.label})]")
        st.markdown(f"predicts **{record.predicted}** with p = {record.probability:.3f}{verdict}")
        if (line := common.validity_line(record.validity)) is not None:
            st.caption(line)
        if show_figures:
            st.markdown(common.badges(record))
        details[entry.label] = {
            "logits": [round(float(v), 6) for v in record.logits], "options": result.options,
            "target": record.target, "validity": record.validity, "metadata": result.metadata,
            "colour": {"divisor": scale.divisors[i], "limits": list(scale.limits[i]), "mode": scale.mode},
        }

if not tiles:
    st.stop()
st.caption(common.scale_caption(scale))

with st.expander("What each map is (logits, resolved options, target, validity, metadata, colour scale)"):
    st.json(details)

shown = [(entry, result) for entry, result in results if entry.path in tiles]
probs = go.Figure()
for entry, result in shown:
    z = np.exp(result.record.logits - result.record.logits.max())
    probs.add_bar(name=entry.label, x=list(range(len(z))), y=z / z.sum())
probs.update_layout(barmode="group", height=260, margin=dict(l=10, r=10, t=30, b=10), title="Class probabilities",
                    xaxis=dict(title="class", dtick=1), yaxis=dict(title="p", range=[0, 1]))
st.plotly_chart(probs, key="probabilities")

records = [result.record for _, result in shown]
titles = [f"{entry.variant} ({entry.name})" for entry, _ in shown]  # ASCII: OpenCV draws the grid titles
grid = overlay_grid(list(tiles.values()), titles, scale=scale)
stem = f"{image.key.replace(':', '-')[:24]}-{sel.method}"
left, middle, right = st.columns(3)
left.download_button("Overlay grid (PNG)", encode_png(grid), f"{stem}.png", "image/png", key="download_png")
middle.download_button("Figures (CSV)", records_csv(records), f"{stem}.csv", "text/csv", key="download_csv")
right.download_button("Figures (JSON)", json.dumps([r.scalars() for r in records], indent=2) + "\n",
                      f"{stem}.json", "application/json", key="download_json")
