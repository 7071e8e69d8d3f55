"""The shared sidebar: models, image, method with its target and selectors, display.

Rendered by the entry point before the page (so its state survives page switches); a control
that does not apply to the chosen method on the current page is disabled, its help says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

import common
from common import Display, ImageChoice, ModelEntry
from infsa_viz.data import TEST_SIZE
from infsa_viz.images import MAX_IMAGE_BYTES
from infsa_viz.maps import METHODS, selector_options
from infsa_viz.overlay import SCALES, SEQUENTIAL

#: Pages whose own views read the layer and head selectors, whatever the method.
LAYER_PAGES = ("Spectral", "Attention")
#: How many of the most probable classes the class picker offers.
TOP_K = 3

_SELECTION = "_selection"


@dataclass(frozen=True, eq=False)
class Selection:
    """What the sidebar selects: models, image (or an error), method with options and target, display."""

    models: list[ModelEntry]
    image: ImageChoice | None
    error: str | None
    method: str
    options: dict[str, Any]
    target: str | int
    layer: int
    head: int | str
    display: Display


def _random_index(key: str, count: int) -> None:
    st.session_state[key] = int(np.random.default_rng().integers(count)) if count else 0


def _clamp(key: str, count: int) -> None:
    if st.session_state.get(key, 0) > max(count - 1, 0):
        st.session_state[key] = 0


def _model_choices() -> list[ModelEntry]:
    sb = st.sidebar
    found, problems = common.find_models(common.model_roots())
    by_path = {e.path: e for e in found}
    chosen = sb.multiselect(
        "Models", list(by_path), default=list(by_path), key="models",
        format_func=lambda p: by_path[p].label if p in by_path else p,
        help=f"The shipped models ({common.MODELS_DIR}) and any added with `streamlit run app -- --models DIR` "
             f"or the {common.MODELS_ENV} environment variable",
    )
    for problem in problems:
        sb.warning(problem)
    if not found:
        sb.info(f"No trained model found under `{common.MODELS_DIR}`: train one with `infsa-viz train`, "
                "or enter a model directory below.")
    entries = [by_path[p] for p in chosen if p in by_path]
    extra = sb.text_input("Another model directory", key="extra_model", placeholder="/path/to/model",
                          help="Any format infsa_viz.load_model reads; explained with its own preprocessing")
    if extra.strip():
        try:
            entry = common.user_model(extra.strip())
            common.get_model(entry.path, entry.version)
        except ValueError as err:
            sb.error(f"Cannot load {extra.strip()!r}: {err}")
        else:
            if entry.path not in {e.path for e in entries}:
                entries.append(entry)
    return entries


def _image_choice(models: list[ModelEntry]) -> tuple[ImageChoice | None, str | None]:
    sb = st.sidebar
    source = sb.radio("Image", ["Test split", "Upload"], key="image_source", horizontal=True)
    if source == "Upload":
        upload = sb.file_uploader(f"PNG or JPEG, any mode (up to {MAX_IMAGE_BYTES // 2**20} MB)", type=common.UPLOAD_TYPES,
                                  key="upload")
        if upload is None:
            return None, None
        fit = sb.radio("Fit to each model", ["pad", "model's own"], key="upload_fit", horizontal=True,
                       help="pad: longer side to the model's size, aspect kept, margins in the mean colour "
                            "(default, nothing is distorted); model's own: the model's stored resize "
                            "(the shipped models stretch)")
        try:
            choice = common.upload_image(upload.getvalue(), upload.name)
            return choice.fitted("pad" if fit == "pad" else None), None
        except ValueError as err:
            return None, f"Cannot use this file: {err}"
    loadable = [e for e in models if common.load_error(e) is None]
    only_wrong = sb.checkbox("Only misclassified", key="only_wrong", disabled=not loadable,
                             help="Browse the test images a model gets wrong (predictions computed once per model)")
    if only_wrong and loadable:
        by_path = {e.path: e for e in loadable}
        path = sb.selectbox("…by model", list(by_path), key="wrong_model", format_func=lambda p: by_path[p].label)
        entry = by_path[path]
        wrong = common.misclassified(entry.path, entry.version)
        if not len(wrong):
            return None, f"{entry.label} classifies every test image correctly."
        _clamp("wrong_pos", len(wrong))
        position = sb.number_input(f"Misclassified image (of {len(wrong)})", 0, len(wrong) - 1, key="wrong_pos")
        sb.button("Random", key="random_image", on_click=_random_index, args=("wrong_pos", len(wrong)))
        index = int(wrong[int(position)])
    else:
        index = int(sb.number_input(f"Test image (of {TEST_SIZE})", 0, TEST_SIZE - 1, key="image_index"))
        sb.button("Random", key="random_image", on_click=_random_index, args=("image_index", TEST_SIZE))
    image = common.test_image(index)
    sb.caption(f"{image.source}: shows {common.class_name(None, image.label)}; target box green, distractors red")
    return image, None


def _method_choice(models: list[ModelEntry], image: ImageChoice | None, page: str
                   ) -> tuple[str, dict[str, Any], str | int, int, int | str]:
    sb = st.sidebar
    method = sb.selectbox("Method", [m for m, s in METHODS.items() if not s.needs_truth], key="method", format_func=lambda m: f"{m} ({METHODS[m].family})",
                          help="\n".join(f"- **{m}**: {s.description}" for m, s in METHODS.items()))
    spec = METHODS[method]
    sb.caption(f"*{spec.description}*")
    configs = []
    for e in models:
        try:
            configs.append(common.get_model(e.path, e.version)[0].config)
        except ValueError:
            continue
    depth = max((c.depth for c in configs), default=1)
    heads = min((c.num_heads for c in configs), default=1)
    classes = min((c.num_classes for c in configs), default=1)
    applies = spec.per_layer or page in LAYER_PAGES
    reason = ("" if spec.per_layer else f" (the {page} page's own views)") if applies else \
        f"Disabled: {method} reads every layer (or no attention), and this page has no per-layer view"
    layer = sb.selectbox("Layer", [-1, *range(depth)], key="layer", format_func=lambda v: "last" if v == -1 else str(v),
                         disabled=not applies, help=("Which attention layer is read" + reason) if applies else reason)
    head = sb.selectbox("Head", ["mean", *range(heads)], key="head", disabled=not applies,
                        help=("'mean' fuses the heads as the method does by default" + reason) if applies else reason)
    targets: list[str | int] = ["predicted", *(["label"] if image is not None and image.label is not None else []),
                                *[f"top {k}" for k in range(2, min(TOP_K, classes) + 1)], *range(classes)]
    if st.session_state.get("target", "predicted") not in targets:
        st.session_state["target"] = "predicted"
    first = models[0] if models else None
    target = sb.selectbox("Explain class", targets, key="target", format_func=lambda t: common.target_label(t, first),
                          disabled=not spec.explains_class,
                          help="The class a gradient method explains: the prediction (default), the true label, "
                               "the 2nd/3rd most probable class of each model, or any class" +
                               ("" if spec.explains_class else f". Disabled: {method} explains no class"))
    return method, selector_options(method, layer=layer, head=head, strict=False), target, int(layer), head


def _display() -> Display:
    with st.sidebar.expander("Display"):
        colormap = st.selectbox("Colormap", SEQUENTIAL, key="colormap",
                                help="For non-negative maps; signed maps (e.g. integrated gradients) always use a "
                                     "diverging blue-white-red map centred at 0")
        alpha = st.slider("Map opacity", 0.0, 1.0, 0.5, 0.05, key="alpha")
        scale = st.radio("Colour scale", SCALES, key="scale", horizontal=True,
                         help="shared: one scale after dividing each map by its mass Σ|m| (compares methods "
                              "with different units); raw: one scale on raw values; per-map: each map its own range")
        clip = st.slider("Clip at percentile", 90.0, 100.0, 99.0, 0.5, key="clip",
                         help="The top colour is this percentile of the values (of |value| for signed maps), as "
                              "Captum clips outliers; 100 = the maximum")
        show_boxes = st.checkbox("Draw boxes", value=True, key="show_boxes")
    return Display(colormap=colormap, alpha=float(alpha), scale=scale, clip=None if clip >= 100 else float(clip),
                   show_boxes=show_boxes)


def render(page: str) -> Selection:
    """Render the shared sidebar for ``page`` (its title) and remember the :class:`Selection`."""
    models = _model_choices()
    image, error = _image_choice(models)
    method, options, target, layer, head = _method_choice(models, image, page)
    sel = Selection(models=models, image=image, error=error, method=method, options=options, target=target,
                    layer=layer, head=head, display=_display())
    st.session_state[_SELECTION] = sel
    return sel


def selection() -> Selection:
    """The sidebar's choices of this run (the entry point renders the sidebar before the page)."""
    sel = st.session_state.get(_SELECTION)
    if sel is None:
        raise RuntimeError("no sidebar selection: run the app through app/streamlit_app.py")
    return sel


def require_inputs(sel: Selection) -> None:
    """Stop the page with a clear message when there is no model or no usable image."""
    if sel.error:
        st.error(sel.error)
        st.stop()
    if not sel.models:
        st.info("Select at least one model in the sidebar.")
        st.stop()
    if sel.image is None:
        st.info("Upload an image in the sidebar (PNG or JPEG), or switch to the test split.")
        st.stop()


def explain_models(sel: Selection, method: str, options: dict[str, Any]
                   ) -> list[tuple[ModelEntry, common.Explained | str]]:
    """:func:`common.explain` (map and figures) for every selected model: its result, or the
    one-line error."""
    return _each(sel, common.explain, method, options)


def map_views(sel: Selection, method: str, options: dict[str, Any]) -> list[tuple[ModelEntry, common.MapView | str]]:
    """:func:`common.map_view` (the map only) for every selected model: its view, or the one-line error."""
    return _each(sel, common.map_view, method, options)


def _each(sel: Selection, compute, method: str, options: dict[str, Any]) -> list[tuple[ModelEntry, Any]]:
    out: list[tuple[ModelEntry, Any]] = []
    for entry in sel.models:
        try:
            out.append((entry, compute(entry, sel.image, method, options, sel.target)))
        except ValueError as err:
            out.append((entry, str(err)))
    return out
