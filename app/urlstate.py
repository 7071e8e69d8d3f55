"""The view in the URL (``st.query_params``), so a copied link or a reload shows the same view.

The page is the URL's path (``st.navigation``); the query holds the sidebar's choices: ``models``
(short names), ``set`` and ``image`` (an index) or ``upload`` (a file name: the file itself must
be uploaded again), ``method``, ``class``, ``layer``, ``head``, ``discard``, ``fit`` and the
display (``colormap``, ``alpha``, ``scale``, ``clip``, ``boxes``). :func:`restore` copies them
into the widgets' session state once per session, before the widgets are drawn; :func:`publish`
writes the current choices back after every run. Values that do not fit the app are ignored.
"""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st

import targets

_RESTORED = "_url_restored"
#: Session-state flag: the URL named an upload this session has not got (the sidebar says so).
MISSING_UPLOAD = "_url_missing_upload"


def _bool(text: str) -> bool:
    if text not in ("0", "1"):
        raise ValueError(text)
    return text == "1"


def _head(text: str) -> str | int:
    return text if text in ("mean", "max", "min") else int(text)


#: URL parameter → (widget key, parser of the text, writer of the value).
PARAMS: dict[str, tuple[str, Callable[[str], Any], Callable[[Any], str]]] = {
    "set": ("image_set", str, str),
    "image": ("image_index", int, str),
    "method": ("method", str, str),
    "class": ("target", targets.parse, str),
    "layer": ("layer", int, str),
    "head": ("head", _head, str),
    "discard": ("discard_ratio", float, lambda v: f"{v:g}"),
    "fit": ("upload_fit", str, str),
    "colormap": ("colormap", str, str),
    "alpha": ("alpha", float, lambda v: f"{v:g}"),
    "scale": ("scale", str, str),
    "clip": ("clip", float, lambda v: f"{v:g}"),
    "boxes": ("show_boxes", _bool, lambda v: "1" if v else "0"),
}


def restore(short_names: dict[str, str]) -> None:
    """Once per session: the URL's choices into the widgets' state (``short_names``: model
    path → its short name in URLs). Unreadable values are skipped; the widgets check the rest
    against their options."""
    if st.session_state.get(_RESTORED):
        return
    st.session_state[_RESTORED] = True
    query = st.query_params
    if "models" in query:
        by_name = {name: path for path, name in short_names.items()}
        names = query["models"].split(",")
        chosen = [by_name[n] for n in names if n in by_name]
        other = [n for n in names if n not in by_name and n.startswith("/")]  # one typed in "Another model"
        if chosen or other:
            st.session_state["models"] = chosen
        if other:
            st.session_state["extra_model"] = other[0]
    for param, (key, parse, _) in PARAMS.items():
        if param in query:
            try:
                st.session_state[key] = parse(query[param])
            except ValueError:
                continue
    if "upload" in query:
        st.session_state["image_set"] = "upload"
        st.session_state[MISSING_UPLOAD] = query["upload"]


def publish(values: dict[str, Any], short_names: dict[str, str], models: list[str]) -> None:
    """Write the current choices to the URL (only when they changed, so a rerun sends nothing).

    Args:
        values: widget key → value, for the keys of :data:`PARAMS` that apply now (others are
            left out of the URL), plus ``"upload"`` (the uploaded file's name) when one is shown.
        short_names: model path → short name.
        models: the selected models' paths.
    """
    query = {"models": ",".join(short_names.get(p, p) for p in models)}
    for param, (key, _, write) in PARAMS.items():
        if values.get(key) is not None:
            query[param] = write(values[key])
    if values.get("upload"):
        query["upload"] = values["upload"]
        query.pop("image", None)
    if dict(st.query_params) != query:
        st.query_params.from_dict(query)
