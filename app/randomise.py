"""The parameter-randomisation check of the Differences & sanity page (Adebayo et al., NeurIPS 2018):
a map of a copy of the model whose parameters are randomised from the top down, beside the
trained model's, with their similarity — all from the library (:func:`infsa_viz.metrics.cascading_randomisation`,
:func:`~infsa_viz.metrics.map_similarity`). The randomised copy reads the trained model's input: one
forward record of the copy on the cached input, one map computation per stage shown."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import streamlit as st
import torch

import catalog
import compute
import inputs
from catalog import ModelEntry
from inputs import ImageChoice
from infsa_viz.forward import ForwardRecord
from infsa_viz.maps import METHODS, attribute
from infsa_viz.metrics import cascading_randomisation, map_similarity

__all__ = ["randomised_map", "similarity", "stages"]


@st.cache_data(show_spinner=False, max_entries=64)
def _stages(path: str, version: int) -> list[str]:
    model, lock = catalog.model_at(path, version)
    with lock:
        return [name for name, _ in cascading_randomisation(model, seed=0)]


def stages(entry: ModelEntry) -> list[str]:
    """The cascade's stages, top first (``head``, ``block_{L-1}`` … ``block_0``, ``embedding``)."""
    return _stages(entry.source, entry.version)


@st.cache_data(show_spinner="Randomising the model's parameters…", max_entries=128)
def _randomised(path: str, version: int, image_key: str, method: str, options_json: str, target: int | None,
                stage: str, _image: ImageChoice) -> np.ndarray:
    model, lock = catalog.model_at(path, version)
    trained = compute.record_at(path, version, _image)  # the image's cached input
    with lock:  # the copy is made from the shared model
        copy = next(m for name, m in cascading_randomisation(model, seed=0) if name == stage)
    forward = ForwardRecord(copy, trained.inputs, prepared=trained.prepared, capture=METHODS[method].reads_attention,
                            classes=None if target is None else torch.tensor([target]), name="class")
    return attribute(forward, method, **json.loads(options_json)).maps[0].numpy()


def randomised_map(entry: ModelEntry, image: ImageChoice, method: str, options: dict[str, Any],
                   target: int | None, stage: str) -> np.ndarray:
    """``(h, w)``: ``method``'s map of the model randomised down to ``stage`` (cumulative, seed 0),
    explaining ``target`` (``None`` for methods that explain no class)."""
    if stage not in stages(entry):
        raise ValueError(f"stage {stage!r} is not one of this model's: {stages(entry)}")
    image = inputs.for_model(image, entry)
    return _randomised(entry.source, entry.version, image.key, method, json.dumps(options, sort_keys=True), target,
                       stage, image)


def similarity(trained: np.ndarray, randomised: np.ndarray) -> dict[str, float]:
    """Spearman rank correlation and SSIM of the two maps (:func:`~infsa_viz.metrics.map_similarity`)."""
    return {k: float(v[0]) for k, v in map_similarity(trained[None], randomised[None]).items()}
