"""Side by side: the same image and method on every selected model, one colour scale.

The overlays are drawn first (maps only: milliseconds), then the per-map figures fill a small table
under them, so the page shows what matters while the figures are computed.
"""

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
from infsa_viz.maps import METHODS

#: Overlay columns at least (one model's overlay takes half the width, as two models' do).
MIN_COLUMNS = 2

sel = sidebar.selection()
st.title("Side by side")
sidebar.require_inputs(sel)
image = sel.image
spec = METHODS[sel.method]
names = {e.path: inputs.class_names(e) for e in catalog.loaded(sel.models)}
explains = f" Explains {safe.md(targets.describe(sel.target, list(names.values())))}." if spec.explains_class else ""
settings = method_options.describe(sel.method, sel.options)
st.caption(f"**{sel.method}** ({spec.family}): {spec.description}{'; ' + settings if settings else ''}.{explains} "
           f"Image: {safe.md(image.source)}.")
urlstate.keep("badges", [True, False], True)  # a link's value, checked (no value= beside the session state)
show_figures = st.toggle(f"Per-map figures ({draw.figures_names()})", key="badges")

if show_figures and spec.explains_class:  # a gradient map is costly: compute it once, with its figures
    explained = sidebar.each_model(sel, compute.explain, sel.method, sel.options)
    views = [(entry, r if isinstance(r, str) else r.view) for entry, r in explained]
else:  # the maps first (milliseconds), the figures under them
    explained, views = None, sidebar.each_model(sel, compute.map_view, sel.method, sel.options)
pngs, scale = draw.tiles(sel.display, sel.method, views)
# one model's overlay at the whole width (804 px of a 1280 px window) would push its prediction and
# figures below the first screen
columns = st.columns(max(len(views), MIN_COLUMNS))
for column, (entry, view) in zip(columns, views):
    with column:
        if isinstance(view, str):
            st.error(safe.line(f"{safe.md(entry.label)}: {safe.md(view)}"))
            continue
        st.image(pngs[entry.path], caption=safe.md(entry.label), width="stretch", output_format="PNG")
        if scale is not None and scale.common_limits is None:  # a per-map scale, on request: labelled as such
            st.html(draw.colour_bar(scale, list(pngs).index(entry.path), "own scale: " + draw.short_unit(scale)))
        if (flat := draw.flat_note(view.map)) is not None:
            st.caption(flat)
        probs = compute.probabilities(entry, image)
        st.markdown(draw.prediction_line(names[entry.path], probs, compute.label_for(entry, image)))
        if view.target is not None:
            st.caption(f"explains {safe.md(names[entry.path][view.target])}")
        if (line := draw.validity_line(view.validity)) is not None:
            st.caption(line)
        if (note := inputs.fit_note(entry, image)) is not None:
            st.caption(safe.md(note, None))
if not pngs:
    st.stop()
if scale.common_limits is not None:
    st.html(draw.colour_bar(scale, 0, draw.short_unit(scale)))
st.caption(draw.scale_caption(scale))

shown = [(entry, view) for entry, view in views if entry.path in pngs]
figures = st.empty()
records = []
if show_figures:
    if explained is None:
        with figures.container():
            with st.spinner(f"Per-map figures ({draw.figures_names()})…"):
                explained = sidebar.each_model(sel, compute.explain, sel.method, sel.options)
    records = [(safe.md(entry.label), r.record) for entry, r in explained if not isinstance(r, str)]
    with figures.container():
        st.markdown(f"**Per-map figures** ({draw.figures_caption()})")
        st.markdown(draw.figures_table(records))

resized = [(entry, compute.model_input(entry, image)) for entry, _ in shown]
resized = [(entry, prepared) for entry, prepared in resized
           if image.index is None or prepared.display[0].shape != image.data.images[0].shape]
warnings: dict[str, list[str]] = {}
for entry, prepared in resized:
    model = catalog.get_model(entry)[0]
    for warning in inputs.input_warnings(model, inputs.for_model(image, entry), prepared.tensor):
        warnings.setdefault(warning, []).append(entry.name)
for warning, who in warnings.items():  # once per upload, naming the models it concerns
    st.warning(warning + ("" if len(who) == len(resized) else f" ({safe.md(', '.join(who))})"))
if not resized:
    st.caption("Model input: the image as it is (already each model's input size and channels).")
else:
    with st.expander("Model input: the exact pixels each model sees"):
        for column, (entry, prepared) in zip(st.columns(max(len(resized), MIN_COLUMNS)), resized):
            model = catalog.get_model(entry)[0]
            column.image(draw.input_png(prepared.display[0]), caption=f"{safe.md(entry.label)}: model input", width="stretch",
                         output_format="PNG")
            column.caption(inputs.input_summary(model, inputs.for_model(image, entry)))

st.markdown("**Most probable classes**: " + " · ".join(
    f"{safe.md(entry.label)}: {draw.top_classes(names[entry.path], compute.probabilities(entry, image))}" for entry, _ in shown))

with st.expander("What each map is (logits, resolved options, target, validity, metadata, colour scale)"):
    st.json({entry.label: {
        "logits": [round(float(v), 6) for v in compute.logits(entry, image)], "options": view.options,
        "target": view.target, "validity": view.validity, "metadata": view.metadata,
        "colour": {"divisor": scale.divisors[i], "limits": list(scale.limits[i]), "mode": scale.mode,
                   "signed": scale.signed, "colormap": scale.colormap, "clip": scale.clip},
    } for i, (entry, view) in enumerate(shown)}, expanded=False)

name = exports.stem(image.base, sel.method)
exports.buttons(
    name, key="side", settings=exports.settings(sel),
    png=lambda: exports.overlays_png([(f"{e.variant} ({e.name})", v) for e, v in shown], scale,
                                     display=sel.display, unit=draw.short_unit(scale)),
    maps=lambda: {e.label: v.map for e, v in shown}, records=(lambda: [r for _, r in records]) if records else None)
