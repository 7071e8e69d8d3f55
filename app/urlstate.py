"""The view in the URL (``st.query_params``), so a copied link or a reload shows the same view.

The page is the URL's path (``st.navigation``); the query holds the sidebar's choices (every
page) and the current page's own (:data:`PARAMS`, each tagged with its page's URL path).
:func:`restore` copies them into the widgets' session state once per session, before any widget
is drawn; :func:`publish` writes the current choices back after the sidebar. A value that cannot
fit — unreadable, out of range, not a number, an option the app does not have — falls back to the
default with one line of notice (:func:`notice`), never an exception: :func:`keep`,
:func:`keep_list` and :func:`keep_range` check a widget's value against its options where the
page knows them. Every value from a link is escaped before it is shown (:mod:`safe`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import streamlit as st

import safe
import targets
import zeroshot

_RESTORED = "_url_restored"
_FROM_LINK = "_url_from_link"  # widget key -> (parameter, raw text) not yet checked by its widget
_AREA = "_notice_area"
_SHOWN = "_notices_shown"
_PAGE = "_url_page"
_PUBLISHED = "_url_published"
#: Session-state flag: the URL named an upload this session has not got (the sidebar says so).
MISSING_UPLOAD = "_url_missing_upload"
#: Session-state key of the model paths a link named that may be loaded (:mod:`access`).
LINKED_MODELS = "_url_linked_models"


def _bool(text: str) -> bool:
    if text not in ("0", "1"):
        raise ValueError("expected 0 or 1")
    return text == "1"


def _head(text: str) -> str | int:
    return text if text in ("mean", "max", "min") else _integer(0, 4096)(text)


def _number(low: float, high: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = float(text)
        if not math.isfinite(value) or not low <= value <= high:
            raise ValueError(f"expected a number from {low:g} to {high:g}")
        return value
    return parse


def _integer(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise ValueError(f"expected an integer from {low} to {high}")
        return value
    return parse


def _text(text: str) -> str:
    if not text or len(text) > 200:
        raise ValueError("expected a name of at most 200 characters")
    return text


def _names(text: str) -> list[str]:
    return [_text(t) for t in text.split(",") if t]


def _range(text: str) -> tuple[float, float]:
    low, high = (_number(0.0, 1.0)(t) for t in text.split("-", 1))
    if low > high:
        raise ValueError("expected LOW-HIGH with LOW <= HIGH")
    return low, high


def _gamma(text: str) -> str | float:
    return "learned" if text == "learned" else _number(1e-6, 1.0)(text)  # options.LEARNED


def _class(text: str) -> Any:
    return targets.parse(_text(text))


def _prompt_box(text: str) -> str:
    if len(text) > zeroshot.MAX_PROMPTS * (zeroshot.MAX_CHARS + 1):
        raise ValueError(f"expected at most {zeroshot.MAX_PROMPTS} prompts of {zeroshot.MAX_CHARS} characters")
    return text


def _g(v: float) -> str:
    return f"{v:g}"


@dataclass(frozen=True)
class Param:
    """A URL parameter: the widget ``key`` it restores, ``parse`` (text → value, ``ValueError``
    when it cannot fit), ``write`` (value → text), the ``page`` (URL path) it belongs to
    (``None``: the sidebar, every page) and ``models`` (model paths, written as short names)."""

    key: str
    parse: Callable[[str], Any] = _text
    write: Callable[[Any], str] = str
    page: str | None = None
    models: bool = False


#: URL parameter → :class:`Param`. The sidebar's first, then each page's.
PARAMS: dict[str, Param] = {
    "set": Param("image_set"),
    "image": Param("image_number", _integer(1, 10**9)),
    "wrong": Param("only_wrong", _bool, lambda v: "1" if v else "0"),
    "by": Param("wrong_model", models=True),
    "pos": Param("wrong_number", _integer(1, 10**9)),
    "prompts": Param("prompts", _prompt_box),
    "method": Param("method"),
    "class": Param("target", _class),
    "layer": Param("layer", _integer(-1, 4096)),
    "head": Param("head", _head),
    "discard": Param("discard_ratio", _number(0.0, 0.95), _g),
    "gamma": Param("gamma", _gamma, lambda v: v if isinstance(v, str) else f"{v:g}"),
    "steps": Param("ig_steps", _integer(1, 256)),
    "baseline": Param("baseline", _number(-10.0, 10.0), _g),
    "fit": Param("upload_fit"),
    "colormap": Param("colormap"),
    "alpha": Param("alpha", _number(0.0, 1.0), _g),
    "scale": Param("scale"),
    "clip": Param("clip", _number(90.0, 100.0), _g),
    "boxes": Param("show_boxes", _bool, lambda v: "1" if v else "0"),
    # Side by side
    "figures": Param("badges", _bool, lambda v: "1" if v else "0", page=""),
    # Methods × models
    "rows": Param("grid_methods", _names, ",".join, page="grid"),
    "compact": Param("grid_compact", _bool, lambda v: "1" if v else "0", page="grid"),
    # Attention
    "shown": Param("attention_models", _names, page="attention", models=True),
    "token": Param("query_token", _integer(0, 10**6), page="attention"),
    # Spectral
    "matrix": Param("spectral_matrix", page="spectral"),
    "spectrum": Param("spectrum_view", page="spectral"),
    "axis": Param("spectrum_axis", page="spectral"),
    "top": Param("spectrum_top_k", _integer(1, 64), page="spectral"),
    # Gallery
    "model": Param("gallery_model", page="gallery", models=True),
    "gclass": Param("gallery_class", lambda t: "any" if t == "any" else _integer(0, 10**6)(t), page="gallery"),
    "order": Param("gallery_order", page="gallery"),
    "correct": Param("gallery_correct", page="gallery"),
    "conf": Param("gallery_confidence", _range, lambda v: f"{v[0]:g}-{v[1]:g}", page="gallery"),
    "page": Param("gallery_page", _integer(1, 10**6), page="gallery"),
    # Curves & reports
    "row": Param("protocol_row", _integer(0, 10**6), page="curves"),
    "dev": Param("developer_reports", _bool, lambda v: "1" if v else "0", page="curves"),
    # Intervention
    "change": Param("intervene_objects", _names, ",".join, page="intervention"),
    "boxx": Param("occlude_x", _range, lambda v: f"{v[0]:g}-{v[1]:g}", page="intervention"),
    "boxy": Param("occlude_y", _range, lambda v: f"{v[0]:g}-{v[1]:g}", page="intervention"),
    "fill": Param("occlude_fill", page="intervention"),
    # Slice
    "images": Param("slice_images", _integer(1, 10**6), page="slice"),
    "metrics": Param("slice_metrics", _names, ",".join, page="slice"),
    "sclass": Param("slice_class", lambda t: "any" if t == "any" else _integer(0, 10**6)(t), page="slice"),
    "verdict": Param("slice_correct", page="slice"),
    "disagree": Param("slice_disagree", _bool, lambda v: "1" if v else "0", page="slice"),
    "cue": Param("slice_cue", page="slice"),
    "figure": Param("slice_figure", page="slice"),
    "open": Param("slice_open", lambda t: _integer(1, 10**9)(t) - 1, lambda v: str(int(v) + 1), page="slice"),
    "within": Param("slice_range", lambda t: tuple(float(v) for v in _finite_pair(t)),
                    lambda v: f"{float(v[0])!r}_{float(v[1])!r}", page="slice"),  # exact: bounds come from data
    # Checks
    "reference": Param("checks_reference", page="checks", models=True),
    "stage": Param("checks_stage", page="checks"),
}


#: URL parameters of a family of widgets, one per name (``metric.training`` → ``chart-metric-training``):
#: URL prefix → (widget key prefix, page). The names are the app's own (report file stems).
FAMILIES: dict[str, tuple[str, str]] = {
    "metric.": ("chart-metric-", "curves"),
}
_MEMBER = re.compile(r"[A-Za-z0-9._-]{1,80}")


def _finite_pair(text: str) -> tuple[float, float]:
    low, high = (float(v) for v in text.split("_", 1))
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ValueError("expected LOW_HIGH, two finite numbers with LOW <= HIGH")
    return low, high


_BY_KEY = {p.key: name for name, p in PARAMS.items()}


def _family_key(param: str) -> str | None:
    """The widget key a family's URL parameter restores (``None``: no family, or an odd name)."""
    for prefix, (key_prefix, _) in FAMILIES.items():
        if param.startswith(prefix) and _MEMBER.fullmatch(param[len(prefix):]):
            return key_prefix + param[len(prefix):]
    return None


# ----------------------------------------------------------------------------------- notices
def notice_area(area: Any) -> None:
    """Where this run's notices go (a container at the top of the page, made by the entry point)."""
    st.session_state[_AREA] = area
    st.session_state[_SHOWN] = set()


def notice(text: str, *, error: bool = False) -> None:
    """One line of notice (a warning, or an ``error``) at the top of the page, whole (``text``
    already escaped; each line once per run)."""
    line = safe.line(text)
    shown = st.session_state.setdefault(_SHOWN, set())
    if line in shown:
        return
    shown.add(line)
    area = st.session_state.get(_AREA, st)
    (area.error if error else area.warning)(line)


def _link_notice(param: str, raw: str, why: str, fallback: str = "the default is shown") -> None:
    notice(f"The link's {param}={safe.md(raw, 40)} does not fit: {safe.md(why, None)}; {fallback}.")


def _checked(key: str) -> tuple[str, str] | None:
    """The (parameter, raw text) a link gave ``key``, once (later checks of the key are not the link's)."""
    return st.session_state.get(_FROM_LINK, {}).pop(key, None)


def _fell_back(key: str, why: str) -> None:
    origin = _checked(key)
    if origin is not None:
        _link_notice(origin[0], origin[1], why)
        if origin[0] in st.query_params:
            del st.query_params[origin[0]]


def keep(key: str, options: Sequence[Any], default: Any, why: str = "not one of the choices here") -> None:
    """The widget's state set to ``default`` unless it is one of ``options`` (a value from the URL
    or an earlier page may not be); a link's value that does not fit is said in a notice."""
    state = st.session_state
    if key in state and state[key] not in options:
        _fell_back(key, why)
        state[key] = default
    else:
        _checked(key)
    state.setdefault(key, default)


def keep_list(key: str, options: Sequence[Any], default: Sequence[Any]) -> None:
    """A multiselect's state: the entries that are ``options`` (``default`` when none was set); a
    link's entries that are not are said in a notice."""
    state = st.session_state
    if key not in state:
        state[key] = list(default)
        return
    value = state[key] if isinstance(state[key], list) else []
    kept = [v for v in value if v in options]
    if len(kept) != len(value) or not isinstance(state[key], list):
        _fell_back(key, f"{len(value) - len(kept)} unknown entries left out")
    else:
        _checked(key)
    state[key] = kept


def keep_range(key: str, low: float, high: float, default: Any) -> None:
    """A number widget's state set to ``default`` unless it lies in ``[low, high]``."""
    value = st.session_state.get(key, default)
    fits = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
        and low <= value <= high
    keep(key, [value] if fits else [], default, f"outside {low:g} … {high:g}")


# ------------------------------------------------------------------------------------ restore
def restore(short_names: dict[str, str], allow: Callable[[str], str]) -> None:
    """Once per session: the URL's choices into the widgets' state (``short_names``: model path →
    its short name in URLs; ``allow``: a linked model path → its resolved path, ``ValueError``
    when the server may not load it). Values that cannot be read fall back with a notice; the
    widgets check the rest against their options (:func:`keep`)."""
    state = st.session_state
    if state.get(_RESTORED):
        return
    state[_RESTORED] = True
    query = st.query_params
    by_name = {name: path for path, name in short_names.items()}
    from_link: dict[str, tuple[str, str]] = {}
    linked: list[str] = []
    typed: dict[str, str] = {}  # resolved path -> the link's name for it (what the path box shows)

    def models(param: str, raw: str) -> list[str]:
        out = []
        for name in [n for n in raw.split(",") if n]:
            if name in by_name:
                out.append(by_name[name])
                continue
            try:
                path = allow(name)
            except ValueError as err:  # an absolute path is not echoed: the page tells nothing of the server's disk
                _link_notice(param, "(a path)" if name.startswith(("/", "\\", "~")) or ":" in name else name,
                             str(err), "left out")
                continue
            out.append(path)
            linked.append(path)
            typed[path] = name
        return out

    if "models" in query:
        chosen = models("models", query["models"])
        if chosen:
            state["models"] = [p for p in chosen if p in short_names]
            others = [p for p in chosen if p not in short_names]
            if others:
                state["extra_model"] = typed.get(others[0], others[0])
    for param, spec in PARAMS.items():
        if param not in query:
            continue
        raw = query[param]
        try:
            if spec.models:
                value = models(param, raw) if spec.parse is _names else (models(param, raw) or [None])[0]
                if value is None or value == []:
                    continue
            else:
                value = spec.parse(raw)
        except (ValueError, TypeError) as err:
            _link_notice(param, raw, str(err) or "unreadable")
            continue
        state[spec.key] = value
        from_link[spec.key] = (param, raw)
    for param in query:
        if (key := _family_key(param)) is not None:
            state[key] = query[param]
            from_link[key] = (param, query[param])
    state[_FROM_LINK] = from_link
    state[LINKED_MODELS] = linked
    if "upload" in query:
        state["image_set"] = "upload"
        state[MISSING_UPLOAD] = query["upload"]


def publish(values: dict[str, Any], short_names: dict[str, str], models: list[str], page: str,
            link_name: Callable[[str], str] = str) -> None:
    """Write the current choices to the URL (only when they changed, so a rerun sends nothing).

    Args:
        values: widget key → value for the sidebar's keys of :data:`PARAMS` that apply now (others
            are left out), plus ``"upload"`` (the uploaded file's name) when one is shown.
        short_names: model path → short name.
        link_name: how the link names a model path that has no short name (a model typed in:
            :meth:`access.Access.link_name`, its root's short name and the path under it).
        models: the selected models' paths.
        page: the URL path of the page shown; its own parameters are read from the session state.
    """
    def name(path: Any) -> str:
        return short_names.get(path) or link_name(str(path))

    query = {"models": ",".join(name(p) for p in models)}
    state = st.session_state
    for param, spec in PARAMS.items():
        value = values.get(spec.key) if spec.page is None else (state.get(spec.key) if spec.page == page else None)
        if value is None:
            continue
        if spec.models:
            value = ",".join(name(p) for p in value) if isinstance(value, list) else name(value)
        query[param] = spec.write(value)
    for prefix, (key_prefix, on_page) in FAMILIES.items():
        if on_page != page:
            continue
        for key in sorted(k for k in state.keys() if isinstance(k, str) and k.startswith(key_prefix)):
            if state[key] is not None and _MEMBER.fullmatch(key[len(key_prefix):]):
                query[prefix + key[len(key_prefix):]] = str(state[key])
    if values.get("upload"):
        query["upload"] = values["upload"]
        query.pop("image", None)
    state[_PAGE] = page
    state[_PUBLISHED] = (values, short_names, models, page, link_name)
    if dict(st.query_params) != query:
        st.query_params.from_dict(query)


def republish() -> None:
    """:func:`publish` again after the page has run: a page's own widget may have fallen back to
    its default during the run (its options changed with a filter), and the link must say so now."""
    published = st.session_state.get(_PUBLISHED)
    if published is not None:
        publish(*published[:4], link_name=published[4])


def link() -> str:
    """The link that reopens the current view: the address the browser used (when the server knows
    it) or the page's path, and the query :func:`publish` wrote (short names only: no server path)."""
    from urllib.parse import urlencode, urlsplit

    query = urlencode({k: st.query_params[k] for k in st.query_params})
    path = "/" + str(st.session_state.get(_PAGE, ""))
    url = getattr(getattr(st, "context", None), "url", None)
    if isinstance(url, str) and url.startswith(("http://", "https://")):
        parts = urlsplit(url)
        path = f"{parts.scheme}://{parts.netloc}{path}"
    return f"{path}?{query}"


def param_of(key: str) -> str | None:
    """The URL parameter that holds a widget key (``None`` when none does)."""
    if key == "models":
        return "models"
    if key in _BY_KEY:
        return _BY_KEY[key]
    for prefix, (key_prefix, _) in FAMILIES.items():
        if key.startswith(key_prefix) and _MEMBER.fullmatch(key[len(key_prefix):]):
            return prefix + key[len(key_prefix):]
    return None
