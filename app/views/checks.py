"""Differences & sanity: where each variant's map differs from the softmax model's (one diverging
scale for every difference), and the parameter-randomisation check (a map of a copy of each model
randomised from the top down, beside the trained model's, with their similarity)."""

import dataclasses

import numpy as np
import streamlit as st

import compute
import draw
import exports
import randomise
import safe
import sidebar
import urlstate
from infsa_viz import VARIANTS
from infsa_viz.metrics import FAIL_THRESHOLD
from infsa_viz.overlay import colour_scale

sel = sidebar.selection()
st.title("Differences & sanity")
sidebar.require_inputs(sel)
image = sel.image
views = {e.path: v for e, v in sidebar.each_model(sel, compute.map_view, sel.method, sel.options)}
by_path = {e.path: e for e in sel.models}
softmax = [e.path for e in sel.models if e.variant == VARIANTS[0]]
urlstate.keep("checks_reference", list(by_path), (softmax or list(by_path))[0])

st.header("Difference map")
reference = by_path[st.selectbox("Subtract the map of", list(by_path), key="checks_reference",
                                 format_func=lambda p: by_path[p].label,
                                 help="each other model's map minus this one's (default: a softmax model), "
                                      "both divided by their mass Σ|m| first so the units agree")]
base = views[reference.path]
diffs, shown = [], []
for entry in sel.models:
    view = views[entry.path]
    if entry is reference or isinstance(view, str) or isinstance(base, str):
        continue
    if view.map.shape != base.map.shape:
        st.caption(safe.line(f"{safe.md(entry.label)}: a {view.map.shape} patch grid, not the reference's "
                             f"{base.map.shape}: not compared"))
        continue
    diff = view.map / max(np.abs(view.map).sum(), 1e-12) - base.map / max(np.abs(base.map).sum(), 1e-12)
    diffs.append(diff)
    shown.append((entry, dataclasses.replace(view, map=diff)))
if isinstance(base, str):
    st.error(safe.line(f"{safe.md(reference.label)}: {safe.md(base)}"))
elif not shown:
    st.info("Select at least two models with the same patch grid to see a difference.")
else:
    scale = colour_scale(diffs, "raw", signed=True, clip=sel.display.clip)
    for column, (i, (entry, view)) in zip(st.columns(max(len(shown), 3)), enumerate(shown)):
        column.image(draw.tile_png(view, scale, i, sel.display), width="stretch", output_format="PNG",
                     caption=f"{safe.md(entry.label)} − {safe.md(reference.name)}")
    st.html(draw.colour_bar(scale, 0, "difference of mass shares (red: more than the reference)"))
    st.caption(f"{sel.method} maps of {safe.md(image.source)}, each divided by its mass Σ|m|; one diverging scale "
               f"for every difference ({scale.clipping}): red where the model puts more of its map than "
               f"{safe.md(reference.label)}, blue where less.")

st.header("Parameter randomisation")
names = randomise.stages(sel.models[0])
urlstate.keep("checks_stage", names, names[-1])
stage = st.selectbox("Randomised down to", names, key="checks_stage",
                     help="cascading randomisation (Adebayo et al. 2018): the head first, then the blocks from the "
                          "last to the first, then the embeddings; each parameter tensor redrawn from a Gaussian "
                          "with its own mean and spread (seed 0)")
st.caption(f"A map that stays the same when the model's parameters are random does not depend on what the model "
           f"learned: it fails the check when Spearman's ρ between the two maps stays above {FAIL_THRESHOLD} once "
           "every stage is randomised.")
exported = {}
for entry in sel.models:
    view = views[entry.path]
    if isinstance(view, str):
        st.error(safe.line(f"{safe.md(entry.label)}: {safe.md(view)}"))
        continue
    try:
        random_map = randomise.randomised_map(entry, image, sel.method, sel.options, view.target, stage)
    except ValueError as err:
        st.error(safe.line(f"{safe.md(entry.label)}: {safe.md(err)}"))
        continue
    pair = [view, dataclasses.replace(view, map=random_map)]
    scale = draw.scale_of([v.map for v in pair], sel.method, dataclasses.replace(sel.display, scale="per-map"))
    similar = randomise.similarity(view.map, random_map)
    st.markdown(f"**{safe.md(entry.label)}** — Spearman ρ {similar['spearman']:+.2f}, SSIM {similar['ssim']:.2f}"
                + (" :orange[(still similar)]" if similar["spearman"] > FAIL_THRESHOLD else ""))
    for column, (i, v), what in zip(st.columns(3), enumerate(pair), ("trained", f"randomised to {stage}")):
        column.image(draw.tile_png(v, scale, i, sel.display), width="stretch", output_format="PNG",
                     caption=f"{what} · {safe.md(entry.name)}")
        column.html(draw.colour_bar(scale, i, draw.short_unit(scale)))
    exported[f"{entry.name} trained"], exported[f"{entry.name} randomised {stage}"] = view.map, random_map

exports.buttons(exports.stem(image.base, "checks", sel.method, stage), key="checks", maps=lambda: exported,
                settings=exports.settings(sel, extra={"difference_reference": reference.name,
                                                      "randomised_to": stage, "randomisation_seed": 0}))
