"""Methods × models: rows are map methods, columns are models, one colour scale per row; a
compact mode draws small tiles so a few methods × models fit one screen."""

import streamlit as st

import catalog
import compute
import draw
import exports
import inputs
import options as method_options
import safe
import sidebar
import targets
import urlstate
from infsa_viz.maps import METHODS, selector_options

DEFAULT_METHODS = ["attention", "rollout", "visits", "saliency"]

sel = sidebar.selection()
st.title("Methods × models")
sidebar.require_inputs(sel)
choices = [m for m, s in METHODS.items() if not s.needs_truth]
urlstate.keep_list("grid_methods", choices, [m for m in DEFAULT_METHODS if m in METHODS])
urlstate.keep("grid_compact", [True, False], True)
methods = st.multiselect("Methods (rows)", choices, key="grid_methods",
                         format_func=lambda m: f"{m} ({METHODS[m].family})",
                         help="Each row shares one colour scale (its colour bar beside it); rows do not share "
                              "scales, since methods have different units")
compact = st.toggle("Compact", key="grid_compact", help="small tiles: the whole grid on one screen")
names = {e.path: inputs.class_names(e) for e in catalog.loaded(sel.models)}
st.caption(f"{safe.md(sel.image.source)}; layer and head from the sidebar where a method reads one layer; "
           f"class-explaining methods explain {safe.md(targets.describe(sel.target, list(names.values())))}.")
#: At least this many model columns: one model's tiles take a column of a three-column row, not the rest
#: of the page (a screenshot at 1280 x 800 showed one model's maps at 43 % of the width).
MIN_MODEL_COLUMNS = 2
widths = [1.3] + [1] * len(sel.models) + [1] * max(0, MIN_MODEL_COLUMNS - len(sel.models))
header = st.container(key="grid_header").columns(widths)
header[0].markdown("**method**")
for column, entry in zip(header[1:], sel.models):
    column.markdown(f"**{safe.md(entry.label)}**")
    if entry.path in names:
        column.caption(draw.prediction_line(names[entry.path], compute.probabilities(entry, sel.image),
                                            compute.label_for(entry, sel.image)))
drawn = []
tiles_area = st.container(key="grid_compact_tiles" if compact else "grid_tiles")
for method in methods:
    spec = METHODS[method]
    options = selector_options(method, layer=sel.layer, head=sel.head, strict=False)
    options |= {k: v for k, v in sel.options.items() if k in spec.defaults and k not in options}  # γ, steps, …
    results = sidebar.each_model(sel, compute.map_view, method, options)
    pngs, scale = draw.tiles(sel.display, method, results)
    row = tiles_area.columns(widths, vertical_alignment="center")
    with row[0]:
        st.markdown(f"**{method}**" + ("" if compact else f" — {spec.description}"))
        if words := method_options.describe(method, options):
            st.caption(words)
        if scale is not None:
            st.html(draw.colour_bar(scale, 0, "own range per map" if scale.common_limits is None else
                                    draw.short_unit(scale)))
    for column, (entry, result) in zip(row[1:], results):
        with column:
            if isinstance(result, str):
                st.error(safe.line(safe.md(result) if compact else f"{safe.md(entry.label)}: {safe.md(result)}"))
                continue
            what = f"{method} · {safe.md(entry.label)}"  # compact: the header names the model, the row the method
            flat = draw.flat_note(result.map)
            st.image(pngs[entry.path], caption=None if compact else what, alt=what + (" (flat map)" if flat else ""),
                     output_format="PNG", width="stretch")
            if flat is not None:
                st.caption(":orange[flat]" if compact else flat)
    if scale is not None:
        drawn.append((method, [(e, v) for e, v in results if e.path in pngs], scale))
        if not compact:
            tiles_area.caption(draw.scale_caption(scale))

if drawn:
    exports.buttons(
        exports.stem(sel.image.base, "methods-x-models"), key="grid",
        settings=exports.settings(sel, extra={"rows": [m for m, _, _ in drawn]}),
        png=lambda: exports.grid_png([t for m, views, scale in drawn for t in exports.overlay_tiles(
            [(f"{m} {e.name}", v) for e, v in views], scale, display=sel.display)], ncols=len(sel.models)),
        maps=lambda: {f"{m} {e.label}": v.map for m, views, _ in drawn for e, v in views})
