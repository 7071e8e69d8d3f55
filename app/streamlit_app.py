"""infsa-viz app: ``streamlit run app`` from the repository root (``-- --models DIR …`` adds models,
``-- --data folder:PATH`` adds images, ``-- --plugins FILE_OR_MODULE`` registers methods, metrics
and formats).

Wires the pages; the shared sidebar (models, image, method, display) is rendered here, before the
page, so its state survives page switches, and the view is kept in the URL.
"""

import warmup

warmup.start()  # first: scikit-learn and pandas load while torch and the library do

import streamlit as st  # noqa: E402

import draw  # noqa: E402
import plugins  # noqa: E402
import sidebar  # noqa: E402

for problem in plugins.load_plugins(plugins.plugin_specs()):  # before any page reads a registry
    st.sidebar.error(problem)

st.set_page_config(page_title="infsa-viz", layout="wide")
page = st.navigation([
    st.Page("views/compare.py", title="Side by side", icon=":material/compare:", default=True),
    st.Page("views/grid.py", title="Methods × models", icon=":material/grid_view:"),
    st.Page("views/attention.py", title="Attention", icon=":material/visibility:"),
    st.Page("views/spectral.py", title="Spectral", icon=":material/blur_on:"),
    st.Page("views/gallery.py", title="Gallery", icon=":material/photo_library:"),
    st.Page("views/curves.py", title="Curves & reports", icon=":material/show_chart:"),
    st.Page("views/glossary.py", title="Glossary", icon=":material/menu_book:"),
])
draw.page_style()
sidebar.render(page.title)
page.run()
