"""Gallery: a grid of one model's overlays over many images of the set, filtered by class,
correctness and confidence; "Show" opens an image on every page.

Predictions of the whole set are computed once per model (:func:`compute.set_probabilities`);
correctness and label filters apply only to a model trained on the set's classes.
"""

import numpy as np
import streamlit as st

import compute
import draw
import exports
import inputs
import safe
import sidebar
import urlstate
from infsa_viz.maps import selector_options

PER_PAGE = 24
PER_ROW = 6

sel = sidebar.selection()
st.title("Gallery")
set_key, data = sidebar.require_set(sel, "gallery shows")
usable = sel.models
by_path = {e.path: e for e in usable}
urlstate.keep("gallery_model", list(by_path), usable[0].path)
top = st.columns([2, 2, 1])
entry = by_path[top[0].selectbox("Model", list(by_path), key="gallery_model", format_func=lambda p: by_path[p].label)]
set_labels = inputs.set_labels(entry, set_key)
judged = set_labels is not None
names = inputs.class_names(entry)
try:
    with st.spinner(f"Classifying {len(data)} images with {entry.name}…"):
        probs = compute.set_probabilities(entry, set_key)
except ValueError as err:  # the set's forward does not fit in memory
    st.error(safe.line(f"{safe.md(entry.label)}: {safe.md(err)}"))
    st.stop()
predicted, confidence = probs.argmax(-1), probs.max(-1)
labels = set_labels if judged else data.labels
correct = predicted == labels if judged else None
by_what = "label" if judged else "predicted class"
classes = ["any", *range(len(names))]
urlstate.keep("gallery_class", classes, "any")
urlstate.keep("gallery_order", ["index", "least confident", "most confident"], "index")
urlstate.keep("gallery_correct", ["all", "wrong", "correct"], "all")
confidence_range = st.session_state.get("gallery_confidence")
urlstate.keep("gallery_confidence", [confidence_range] if isinstance(confidence_range, tuple) else [], (0.0, 1.0))
cls = top[1].selectbox(f"Class ({by_what})", classes, key="gallery_class",
                       format_func=lambda c: "any class" if c == "any" else safe.line(names[c], 40))
order = top[2].selectbox("Order", ["index", "least confident", "most confident"], key="gallery_order")
left, right = st.columns([1, 2])
which = left.radio("Correctness", ["all", "wrong", "correct"], key="gallery_correct", horizontal=True,
                   disabled=not judged,
                   help="for a model trained on this set's classes" if judged else
                   f"{entry.name} was not trained on this set's classes: its predictions are not scored")
low, high = right.slider("Confidence p(predicted)", 0.0, 1.0, step=0.05, key="gallery_confidence")

keep = (confidence >= low) & (confidence <= high)
if cls != "any":
    keep &= (labels if judged else predicted) == cls
if judged and which != "all":
    keep &= ~correct if which == "wrong" else correct
indices = np.flatnonzero(keep)
if order != "index":
    indices = indices[np.argsort(confidence[indices] * (1 if order == "least confident" else -1), kind="stable")]
pages = max(1, -(-len(indices) // PER_PAGE))
urlstate.keep_range("gallery_page", 1, pages, 1)
page = int(st.number_input(f"Page (of {pages})", 1, pages, key="gallery_page"))
shown = [int(i) for i in indices[(page - 1) * PER_PAGE: page * PER_PAGE]]
st.caption(f"{len(indices)} of {len(data)} images of the {safe.md(inputs.set_title(set_key))}; {sel.method} maps of "
           f"{safe.md(entry.label)}" + ("" if judged else " (not trained on this set's classes: labels not scored)") +
           "; class-explaining methods explain the prediction here.")
if not shown:
    st.info("No image passes these filters.")
    st.stop()


def _show(index: int) -> None:
    st.session_state["image_set"] = set_key
    st.session_state["only_wrong"] = False
    st.session_state["image_number"] = index + 1


options = selector_options(sel.method, layer=sel.layer, head=sel.head, strict=False) | {
    k: v for k, v in sel.options.items() if k == "discard_ratio"}
try:
    views = compute.set_views(entry, set_key, shown, sel.method, options)
except ValueError as err:
    st.error(safe.line(f"{safe.md(entry.label)}: {safe.md(err)}"))
    st.stop()
scale = draw.scale_of([v.map for v in views], sel.method, sel.display)
tiles = st.container(key="gallery_tiles")  # rows of PER_ROW, or of half as many where they would not fit (draw.CSS)
for start in range(0, len(shown), PER_ROW):
    for column, i, view, k in zip(tiles.columns(PER_ROW), shown[start:start + PER_ROW], views[start:start + PER_ROW],
                                  range(start, start + PER_ROW)):
        verdict = "" if not judged else (" ✓" if correct[i] else f" ✗ ({safe.md(names[labels[i]], 40)})")
        column.image(draw.tile_png(view, scale, k, sel.display), width="stretch", output_format="PNG",
                     caption=f"#{i + 1}: {safe.md(names[predicted[i]], 40)} {confidence[i]:.0%}{verdict}")
        column.button("Show", key=f"gallery_show_{i}", on_click=_show, args=(i,), width="stretch",
                      help=f"open image #{i + 1} on every page")
st.html(draw.colour_bar(scale, 0, draw.short_unit(scale)) if scale.common_limits is not None else "")
st.caption(draw.scale_caption(scale))
exports.buttons(exports.stem(set_key, entry.name, sel.method, f"page{page}"), key="gallery",
                settings=exports.settings(sel, options=options, extra={
                    "gallery": {"model": entry.name, "class": cls, "correctness": which, "confidence": [low, high],
                                "order": order, "page": page, "images": [i + 1 for i in shown]}}),
                png=lambda: exports.overlays_png([(f"#{i + 1}", v) for i, v in zip(shown, views)], scale,
                                                 display=sel.display, ncols=PER_ROW),
                maps=lambda: {f"image {i + 1}": v.map for i, v in zip(shown, views)})
