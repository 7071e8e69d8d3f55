"""Controls of the meta-evaluation: figures whose verdict is known before it runs.

A meta-evaluation (:mod:`.meta`) that trusts a meaningless figure is broken, and one that distrusts a
figure faithful by construction is too. Each control is scored exactly as the registered metrics are
(from the maps being judged and what the evaluation knows about the images, :class:`~infsa_viz.
metrics.registry.Scoring`), so the same tests judge it:

*Negative controls* (must never be trusted): they ignore the model.

* ``control_constant``: 0 for every map.
* ``control_random``: a fresh uniform draw per image at every call (seeded once).
* ``control_peakedness``: the share of a map's positive mass in its 3 largest patches (it rewards a
  peaked map, wherever the peak is).
* ``control_total_mass``: the map's total positive mass, lower is better (it rewards a sparse map).
* ``control_image``: the mean of the model's input over the image (a figure of the image alone).

*Positive control* (must be trusted): ``control_oracle_correlation``, Pearson's correlation between the
map and the scored model's own evidence oracle (:func:`~infsa_viz.metrics.evidence.evidence_oracle`:
each object's measured importance painted on its pixels) — faithful to the evidence by construction.

Each direction is the one that favours the control in the degradation test (the oracle is peaked and
sparse), so a control that fails does so for a reason the direction cannot repair: the reactivity test
(:mod:`.meta`) is symmetric in the two models, and a figure that ignores the model can win at most
half of it in either direction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

__all__ = ["CONTROLS", "Control", "control_values"]

Role = Literal["negative", "positive"]


@dataclass(frozen=True)
class Control:
    """A control figure: its name, role, direction, one-line description and its values."""

    name: str
    role: Role
    higher_is_better: bool
    description: str
    values: Callable[[np.ndarray, Any, np.random.Generator], np.ndarray]


def _flat(maps: np.ndarray) -> np.ndarray:
    return np.clip(np.asarray(maps, dtype=np.float64).reshape(len(maps), -1), 0, None)


def _peakedness(maps: np.ndarray, ctx: Any, rng: np.random.Generator) -> np.ndarray:
    positive = _flat(maps)
    total = positive.sum(1)
    top = -np.sort(-positive, axis=1)[:, :3].sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, top / np.where(total > 0, total, 1.0), np.nan)


def _oracle_correlation(maps: np.ndarray, ctx: Any, rng: np.random.Generator) -> np.ndarray:
    from ...metrics.evidence import evidence_oracle

    truth = ctx.truth
    if not truth.has_evidence:
        return np.full(len(maps), np.nan)
    oracle = evidence_oracle(truth.masks, truth.importance, patch_size=ctx.model.patch_size).reshape(len(maps), -1)
    flat = np.asarray(maps, dtype=np.float64).reshape(len(maps), -1)
    a, b = flat - flat.mean(1, keepdims=True), oracle - oracle.mean(1, keepdims=True)
    norm = np.sqrt((a ** 2).sum(1) * (b ** 2).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 0, (a * b).sum(1) / np.where(norm > 0, norm, 1.0), np.nan)


#: Control name → control; the meta-evaluation scores every one beside the registered figures.
CONTROLS: dict[str, Control] = {c.name: c for c in (
    Control("control_constant", "negative", True, "0 for every map",
            lambda maps, ctx, rng: np.zeros(len(maps))),
    Control("control_random", "negative", True, "a fresh uniform draw per image and call",
            lambda maps, ctx, rng: rng.random(len(maps))),
    Control("control_peakedness", "negative", True, "share of the map's positive mass in its 3 largest patches",
            _peakedness),
    Control("control_total_mass", "negative", False, "the map's total positive mass (lower is better)",
            lambda maps, ctx, rng: _flat(maps).sum(1)),
    Control("control_image", "negative", True, "mean of the model's input over the image (the map is not read)",
            lambda maps, ctx, rng: ctx.images.double().flatten(1).mean(1).cpu().numpy()),
    Control("control_oracle_correlation", "positive", True,
            "Pearson correlation of the map with the scored model's evidence oracle (faithful by construction)",
            _oracle_correlation),
)}


def control_values(maps: np.ndarray, ctx: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every control's ``(B,)`` values on ``maps`` in the context ``ctx`` (a :class:`~infsa_viz.metrics.
    registry.Scoring` whose ``truth`` and ``images`` belong to the model being scored)."""
    return {name: np.asarray(c.values(maps, ctx, rng), dtype=np.float64) for name, c in CONTROLS.items()}
