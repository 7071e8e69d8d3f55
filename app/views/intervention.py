"""Intervention: change the image and watch every model's prediction, probabilities and maps move.

On a benchmark scene, remove or swap any set of its objects (the target — swapped for another
digit in the cued benchmarks —, each distractor, the cue, the background) as the benchmark's
generator defines it, beside each model's per-object evidence (the drop of the explained class
when that object alone is changed: the library's ``object_importance``) and each map's share and
density on every object. On a photo or an upload, occlude a box (drawn on the image, or set with
the sliders). LIT's counterfactual editor and FunnyBirds' part removal, on our benchmarks.
"""

import numpy as np
import streamlit as st

import compute
import draw
import exports
import inputs
import intervene
import safe
import sidebar
import urlstate
import warmup
from infsa_viz.maps import METHODS

warmup.settled()  # before plotly reads sys.modules["pandas"]
import plotly.graph_objects as go  # noqa: E402

sel = sidebar.selection()
st.title("Intervention")
sidebar.require_inputs(sel)
image = sel.image
scene = intervene.scene_of(image)
spec = METHODS[sel.method]


def _box_drawn() -> None:
    """A box drawn on the picture sets the occlusion sliders (shares of the width and height)."""
    boxes = st.session_state["occlude_draw"].selection.get("box", [])
    if boxes:
        h, w = image.data.images[0].shape[:2]
        (x0, x1), (y0, y1) = sorted(boxes[0]["x"]), sorted(boxes[0]["y"])
        st.session_state["occlude_x"] = (round(min(max(x0 / w, 0.0), 1.0), 2), round(min(max(x1 / w, 0.0), 1.0), 2))
        st.session_state["occlude_y"] = (round(min(max(y0 / h, 0.0), 1.0), 2), round(min(max(y1 / h, 0.0), 1.0), 2))


if scene is not None:
    shown = intervene.shown_objects(scene)
    urlstate.keep_list("intervene_objects", shown, [])
    chosen = st.multiselect("Change these objects", shown, key="intervene_objects",
                            format_func=lambda n: f"{n} ({intervene.rule(scene, n)})",
                            help="Each object's in-distribution intervention: " + scene.intervention_rule)
    st.caption(f"{safe.md(image.source)}. The table under each model gives every object's evidence: the drop of "
               "the explained class's probability when that object **alone** is changed, and each map's share "
               "(and density) of positive mass on the object's visible pixels.")
    box = fill = None
else:
    urlstate.keep("occlude_fill", list(intervene.FILLS), intervene.FILLS[0])
    for key in ("occlude_x", "occlude_y"):
        value = st.session_state.get(key)
        urlstate.keep(key, [value] if isinstance(value, tuple) and len(value) == 2 else [], (0.25, 0.75))
    left, right = st.columns([1, 1])
    with left:
        source = image.data.images[0]
        picture = go.Figure(go.Image(z=np.repeat(source[..., None], 3, -1) if source.ndim == 2 else source,
                                     hoverinfo="skip"))
        h, w = source.shape[:2]
        drawn = (st.session_state["occlude_x"], st.session_state["occlude_y"])
        picture.add_shape(type="rect", x0=drawn[0][0] * w, x1=drawn[0][1] * w, y0=drawn[1][0] * h,
                          y1=drawn[1][1] * h, line={"color": "red", "width": 2})
        picture.update_layout(height=260, margin={"l": 0, "r": 0, "t": 0, "b": 0}, dragmode="select",
                              xaxis={"visible": False}, yaxis={"visible": False})
        st.plotly_chart(picture, key="occlude_draw", on_select=_box_drawn, selection_mode="box",
                        config={"modeBarButtonsToRemove": ["lasso2d"]})
    with right:
        x = st.slider("Box: left … right", 0.0, 1.0, step=0.01, key="occlude_x", help="share of the image's width")
        y = st.slider("Box: top … bottom", 0.0, 1.0, step=0.01, key="occlude_y", help="share of the image's height")
        fill = st.radio("Fill", intervene.FILLS, key="occlude_fill", horizontal=True)
    box = (x[0], y[0], x[1], y[1])
    chosen = []
    st.caption(f"{safe.md(image.source)}: draw a box on the picture (box select) or set it with the sliders; "
               "the box is filled and every model sees the occluded image.")

computed = []  # (entry, names, given, target, after, clean view, changed view) per model that runs
for entry in sel.models:
    given = inputs.for_model(image, entry)
    try:
        target = compute.class_index(entry, image, sel.target)
        after = intervene.occluded(given, box, fill) if scene is None else \
            intervene.changed(given, scene, chosen) if chosen else given
        views = (compute.map_view(entry, image, sel.method, sel.options, target),
                 compute.map_view(entry, after, sel.method, sel.options, target))
    except ValueError as err:
        st.error(safe.line(f"{safe.md(entry.label)}: {safe.md(err)}"))
        continue
    computed.append((entry, inputs.class_names(entry), given, target, after, *views))

# One colour scale for every map of every model (the sidebar's Display may ask for one per map).
scale = draw.scale_of([v.map for *_, clean, changed in computed for v in (clean, changed)], sel.method, sel.display) \
    if computed else None
if scale is not None:
    st.caption(draw.scale_caption(scale))
    if scale.common_limits is not None:
        st.html(draw.colour_bar(scale, 0, draw.short_unit(scale)))
what_changed = "changed" if chosen or box else "unchanged"
exported: dict[str, np.ndarray] = {}
tiles: list[tuple[str, object]] = []
tables: list[dict] = []
for k, (entry, names, given, target, after, clean_view, after_view) in enumerate(computed):
    st.markdown(f"**{safe.md(entry.label)}**")
    before_p, after_p = compute.probabilities(entry, image), compute.probabilities(entry, after)
    columns = st.columns(3)  # clean, changed, the change in numbers (below them when narrow)
    for i, (column, view, what, probs, label) in enumerate(zip(
            columns, (clean_view, after_view), ("clean", what_changed), (before_p, after_p),
            (given.label, after.label))):
        with column:
            st.image(draw.tile_png(view, scale, 2 * k + i, sel.display), caption=f"{what} · {safe.md(entry.label)}",
                     width="stretch", output_format="PNG")
            if scale.common_limits is None:  # a per-map scale, on request: each map says its own range
                st.html(draw.colour_bar(scale, 2 * k + i, "own scale: " + draw.short_unit(scale)))
            if (flat := draw.flat_note(view.map)) is not None:
                st.caption(flat)
            st.markdown(draw.prediction_line(names, probs, label))
            st.caption(draw.top_classes(names, probs))
            exported[f"{entry.name} {what}"] = view.map
            tiles.append((f"{entry.name} {what}", view))
    drop = before_p[target] - after_p[target]
    with columns[2]:
        st.markdown(f"p({safe.md(names[target] if target < len(names) else target)}) {before_p[target]:.3f} → "
                    f"{after_p[target]:.3f}: **Δp = {drop:+.3f}**")
        st.caption("the class the sidebar explains" + ("" if spec.explains_class else
                                                        " (for the evidence below; this method explains none)"))
    if scene is None:
        continue
    found = intervene.object_evidence(entry, given, scene, target, [clean_view.map, after_view.map])
    record = found.importance
    visible = record.masks[0].reshape(record.masks.shape[1], -1).sum(-1)
    rows = [{"object": name, "intervention": intervene.rule(scene, name),
             "Δp alone": float(record.prob_drop[0, j]), "Δlogit alone": float(record.logit_drop[0, j]),
             "visible px": int(visible[j]), "map share": float(found.shares[0][j]),
             "map density": float(found.densities[0][j]), "map share after": float(found.shares[1][j])}
            for j, name in enumerate(record.objects) if visible[j] > 0]
    if rows:  # a table that wraps at any width (the export keeps every digit)
        st.markdown(draw.markdown_table(list(rows[0]), [[f"{v:.3f}" if isinstance(v, float) else safe.md(v, None)
                                                         for v in row.values()] for row in rows]))
    tables += [{"model": entry.name, **row} for row in rows]

if tiles:
    settings = exports.settings(sel, extra={"intervention": chosen, "occlusion": None if box is None else
                                            {"box": list(box), "fill": fill}, "colour_scale": scale.mode})
    exports.buttons(exports.stem(image.base, "intervention", *chosen), key="intervention", settings=settings,
                    png=lambda: exports.overlays_png(tiles, scale, display=sel.display, ncols=2),
                    maps=lambda: exported, table=(lambda: tables) if tables else None)
