"""Slice: a table of the image set — every model's prediction and confidence, and per-image figures
of the sidebar's method from the metric registry — filtered by class, correctness, disagreement
between models, a figure's range and (cued benchmarks) the cue's relation to the label; a row opens
its image on every page. LIT's data table, for our models and maps."""

import numpy as np
import streamlit as st

import exports
import inputs
import safe
import sidebar
import slicing
import urlstate
from infsa_viz.metrics.registry import METRICS, figures_of

SIZES = [100, 200, 500, 1000, 2000]

sel = sidebar.selection()
st.title("Slice")
set_key, data = sidebar.require_set(sel, "slice is a table of")
sizes = [s for s in SIZES if s < len(data)] + [len(data)]
urlstate.keep("slice_images", sizes, sizes[min(1, len(sizes) - 1)])
metric_names = slicing.scored_metrics()
urlstate.keep_list("slice_metrics", metric_names, slicing.default_metrics(sel.models))
top = st.columns([1, 2])
n = top[0].select_slider("Images", sizes, key="slice_images", help="the first images of the set")
chosen = top[1].multiselect("Figures of the metrics", metric_names, key="slice_metrics",
                            format_func=lambda m: f"{m} ({METRICS[m].category})",
                            help="per-image figures of the sidebar's method from the metric registry; "
                                 "perturbation metrics run many forwards per image (slow for many images)")

columns: dict[str, np.ndarray] = {"image": np.arange(1, n + 1)}  # numbered from 1, as the sidebar
set_names = inputs.set_classes(set_key)
columns["label"] = np.array([set_names[c] if 0 <= c < len(set_names) else "—" for c in data.labels[:n]])
cue = slicing.cues(set_key, n)
if cue is not None:
    columns["cue"] = cue
predicted_names, right, figure_columns = [], [], {}
with st.spinner(f"Classifying and scoring {n} images…"):
    for entry in sel.models:
        names = inputs.class_names(entry)
        try:
            predicted, confidence, labels = slicing.predictions(entry, set_key, n)
        except ValueError as err:  # the set's forward does not fit in memory
            st.error(safe.line(f"{safe.md(entry.label)}: {safe.md(err)}"))
            continue
        called = np.array([names[c] if c < len(names) else str(c) for c in predicted])
        columns[f"prediction · {entry.name}"] = called
        columns[f"p · {entry.name}"] = confidence
        predicted_names.append(called)
        if labels is not None:
            columns[f"correct · {entry.name}"] = predicted == labels
            right.append(predicted == labels)
        try:
            values = slicing.figures(entry, set_key, n, sel.method, sel.options, chosen, sel.target)
        except ValueError as err:
            st.error(safe.line(f"{safe.md(entry.label)}: {safe.md(err)}"))
            continue
        undefined = []
        for figure in figures_of(chosen):
            if not np.isfinite(values[figure.key]).any():  # no box or scene for this model: said, not shown
                undefined.append(figure.label)
                continue
            name = f"{figure.label} · {entry.name}"
            columns[name] = values[figure.key]
            figure_columns[name] = figure
        if undefined:
            st.caption(safe.line(f"{safe.md(entry.name)}: no value of {', '.join(undefined)} on these images"
                                 f"{' (no boxes or scenes for its classes)' if labels is None else ''}", 200))

keep = np.ones(n, dtype=bool)
filters = st.columns(4)
classes = ["any", *range(len(set_names))]
urlstate.keep("slice_class", classes, "any")
cls = filters[0].selectbox("Label", classes, key="slice_class", format_func=lambda c: "any label" if c == "any"
                           else safe.line(set_names[c], 40))
if cls != "any":
    keep &= data.labels[:n] == cls
verdicts = ["any", "every model right", "some model wrong", "every model wrong"]
urlstate.keep("slice_correct", verdicts, "any")
verdict = filters[1].selectbox("Correctness", verdicts, key="slice_correct", disabled=not right,
                               help="over the models whose classes the set's labels are")
if right and verdict != "any":
    stacked = np.stack(right)
    keep &= {"every model right": stacked.all(0), "some model wrong": ~stacked.all(0),
             "every model wrong": ~stacked.any(0)}[verdict]
urlstate.keep("slice_disagree", [True, False], False)
if filters[2].toggle("Models disagree", key="slice_disagree", disabled=len(sel.models) < 2,
                     help="the models predict classes of different names"):
    keep &= np.array([len(set(row)) > 1 for row in zip(*predicted_names)]) if len(predicted_names) > 1 else False
conditions = ["any", *sorted(set(cue.tolist()))] if cue is not None else ["any"]
urlstate.keep("slice_cue", conditions, "any")
condition = filters[3].selectbox("Cue", conditions, key="slice_cue", disabled=cue is None,
                                 help="the cue agrees with the label (consistent), another class's (conflicting), "
                                      "or none (cued benchmarks)")
if cue is not None and condition != "any":
    keep &= cue == condition
if figure_columns:
    names = ["none", *figure_columns]
    urlstate.keep("slice_figure", names, "none")
    left, right_col = st.columns([1, 2])
    figure = left.selectbox("Figure range", names, key="slice_figure")
    if figure != "none":
        values = columns[figure].astype(np.float64)
        finite = values[np.isfinite(values)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        hi = hi if hi > lo else lo + 1.0
        current = st.session_state.get("slice_range")
        fits = isinstance(current, tuple) and len(current) == 2 and lo <= current[0] <= current[1] <= hi
        urlstate.keep("slice_range", [current] if fits else [], (lo, hi), f"outside {lo:.3g} … {hi:.3g}")
        low, high = right_col.slider(f"{figure_columns[figure].label} from … to", lo, hi, key="slice_range",
                                     help=figure_columns[figure].direction)
        keep &= np.isfinite(values) & (values >= low) & (values <= high)

rows = np.flatnonzero(keep)
st.caption(f"{len(rows)} of {n} images of the {safe.md(inputs.set_title(set_key))}; figures of **{sel.method}** maps "
           "(class-explaining methods explain the sidebar's class). Click a row to open its image on every page.")


def _open(index: int) -> None:
    st.session_state["image_set"] = set_key
    st.session_state["only_wrong"] = False
    st.session_state["image_number"] = int(index) + 1


def _clicked() -> None:
    picked = st.session_state["slice_table"].selection.get("rows", [])
    if picked:
        _open(rows[picked[0]])


import pandas as pd  # noqa: E402  (loaded by the warm-up thread)

table = pd.DataFrame({k: v[rows] for k, v in columns.items()})
st.dataframe(table, key="slice_table", hide_index=True, on_select=_clicked, selection_mode="single-row",
             width="stretch", height=min(420, 38 + 35 * max(len(rows), 1)),
             column_config={k: st.column_config.NumberColumn(format="%.3f") for k in [*figure_columns]
                            } | {k: st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.2f")
                                 for k in columns if k.startswith("p · ")})
if len(rows):
    left, right_col = st.columns([2, 1])
    urlstate.keep("slice_open", rows.tolist(), int(rows[0]))
    pick = left.selectbox("Open image", rows.tolist(), key="slice_open", format_func=lambda i: f"#{i + 1}")
    right_col.button("Open on every page", key="slice_open_button", on_click=_open, args=(pick,), width="stretch")
exports.buttons(exports.stem(set_key, "slice", sel.method, n), key="slice",
                table=lambda: table.to_dict("records"),
                settings=exports.settings(sel, extra={"set": set_key, "images": int(n), "metrics": list(chosen),
                                                      "filters": {"label": cls, "correctness": verdict,
                                                                  "cue": condition, "shown": int(len(rows))}}))
