"""Methods × models: rows are map methods, columns are models, one colour scale per row."""

import streamlit as st

import common
import sidebar
from infsa_viz.maps import METHODS, selector_options

DEFAULT_METHODS = ["attention", "rollout", "visits", "saliency"]

sel = sidebar.selection()
st.title("Methods × models")
sidebar.require_inputs(sel)
methods = st.multiselect("Methods (rows)", [m for m, s in METHODS.items() if not s.needs_truth], default=[m for m in DEFAULT_METHODS if m in METHODS],
                         key="grid_methods", format_func=lambda m: f"{m} ({METHODS[m].family})",
                         help="Each row shares one colour scale (its own colour bar under every tile); "
                              "rows do not share scales, since methods have different units")
st.caption(f"{sel.image.source}; layer and head from the sidebar where a method reads one layer; "
           f"class-explaining methods explain {common.target_label(sel.target)}.")
header = st.columns(len(sel.models))
for column, entry in zip(header, sel.models):
    column.markdown(f"**{entry.label}**")
for method in methods:
    spec = METHODS[method]
    st.markdown(f"**{method}** — {spec.description}" + (" (signed: diverging colours, white = 0)" if spec.signed else ""))
    options = selector_options(method, layer=sel.layer, head=sel.head, strict=False)
    results = sidebar.map_views(sel, method, options)
    tiles, scale = common.draw(sel.display, method, results)
    for column, (entry, result) in zip(st.columns(len(results)), results):
        with column:
            if isinstance(result, str):
                st.error(f"{entry.label}: {result}")
                continue
            st.image(tiles[entry.path], caption=f"{method} · {entry.label}", width="stretch", output_format="PNG")
            st.caption(common.prediction_line(entry, sel.image))
    if scale is not None:
        st.caption(common.scale_caption(scale))
