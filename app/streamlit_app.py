"""infsa-viz app: ``streamlit run app`` from the repository root.

Wires the pages; the shared sidebar (models, image, method, display) is rendered here, before the
page, so its state survives page switches.
"""

import streamlit as st

import common

st.set_page_config(page_title="infsa-viz", layout="wide")
page = st.navigation([
    st.Page("views/compare.py", title="Side by side", icon=":material/compare:", default=True),
    st.Page("views/spectral.py", title="Spectral", icon=":material/blur_on:"),
    st.Page("views/curves.py", title="Curves & reports", icon=":material/show_chart:"),
])
common.sidebar()
page.run()
