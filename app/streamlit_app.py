"""infsa-viz app: ``streamlit run app`` from the repository root (``-- --models DIR …`` adds models,
``-- --model-root DIR`` lets a link or the path box load models under DIR, ``-- --data folder:PATH``
adds images, ``-- --plugins FILE_OR_MODULE`` registers methods, metrics and formats).

Wires the pages; the shared sidebar (models, image, method, display) is rendered here, before the
page, so its state survives page switches, and the view is kept in the URL. Notices (a link's value
that does not fit, a selected model that does not load) go to one area at the top of the page.
"""

import warmup

warmup.start()  # first: pandas loads while torch and the library do

import streamlit as st  # noqa: E402

import catalog  # noqa: E402
import draw  # noqa: E402
import plugins  # noqa: E402
import safe  # noqa: E402
import sidebar  # noqa: E402
import urlstate  # noqa: E402

for problem in plugins.load_plugins(plugins.plugin_specs()):  # before any page reads a registry
    st.sidebar.error(safe.line(safe.md(problem, None)))

# An emoji favicon (drawn by the browser from an inline SVG): without one, the page's Material icon
# would become the favicon, and the browser would fetch it from fonts.gstatic.com.
st.set_page_config(page_title="infsa-viz", page_icon="🔬", layout="wide")
page = st.navigation([
    st.Page("views/compare.py", title="Side by side", icon=":material/compare:", default=True),
    st.Page("views/grid.py", title="Methods × models", icon=":material/grid_view:"),
    st.Page("views/intervention.py", title="Intervention", icon=":material/science:"),
    st.Page("views/slice.py", title="Slice", icon=":material/table_rows:"),
    st.Page("views/checks.py", title="Differences & sanity", icon=":material/difference:"),
    st.Page("views/attention.py", title="Attention", icon=":material/visibility:"),
    st.Page("views/spectral.py", title="Spectral", icon=":material/blur_on:"),
    st.Page("views/gallery.py", title="Gallery", icon=":material/photo_library:"),
    st.Page("views/curves.py", title="Curves & reports", icon=":material/show_chart:"),
    st.Page("views/glossary.py", title="Glossary", icon=":material/menu_book:"),
])
draw.page_style()
urlstate.notice_area(st.container(key="notices"))
sel = sidebar.render(page)
for entry in sel.broken:  # once here, never per row of a page; the sidebar's expander has the whole reason
    why = safe.short_paths(catalog.load_error(entry) or "").split(": ", 1)[-1]  # the reason, not the type
    urlstate.notice(f"{safe.md(entry.name, 40)} does not load: {safe.md(why)}", error=True)
try:
    page.run()
finally:  # a page's widget that fell back during its run is in the link too
    urlstate.republish()
