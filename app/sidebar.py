"""The shared sidebar: models, image, method with its target and selectors, display.

Rendered by the entry point before the page (so its state survives page switches) and restored
from / written to the URL (:mod:`urlstate`); a control that does not apply to the chosen method on
the current page is disabled, its help says why. Widgets take their first value from the session
state (set here or by the URL), never from a ``value=`` argument, so a restored value wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

import catalog
import compute
import inputs
import targets
import urlstate
from catalog import ModelEntry
from draw import Display
from inputs import ImageChoice
from infsa_viz.images import MAX_IMAGE_BYTES
from infsa_viz.maps import METHODS, selector_options
from infsa_viz.overlay import SCALES, SEQUENTIAL

#: Pages whose own views read the layer and head selectors, whatever the method.
LAYER_PAGES = ("Spectral", "Attention")
UPLOAD = "upload"
FITS = {"model's own": None, "letterbox": "pad"}
#: Head fusions of methods that fuse heads rather than pick one (rollout).
FUSIONS = ["mean", "max", "min"]
_SELECTION = "_selection"
DEFAULTS = {"method": "attention", "target": targets.DEFAULT, "layer": -1, "head": "mean", "discard_ratio": 0.0,
            "upload_fit": "model's own", "colormap": "inferno", "alpha": 0.5, "scale": "shared", "clip": 99.0,
            "show_boxes": True}


@dataclass(frozen=True, eq=False)
class Selection:
    """What the sidebar selects: models, image (or an error), method with options and target,
    display, and the image set the image comes from (``None`` for an upload)."""

    models: list[ModelEntry]
    image: ImageChoice | None
    error: str | None
    method: str
    options: dict[str, Any]
    target: targets.Target
    layer: int
    head: int | str
    display: Display
    set_key: str | None = None


def _keep(key: str, options: list[Any], default: Any) -> None:
    """The widget's state set to ``default`` unless it is one of ``options`` (a value from the URL
    or an earlier page may not be)."""
    if st.session_state.get(key, default) not in options:
        st.session_state[key] = default
    st.session_state.setdefault(key, default)


def _step(key: str, count: int, step: int | None) -> None:
    """Previous / next (``step`` ±1, wrapping) or a random image (``step`` ``None``)."""
    current = int(st.session_state.get(key, 0))
    st.session_state[key] = (int(np.random.default_rng().integers(count)) if step is None else
                             (current + step) % max(count, 1))


def _model_choices(found: list[ModelEntry], problems: list[str]) -> list[ModelEntry]:
    sb = st.sidebar
    by_path = {e.path: e for e in found}
    st.session_state.setdefault("models", list(by_path))
    st.session_state["models"] = [p for p in st.session_state["models"] if p in by_path]
    chosen = sb.multiselect(
        "Models", list(by_path), key="models", format_func=lambda p: by_path[p].label if p in by_path else p,
        help=f"The shipped models ({catalog.MODELS_DIR}) and any added with `streamlit run app -- --models DIR` "
             f"or the {catalog.MODELS_ENV} environment variable")
    for problem in problems:
        sb.warning(problem)
    if not found:
        sb.info(f"No trained model found under `{catalog.MODELS_DIR}`: train one with `infsa-viz train`, "
                "or enter a model path below.")
    entries = [by_path[p] for p in chosen]
    extra = sb.text_input("Another model", key="extra_model", placeholder="/path/to/model",
                          help="Any path infsa_viz.load_model reads (a model directory, a transformers "
                               "save_pretrained directory, a .safetensors file?num_heads=H); explained with its "
                               "own preprocessing")
    if extra.strip():
        try:
            entry = catalog.model_entry(extra.strip())
            catalog.get_model(entry)
        except ValueError as err:
            sb.error(f"Cannot load {extra.strip()!r}: {err}")
        else:
            if entry.path not in {e.path for e in entries}:
                entries.append(entry)
    return entries


def _upload() -> tuple[ImageChoice | None, str | None]:
    sb = st.sidebar
    missing = st.session_state.get(urlstate.MISSING_UPLOAD)
    upload = sb.file_uploader(f"PNG or JPEG, any mode (up to {MAX_IMAGE_BYTES // 2**20} MB)",
                              type=inputs.UPLOAD_TYPES, key="upload")
    _keep("upload_fit", list(FITS), DEFAULTS["upload_fit"])
    fit = sb.radio("Fit to each model", list(FITS), key="upload_fit", horizontal=True,
                   help="model's own: the resize the model was trained with (default); letterbox: longer side "
                        "to the model's size, aspect kept, margins in the mean colour (models that crop their "
                        "centre keep their own)")
    if upload is None:
        return None, None if missing is None else f"The link shows the upload {missing!r}: upload it again."
    st.session_state.pop(urlstate.MISSING_UPLOAD, None)
    try:
        return inputs.upload_image(upload.getvalue(), upload.name).fitted(FITS[fit]), None
    except ValueError as err:
        return None, f"Cannot use this file: {err}"


def _set_image(models: list[ModelEntry], set_key: str) -> tuple[ImageChoice | None, str | None]:
    sb = st.sidebar
    try:
        count = len(inputs.set_data(set_key))
    except ValueError as err:
        return None, str(err)
    judged = [e for e in catalog.loaded(models) if inputs.belongs(e, set_key)]
    if "image_index" not in st.session_state:  # first screen: an image every model gets right
        st.session_state["image_index"] = compute.first_all_correct(judged, set_key) or 0
    only_wrong = sb.checkbox("Only misclassified", key="only_wrong", disabled=not judged,
                             help="Browse the images a model gets wrong (predictions computed once per model); "
                                  "for models trained on this set's classes")
    if only_wrong and judged:
        by_path = {e.path: e for e in judged}
        _keep("wrong_model", list(by_path), judged[0].path)
        path = sb.selectbox("…by model", list(by_path), key="wrong_model", format_func=lambda p: by_path[p].label)
        with st.spinner("Classifying the whole set…"):
            wrong = compute.misclassified(by_path[path], set_key)
        if not len(wrong):
            return None, f"{by_path[path].label} classifies every image of this set correctly."
        key, count, label = "wrong_pos", len(wrong), f"Misclassified image (of {len(wrong)})"
    else:
        key, label = "image_index", f"Image (of {count})"
    if not 0 <= st.session_state.get(key, 0) < count:
        st.session_state[key] = 0
    position = int(sb.number_input(label, 0, count - 1, key=key))
    back, rand, forward = sb.columns(3)
    back.button("◀", key="previous_image", on_click=_step, args=(key, count, -1), help="Previous image",
                width="stretch")
    rand.button(":material/shuffle:", key="random_image", on_click=_step, args=(key, count, None), help="Random image",
                width="stretch")
    forward.button("▶", key="next_image", on_click=_step, args=(key, count, 1), help="Next image", width="stretch")
    index = int(wrong[position]) if key == "wrong_pos" else position
    image = inputs.set_image(set_key, index)
    shows = inputs.set_classes(set_key)[image.label] if image.label is not None else "no label"
    scored = "scored for every selected model" if len(judged) == len(models) else (
        f"scored only for {', '.join(e.name for e in judged)}" if judged else "not scored: no selected model "
        "was trained on these classes")
    sb.caption(f"{image.source}: shows {shows} ({scored}); target box green, distractors red")
    return image, None


def _image_choice(models: list[ModelEntry]) -> tuple[ImageChoice | None, str | None, str | None]:
    sets = inputs.image_sets(models, inputs.data_specs())
    _keep("image_set", [*sets, UPLOAD], sets[0])
    set_key = st.sidebar.radio("Images", [*sets, UPLOAD], key="image_set",
                               format_func=lambda k: "Upload" if k == UPLOAD else inputs.set_title(k),
                               help="The test split of the benchmark the models were trained on, folders added "
                                    f"with `-- --data folder:PATH` or {inputs.DATA_ENV}, or an image of your own")
    if set_key == UPLOAD:
        return (*_upload(), None)
    return (*_set_image(models, set_key), set_key)


def _method_choice(models: list[ModelEntry], image: ImageChoice | None, page: str
                   ) -> tuple[str, dict[str, Any], targets.Target, int, int | str]:
    sb = st.sidebar
    choices = [m for m, s in METHODS.items() if not s.needs_truth]  # oracles read an evaluation's ground truth
    _keep("method", choices, DEFAULTS["method"])
    method = sb.selectbox("Method", choices, key="method", format_func=lambda m: f"{m} ({METHODS[m].family})",
                          help="\n".join(f"- **{m}**: {METHODS[m].description}" for m in choices))
    spec = METHODS[method]
    sb.caption(f"*{spec.description}*")
    configs = [catalog.get_model(e)[0].config for e in catalog.loaded(models)]
    depth = max((c.depth for c in configs), default=1)
    heads = min((c.num_heads for c in configs), default=1)
    classes = max((c.num_classes for c in configs), default=1)
    fewest = min((c.num_classes for c in configs), default=1)
    fuses = "head" in spec.defaults and spec.defaults["head"] in FUSIONS and not spec.per_layer
    applies = spec.per_layer or page in LAYER_PAGES
    reason = ("" if spec.per_layer else f" (the {page} page's own views)") if applies else \
        f"Disabled: {method} reads every layer (or no attention), and this page has no per-layer view"
    _keep("layer", [-1, *range(depth)], -1)
    layer = sb.selectbox("Layer", [-1, *range(depth)], key="layer", format_func=lambda v: "last" if v == -1 else str(v),
                         disabled=not applies, help=("Which attention layer is read" + reason) if applies else reason)
    head_options: list[Any] = FUSIONS if fuses and not applies else ["mean", *range(heads)]
    _keep("head", head_options, "mean")
    head = sb.selectbox("Head fusion" if fuses and not applies else "Head", head_options, key="head",
                        disabled=not (applies or fuses),
                        help="how the heads of each layer are fused (Abnar & Zuidema: mean; vit-explain: max, min)"
                        if fuses and not applies else ("'mean' fuses the heads" + reason) if applies else reason)
    options = selector_options(method, layer=layer, head=head, strict=False)
    if "discard_ratio" in spec.defaults:
        _keep("discard_ratio", [round(v, 2) for v in np.arange(0, 0.96, 0.05)], 0.0)
        options["discard_ratio"] = float(sb.select_slider(
            "Discard ratio", [round(v, 2) for v in np.arange(0, 0.96, 0.05)], key="discard_ratio",
            help="share of the smallest attention weights of each layer set to 0 before the rollout "
                 "(vit-explain; 0 = Abnar & Zuidema's rollout)"))
    labelled = image is not None and image.label is not None
    choices = targets.choices(classes, labelled=labelled, fewest=fewest)
    _keep("target", choices, targets.DEFAULT)
    names = [inputs.class_names(e) for e in catalog.loaded(models)]
    target = sb.selectbox("Explain class", choices, key="target", format_func=lambda t: targets.describe(t, names),
                          disabled=not spec.explains_class,
                          help="The class a gradient method explains: each model's prediction (default), the "
                               "image's label, its 2nd/3rd most probable class, or any class" +
                               ("" if spec.explains_class else f". Disabled: {method} explains no class"))
    return method, options, target, int(layer), head


def _display() -> Display:
    with st.sidebar.expander("Display"):
        for key in ("colormap", "alpha", "scale", "clip", "show_boxes"):
            st.session_state.setdefault(key, DEFAULTS[key])
        _keep("colormap", list(SEQUENTIAL), DEFAULTS["colormap"])
        _keep("scale", list(SCALES), DEFAULTS["scale"])
        colormap = st.selectbox("Colormap", SEQUENTIAL, key="colormap",
                                help="For non-negative maps; signed maps (e.g. integrated gradients) always use a "
                                     "diverging blue-white-red map centred at 0")
        alpha = st.slider("Map opacity", 0.0, 1.0, step=0.05, key="alpha")
        scale = st.radio("Colour scale", SCALES, key="scale", horizontal=True,
                         help="shared: one scale after dividing each map by its mass Σ|m| (compares methods "
                              "with different units); raw: one scale on raw values; per-map: each map its own range")
        clip = st.slider("Clip at percentile", 90.0, 100.0, step=0.5, key="clip",
                         help="The top colour is this percentile of the values (of |value| for signed maps), as "
                              "Captum clips outliers; 100 = the maximum")
        show_boxes = st.checkbox("Draw boxes", key="show_boxes")
    return Display(colormap=colormap, alpha=float(alpha), scale=scale, clip=None if clip >= 100 else float(clip),
                   show_boxes=show_boxes)


def render(page: str) -> Selection:
    """Render the shared sidebar for ``page`` (its title), restored from and written to the URL."""
    found, problems = catalog.available_models(tuple(str(r) for r in catalog.model_roots()))
    short = catalog.short_names(found)
    urlstate.restore(short)
    models = _model_choices(found, problems)
    image, error, set_key = _image_choice(models)
    method, options, target, layer, head = _method_choice(models, image, page)
    sel = Selection(models=models, image=image, error=error, method=method, options=options, target=target,
                    layer=layer, head=head, display=_display(), set_key=set_key)
    st.session_state[_SELECTION] = sel
    state = st.session_state
    values = {key: state.get(key) for key, *_ in urlstate.PARAMS.values()}
    values["image_index"] = None if image is None or image.index is None else image.index
    values["upload"] = image.name if image is not None and set_key is None else None
    values["upload_fit"] = state.get("upload_fit") if set_key is None else None
    values["discard_ratio"] = state.get("discard_ratio") if "discard_ratio" in METHODS[method].defaults else None
    urlstate.publish(values, short, [e.path for e in models])
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
        st.info("Upload an image in the sidebar (PNG or JPEG), or choose a set of images.")
        st.stop()


def each_model(sel: Selection, compute_one: Any, method: str, options: dict[str, Any]) -> list[tuple[ModelEntry, Any]]:
    """``compute_one(entry, image, method, options, target)`` for every selected model: its
    result, or the one-line reason it does not apply."""
    out: list[tuple[ModelEntry, Any]] = []
    for entry in sel.models:
        try:
            out.append((entry, compute_one(entry, sel.image, method, options, sel.target)))
        except ValueError as err:
            out.append((entry, str(err)))
    return out
