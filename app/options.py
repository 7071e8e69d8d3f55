"""The sidebar's controls for a method's own options, and those options in words.

A method declares what it accepts (:attr:`infsa_viz.maps.MapMethod.defaults`); the sidebar offers
a control for each option it knows how to choose — rollout's discard ratio, the discount γ of the
spectral maps (the layer's learned ρ by default), integrated gradients' step count and the
baseline of the methods that replace pixels — and the chosen values travel with the link
(:mod:`urlstate`) and every export (:mod:`exports`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

import urlstate
from infsa_viz.maps import METHODS

#: Option → (widget key, label, choices, default, help). ``None`` in ``choices`` is the method's own default.
CONTROLS: dict[str, tuple[str, str, list[Any], Any, str]] = {
    "discard_ratio": ("discard_ratio", "Discard ratio", [round(float(v), 2) for v in np.arange(0, 0.96, 0.05)], 0.0,
                      "share of the smallest attention weights of each layer set to 0 before the rollout "
                      "(vit-explain; 0 = Abnar & Zuidema's rollout)"),
    "gamma": ("gamma", "Discount γ", ["learned", *[round(float(v), 2) for v in np.arange(0.05, 1.0, 0.05)], 0.99],
              "learned", "the discount of (I − γA)⁻¹ and Σ γᵗAᵗ: 'learned' reads each layer's learned ρ (a fixed "
              "default for layers without one, e.g. softmax)"),
    "n_steps": ("ig_steps", "Integration steps", [4, 8, 16, 32, 64, 128], 32,
                "steps of the Riemann sum of integrated gradients (more: closer to the integral, slower)"),
    "baseline": ("baseline", "Baseline", [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0], 0.0,
                 "the value that replaces the input, in the model's normalised units: 0 = the training data's "
                 "mean colour, ±1 = one standard deviation"),
}
#: Head fusions of methods that fuse heads rather than pick one (rollout).
FUSIONS = ["mean", "max", "min"]


def controls(method: str) -> dict[str, Any]:
    """Draw the controls of ``method``'s options in the sidebar; the options chosen (the method's
    own default where a control says so)."""
    spec = METHODS[method]
    out: dict[str, Any] = {}
    for option, (key, label, choices, default, help_text) in CONTROLS.items():
        if option not in spec.defaults:
            continue
        urlstate.keep(key, choices, default)
        value = st.sidebar.select_slider(label, choices, key=key, help=help_text)
        if value != "learned":
            out[option] = value
    return out


def values(method: str) -> dict[str, Any]:
    """The values of ``method``'s option controls in the session state (for the URL): widget key → value."""
    return {key: st.session_state.get(key) for option, (key, *_) in CONTROLS.items()
            if option in METHODS[method].defaults}


def describe(method: str, options: dict[str, Any]) -> str:
    """The resolved options of a map, in words: ``layer last, head fusion max, discard ratio 0.5``."""
    spec = METHODS[method]
    resolved = {**spec.defaults, **options}
    words = []
    if "layer" in resolved:
        words.append(f"layer {'last' if resolved['layer'] == -1 else resolved['layer']}")
    if "head" in resolved:
        fused = not spec.per_layer and resolved["head"] in FUSIONS
        words.append(f"head fusion {resolved['head']}" if fused else f"head {resolved['head']}")
    for option, (_, label, _, _, _) in CONTROLS.items():
        if option in resolved:
            value = resolved[option]
            words.append(f"{label[0].lower() + label[1:]} {'learned ρ' if value is None else value}")
    return ", ".join(words)
