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

import access
import catalog
import compute
import inputs
import options as method_options
import safe
import targets
import urlstate
import zeroshot
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
FUSIONS = method_options.FUSIONS
_SELECTION = "_selection"
DEFAULTS = {"method": "attention", "target": targets.DEFAULT, "layer": -1, "head": "mean",
            "upload_fit": "model's own", "colormap": "inferno", "alpha": 0.5, "scale": "shared", "clip": 99.0,
            "show_boxes": True}


@dataclass(frozen=True, eq=False)
class Selection:
    """What the sidebar selects: models (those that load), image (or an error), method with
    options and target, display, the image set the image comes from (``None`` for an upload) and
    the selected models that do not load (``broken``: said once, by the entry point)."""

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
    broken: tuple[ModelEntry, ...] = ()


def _keep(key: str, options: list[Any], default: Any) -> None:
    """:func:`urlstate.keep`: the widget's state, or ``default`` when it is not one of ``options``."""
    urlstate.keep(key, options, default)


def _step(key: str, count: int, step: int | None) -> None:
    """Previous / next (``step`` ±1, wrapping) or a random image (``step`` ``None``); images are
    numbered from 1."""
    current = int(st.session_state.get(key, 1)) - 1
    st.session_state[key] = 1 + (int(np.random.default_rng().integers(count)) if step is None else
                                 (current + step) % max(count, 1))


def _problem_lines(found: list[ModelEntry], problems: list[str]) -> None:
    """One line per model that does not load and per folder that holds none (at most
    :data:`safe.MAX_LINE` characters), the full reasons in one expander."""
    sb = st.sidebar
    broken = [(e, catalog.load_error(e)) for e in found if catalog.load_error(e) is not None]
    lines = [f"{e.name}: does not load ({(error or '').split(':')[0]})" for e, error in broken]
    lines += [safe.short_paths(p) for p in problems]
    for text in lines:
        sb.warning(safe.line(safe.md(text)))
    if lines:
        with sb.expander(f"Why ({len(lines)})"):
            st.code("\n".join([f"{e.name}: {error}" for e, error in broken] + problems), language=None,
                    wrap_lines=True)


def _another_model(rules: access.Access) -> ModelEntry | None:
    sb = st.sidebar
    names = ", ".join(f"{n}/…" for n in rules.root_names())
    extra = sb.text_input("Another model", key="extra_model", placeholder="ROOT/sub/model or /path/to/model",
                          help="A model under a folder the server was started with (`-- --models DIR`, "
                               f"`-- --model-root DIR`), named by the folder's short name ({safe.md(names)}) and "
                               "the path under it, or by its absolute path (links hold the short form); any "
                               "path with `-- --allow-any-path` on a local server: a "
                               "model directory, a transformers save_pretrained directory, a "
                               ".safetensors file?num_heads=H; explained with its own preprocessing")
    if not extra.strip():
        return None
    try:
        entry = catalog.model_entry(rules.check(extra.strip()))
        catalog.get_model(entry)
    except ValueError as err:
        sb.error(safe.line(f"Cannot load this model: {safe.md(safe.short_paths(str(err)))}"))
        return None
    return entry


def _model_choices(found: list[ModelEntry], problems: list[str], rules: access.Access) -> list[ModelEntry]:
    sb = st.sidebar
    by_path = {e.path: e for e in found}
    st.session_state.setdefault("models", [p for p in by_path if catalog.load_error(by_path[p]) is None])
    st.session_state["models"] = [p for p in st.session_state["models"] if p in by_path]
    chosen = sb.multiselect(
        "Models", list(by_path), key="models", format_func=lambda p: by_path[p].label if p in by_path else p,
        help=f"The shipped models ({catalog.MODELS_DIR.name}/) and any added with `streamlit run app -- --models DIR` "
             f"or the {catalog.MODELS_ENV} environment variable; models that do not load are not selected")
    _problem_lines(found, problems)
    if not found:
        sb.info("No trained model found: train one with `infsa-viz train`, or enter a model path below.")
    entries = [by_path[p] for p in chosen]
    extra = _another_model(rules)
    if extra is not None and extra.path not in {e.path for e in entries}:
        entries.append(extra)
    return entries


def _zero_shot(models: list[ModelEntry]) -> tuple[list[ModelEntry], bool]:
    """The prompt box, shown when a selected model takes prompts (:mod:`zeroshot`), and the models
    with the prompts as their classes (those that take them); ``True`` when the box is shown. A box
    whose prompts cannot be used says why in one line and leaves the models as they are."""
    sb = st.sidebar
    file = zeroshot.text_file()
    takes = {}
    for entry in models:
        config = catalog.get_model(entry)[0].config
        source = zeroshot.source_for(entry.path, config.feature_dim, bool(config.projection_dim), file)
        if source is not None:
            takes[entry.path] = source
    if not takes:
        return models, False
    st.session_state.setdefault("prompts", "")
    text = sb.text_area(
        "Zero-shot prompts (CLIP), one per line", key="prompts", placeholder="a photo of a heron\na photo of a dog",
        help=f"For {', '.join(safe.md(e.name, 40) for e in models if e.path in takes)}: the prompts become the "
             "classes and the logits CLIP's image–text similarities, encoded by the model's own text tower "
             "and tokenizer (or read from the server's text-embedding file); Explain class picks the prompt "
             f"(default: the best-matching one). At most {zeroshot.MAX_PROMPTS} prompts of "
             f"{zeroshot.MAX_CHARS} characters")
    try:
        prompts = zeroshot.parse(text)
    except ValueError as err:
        sb.error(safe.line(f"Prompts not used: {safe.md(err)}"))
        return models, True
    if not prompts:
        return models, True
    out, errors = [], []
    for entry in models:
        given = entry.with_prompts(takes[entry.path], prompts) if entry.path in takes else entry
        error = catalog.load_error(given)
        if error is not None:
            errors.append(f"{entry.name}: {error.split(': ', 1)[-1]}")
            given = entry
        out.append(given)
    for line in dict.fromkeys(errors):
        sb.error(safe.line(f"Prompts not used for {safe.md(safe.short_paths(line))}"))
    if len(errors) < len(takes):
        sb.caption("Classes of " + ", ".join(safe.md(e.name, 40) for e in out if e.prompts) + ": the prompts; "
                   "every page explains and scores the image–text similarity of the prompt Explain class picks.")
    return out, True


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
        return None, None if missing is None else f"The link shows the upload {safe.md(missing, 60)}: upload it again."
    st.session_state.pop(urlstate.MISSING_UPLOAD, None)
    try:
        return inputs.upload_image(upload.getvalue(), upload.name).fitted(FITS[fit]), None
    except ValueError as err:
        return None, f"Cannot use this file: {safe.md(err)}"


def _set_image(models: list[ModelEntry], set_key: str) -> tuple[ImageChoice | None, str | None]:
    sb = st.sidebar
    try:
        count = len(inputs.set_data(set_key))
    except ValueError as err:
        return None, safe.md(err)
    judged = [e for e in catalog.loaded(models) if inputs.belongs(e, set_key)]
    if "image_number" not in st.session_state:  # first screen: an image every model gets right
        try:
            first = compute.first_all_correct(judged, set_key)
        except ValueError:  # a model's forward of the set does not fit in memory (said where it is shown)
            first = None
        st.session_state["image_number"] = (first or 0) + 1
    only_wrong = sb.checkbox("Only misclassified", key="only_wrong", disabled=not judged,
                             help="Browse the images a model gets wrong (predictions computed once per model); "
                                  "for models trained on this set's classes")
    if only_wrong and judged:
        by_path = {e.path: e for e in judged}
        _keep("wrong_model", list(by_path), judged[0].path)
        path = sb.selectbox("…by model", list(by_path), key="wrong_model", format_func=lambda p: by_path[p].label)
        try:
            with st.spinner("Classifying the whole set…"):
                wrong = compute.misclassified(by_path[path], set_key)
        except ValueError as err:  # the set's forward does not fit in memory
            return None, safe.md(err)
        if not len(wrong):
            return None, f"{by_path[path].label} classifies every image of this set correctly."
        key, count, label = "wrong_number", len(wrong), f"Misclassified image (1 … {len(wrong)})"
    else:
        key, label = "image_number", f"Image (1 … {count})"
    urlstate.keep_range(key, 1, count, 1)
    position = int(sb.number_input(label, 1, count, key=key)) - 1
    back, rand, forward = sb.columns(3)
    back.button("◀", key="previous_image", on_click=_step, args=(key, count, -1), help="Previous image",
                width="stretch")
    rand.button(":material/shuffle:", key="random_image", on_click=_step, args=(key, count, None), help="Random image",
                width="stretch")
    forward.button("▶", key="next_image", on_click=_step, args=(key, count, 1), help="Next image", width="stretch")
    index = int(wrong[position]) if key == "wrong_number" else position
    image = inputs.set_image(set_key, index)
    shows = inputs.set_classes(set_key)[image.label] if image.label is not None else "no label"
    scored = "scored for every selected model" if len(judged) == len(models) else (
        f"scored only for {', '.join(e.name for e in judged)}" if judged else "not scored: no selected model "
        "was trained on these classes")
    legend = {"scenes": "; target box green, distractors red", "boxes": "; target boxes green"}.get(
        inputs.set_objects(set_key), "")  # as the set's data source declares its objects
    sb.caption(f"{safe.md(image.source)}: shows {safe.md(shows)} ({safe.md(scored)}){legend}")
    for entry in models:  # a folder whose classes a model lacks: said once, here
        if (why := inputs.mismatch(entry, set_key)) is not None:
            sb.caption(safe.line(f"not scored for {safe.md(entry.name)}: {safe.md(why)}"))
    return image, None


def _image_choice(models: list[ModelEntry]) -> tuple[ImageChoice | None, str | None, str | None]:
    sets = inputs.image_sets(models, inputs.data_specs())
    urlstate.keep("image_set", [*sets, UPLOAD], sets[0],
                  "no image set of this name on this server (a folder is named when the server starts: "
                  "-- --data folder:NAME=PATH)")
    set_key = st.sidebar.radio("Images", [*sets, UPLOAD], key="image_set",
                               format_func=lambda k: "Upload" if k == UPLOAD else safe.md(inputs.set_title(k), 60),
                               help="The test split of the benchmark the models were trained on, folders added "
                                    f"with `-- --data folder:NAME=PATH` or {inputs.DATA_ENV} (links name a folder "
                                    "by its NAME), or an image of your own")
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
    options = selector_options(method, layer=layer, head=head, strict=False) | method_options.controls(method)
    labelled = image is not None and image.label is not None
    choices = targets.choices(classes, labelled=labelled, fewest=fewest)
    _keep("target", choices, targets.DEFAULT)
    names = [inputs.class_names(e) for e in catalog.loaded(models)]
    target = sb.selectbox("Explain class", choices, key="target",
                          format_func=lambda t: safe.line(targets.describe(t, names), 60),
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
        urlstate.keep_range("alpha", 0.0, 1.0, DEFAULTS["alpha"])
        urlstate.keep_range("clip", 90.0, 100.0, DEFAULTS["clip"])
        _keep("show_boxes", [True, False], DEFAULTS["show_boxes"])
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


def render(page: Any) -> Selection:
    """Render the shared sidebar for ``page`` (a ``st.Page``), restored from and written to the URL."""
    found, problems = catalog.available_models(tuple(str(r) for r in catalog.model_roots()))
    rules = access.access()
    short = catalog.short_names(found, rules.link_name)
    urlstate.restore(short, rules.check)
    chosen = _model_choices(found, problems, rules)
    loaded = catalog.loaded(chosen)
    models, prompted = _zero_shot(loaded)
    image, error, set_key = _image_choice(models)
    method, options, target, layer, head = _method_choice(models, image, page.title)
    sel = Selection(models=models, image=image, error=error, method=method, options=options, target=target,
                    layer=layer, head=head, display=_display(), set_key=set_key,
                    broken=tuple(e for e in chosen if e not in loaded))
    st.session_state[_SELECTION] = sel
    state = st.session_state
    values = {spec.key: state.get(spec.key) for spec in urlstate.PARAMS.values() if spec.page is None}
    values["prompts"] = state.get("prompts") or None if prompted else None
    values["image_number"] = None if image is None or image.index is None else image.index + 1
    values["upload"] = image.name if image is not None and set_key is None else None
    values["upload_fit"] = state.get("upload_fit") if set_key is None else None
    for key in ("only_wrong", "wrong_model", "wrong_number"):
        values[key] = state.get(key) if state.get("only_wrong") and set_key is not None else None
    values |= {key: None for key, *_ in method_options.CONTROLS.values()} | method_options.values(method)
    urlstate.publish(values, short, [e.path for e in chosen], page.url_path, rules.link_name)
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
        st.error(safe.line(sel.error, 300))
        st.stop()
    if not sel.models:
        st.info("Select at least one model in the sidebar.")
        st.stop()
    if sel.image is None:
        st.info("Upload an image in the sidebar (PNG or JPEG), or choose a set of images.")
        st.stop()


def require_set(sel: Selection, page: str) -> tuple[str, Any]:
    """The image set the sidebar shows and its images; the page (``page``: what it does, in a few
    words) stops with a clear message when there is no model that loads or no set (an upload)."""
    if not sel.models:
        st.info("Select at least one model that loads in the sidebar.")
        st.stop()
    if sel.set_key is None:
        st.info(f"The {page} a set of images: choose one under Images in the sidebar (uploads are one image).")
        st.stop()
    try:
        return sel.set_key, inputs.set_data(sel.set_key)
    except ValueError as err:
        st.error(safe.line(safe.md(err), 300))
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
