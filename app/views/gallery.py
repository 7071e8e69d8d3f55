"""Gallery: the test split with every selected model's prediction, sortable by any column.

Predictions of the whole split are computed once per model (:func:`common.test_probabilities`),
so sorting and filtering are instant; picking a row shows that image on every page.
"""

import base64

import numpy as np
import pandas as pd
import streamlit as st

import common
import sidebar
from infsa_viz.data import test_split
from infsa_viz.overlay import encode_png

SHOWN = 60

sel = sidebar.selection()
st.title("Gallery")
usable = [e for e in sel.models if common.load_error(e) is None]
if not usable:
    st.info("Select at least one model that loads in the sidebar.")
    st.stop()
split = test_split()
labels = split.labels
table = pd.DataFrame({"image": np.arange(len(labels)), "label": [common.class_name(None, int(c)) for c in labels]})
for entry in usable:
    probs = common.test_probabilities(entry.path, entry.version)
    predicted = probs.argmax(-1)
    table[f"{entry.name}: predicted"] = [common.class_name(entry, int(c)) for c in predicted]
    table[f"{entry.name}: p(predicted)"] = probs.max(-1)
    table[f"{entry.name}: p(label)"] = probs[np.arange(len(labels)), labels]
    table[f"{entry.name}: correct"] = predicted == labels
numeric = [c for c in table.columns if c != "label" and not c.endswith(": predicted")]
left, middle, right = st.columns([3, 2, 2])
by = left.selectbox("Sort by", numeric, index=numeric.index(f"{usable[0].name}: p(label)"), key="gallery_sort",
                    help="p(label): the model's probability of the true class (higher is better)")
ascending = middle.toggle("Ascending (worst first)", value=True, key="gallery_ascending")
only_wrong = right.toggle("Only images some model gets wrong", value=False, key="gallery_wrong")
shown = table
if only_wrong:
    shown = shown[~np.logical_and.reduce([table[f"{e.name}: correct"] for e in usable])]
shown = shown.sort_values(by, ascending=ascending, kind="stable").head(SHOWN).copy()
shown.insert(1, "thumbnail", [
    "data:image/png;base64," + base64.b64encode(encode_png(np.repeat(split.images[i][..., None], 3, -1)
                                                           if split.images[i].ndim == 2 else split.images[i])).decode()
    for i in shown["image"]])
st.caption(f"{len(shown)} of {len(table)} test images, sorted by {by} ({'ascending' if ascending else 'descending'}); "
           "click a column header to re-sort, pick a row to show that image on every page. "
           "Probabilities are percentages; higher p(label) is better.")


def _pick() -> None:
    rows = st.session_state["gallery_table"].selection.get("rows", [])
    if rows:
        st.session_state["image_source"] = "Test split"
        st.session_state["only_wrong"] = False
        st.session_state["image_index"] = int(shown.iloc[rows[0]]["image"])


config = {"thumbnail": st.column_config.ImageColumn("image", width="small"),
          "image": st.column_config.NumberColumn("#", format="%d")}
for column in shown.columns:
    if "p(" in column:
        config[column] = st.column_config.ProgressColumn(column, min_value=0.0, max_value=1.0, format="percent")
st.dataframe(shown, key="gallery_table", hide_index=True, column_config=config, on_select=_pick,
             selection_mode="single-row", row_height=40)
