"""The sidebar's controls for a method's own options, and those options in words.

A method declares what it accepts and its defaults (:attr:`infsa_viz.maps.MapMethod.defaults`); the
sidebar offers a control for each declared option it knows how to choose — rollout's discard ratio,
the discount γ of the spectral maps (the layer's learned ρ by default), integrated gradients' step
count and the baseline of the methods that replace pixels —, starting at the method's own default,
and the chosen values travel with the link (:mod:`urlstate`) and every export (:mod:`exports`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

import urlstate
from infsa_viz.maps import METHODS

#: What a control shows for a default of ``None`` (γ: each layer's learned ρ).
LEARNED = "learned"
#: Option → (widget key, label, choices, help). A method gets the control of an option it declares
#: when its default (:attr:`~infsa_viz.maps.MapMethod.defaults`; γ's ``None``: :data:`LEARNED`) is one
#: of the choices, and the control starts there (the deletion oracles' ``"mean"`` baseline, a MoRF
#: protocol's, is not a pixel value: no control).
CONTROLS: dict[str, tuple[str, str, list[Any], str]] = {
    "discard_ratio": ("discard_ratio", "Discard ratio", [round(float(v), 2) for v in np.arange(0, 0.96, 0.05)],
                      "share of the smallest attention weights of each layer set to 0 before the rollout "
                      "(vit-explain; 0 = Abnar & Zuidema's rollout)"),
    "gamma": ("gamma", "Discount γ", [LEARNED, *[round(float(v), 2) for v in np.arange(0.05, 1.0, 0.05)], 0.99],
              "the discount of (I − γA)⁻¹ and Σ γᵗAᵗ: 'learned' reads each layer's learned ρ (a fixed "
              "default for layers without one, e.g. softmax)"),
    "n_steps": ("ig_steps", "Integration steps", [4, 8, 16, 32, 64, 128],
                "steps of the Riemann sum of integrated gradients (more: closer to the integral, slower)"),
    "baseline": ("baseline", "Baseline", [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0],
                 "the value that replaces the input, in the model's normalised units: 0 = the training data's "
                 "mean colour, ±1 = one standard deviation"),
}
#: Head fusions of methods that fuse heads rather than pick one (rollout).
FUSIONS = ["mean", "max", "min"]


def default(method: str, option: str) -> Any:
    """``method``'s default for a control's ``option`` as the control shows it, or ``None`` when the
    control does not apply (the method does not declare the option, or its default is not a choice)."""
    declared = METHODS[method].defaults
    if option not in declared:
        return None
    value = LEARNED if declared[option] is None else declared[option]
    return value if value in CONTROLS[option][2] else None


def controls(method: str) -> dict[str, Any]:
    """Draw the controls of ``method``'s options in the sidebar, each starting at the method's
    default; the options chosen (``gamma`` left out when it is :data:`LEARNED`: the method's own)."""
    out: dict[str, Any] = {}
    for option, (key, label, offered, help_text) in CONTROLS.items():
        if (start := default(method, option)) is None:
            continue
        urlstate.keep(key, offered, start)
        value = st.sidebar.select_slider(label, offered, key=key, help=help_text)
        if value != LEARNED:
            out[option] = value
    return out


def values(method: str) -> dict[str, Any]:
    """The values of ``method``'s option controls in the session state (for the URL): widget key → value."""
    return {key: st.session_state.get(key) for option, (key, *_) in CONTROLS.items()
            if default(method, option) is not None}


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
    for option, (_, label, _, _) in CONTROLS.items():
        if option in resolved:
            value = resolved[option]
            words.append(f"{label[0].lower() + label[1:]} {'learned ρ' if value is None else value}")
    return ", ".join(words)
