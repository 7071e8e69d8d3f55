"""The meta-evaluation of every registered figure (and the controls) for one model on a benchmark."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from .controls import CONTROLS, control_values
from .core import MetaEvaluation, Partner, meta_evaluate

__all__ = ["meta_evaluate_model", "randomised_partner"]

_STREAM_CONTROL = 2  # the random control's stream; the partner's is the next one


def randomised_partner(model: nn.Module, *, seed: int = 0) -> nn.Module:
    """A copy of ``model`` with every parameter randomised: the last stage of the cascade of
    :func:`~infsa_viz.metrics.sanity.cascading_randomisation` (Adebayo et al., NeurIPS 2018)."""
    from ...metrics.sanity import cascading_randomisation

    *_, (_, randomised) = cascading_randomisation(model, seed=seed)
    return randomised.eval()


def meta_evaluate_model(model: Any, data: Any, *, protocol: Any = None, metrics: Sequence[str] | None = None,
                        oracle: str = "evidence_oracle", partner: nn.Module | None = None,
                        seed: int = 0) -> MetaEvaluation:
    """:func:`~.core.meta_evaluate` of every registered per-image metric and every control for one model.

    The reference is the ``oracle`` map (default the evidence oracle, built from each scene object's
    importance to this model); the figures are the registry's (table figures with a direction),
    each computed by its metric on the degraded maps exactly as :func:`~infsa_viz.evaluation.evaluate`
    computes it (settings and image subsets from ``protocol``; ``"scored"`` figures on the images the
    model classifies as ``select`` asks), and the controls of :data:`~.controls.CONTROLS`. The partner
    (default: this model with every parameter randomised, :func:`randomised_partner`) scores the same
    figures under its own ground truth (its objects' importance, its oracle) on the same images — the
    ``"scored"`` images are this model's. Metrics that re-explain other classes (the class switch,
    target sensitivity) cannot score fixed maps and are left out.

    Args:
        model: the model (eval mode).
        data: a :class:`~infsa_viz.data.LabelledImages` with scenes (a generated benchmark).
        protocol: :class:`~infsa_viz.evaluation.EvalSettings` (default: the evaluation's defaults).
        metrics: the metrics to meta-evaluate (default: every selected per-image metric that can).
        oracle: the reference map method (a registered ``"ceiling"``).
        partner: the reactivity test's other model (default the randomised copy).
        seed: seed of the random map, the noise, the random control and the randomisation.
    """
    from ...maps import check_method
    from ...evaluation.engine import score_metrics, scoring_context
    from ...evaluation.settings import EvalSettings

    protocol = EvalSettings() if protocol is None else protocol
    if check_method(oracle).role != "ceiling":
        raise ValueError(f"oracle={oracle!r} is not a ceiling reference map")
    if data.scenes is None:
        raise ValueError("data has no scenes; the meta-evaluation needs a generated benchmark (object masks)")
    model.eval()
    described = ("the model with every parameter randomised (cascading randomisation down to the embeddings, "
                 f"seed {seed})") if partner is None else f"given by the caller ({type(partner).__name__})"
    partner = randomised_partner(model, seed=seed) if partner is None else partner.eval()
    ctx, result, logits, _ = scoring_context(model, data, oracle, protocol=protocol)
    other_ctx, other, _, _ = scoring_context(partner, data, oracle, protocol=protocol)
    chosen = [m for m in protocol.image_metrics() if not m.redraws and (metrics is None or m.name in metrics)]
    figures = [f for m in chosen for f in m.figures if f.table and f.higher_is_better is not None]
    eligible = (np.ones(len(ctx), dtype=bool) if protocol.select == "all"
                else logits.argmax(-1).numpy() == ctx.explained)

    def closure(base: Any, stream: int):
        rng = np.random.default_rng([seed, stream])

        def score(maps: np.ndarray) -> dict[str, np.ndarray]:
            tensor = torch.as_tensor(maps, dtype=torch.float32)
            degraded = dataclasses.replace(base, maps=tensor, redraw=lambda rows, classes: tensor[rows])
            values, _, _ = score_metrics(chosen, degraded)
            found = {f.name: np.where(eligible, values[f.key], np.nan) if f.images == "scored" else values[f.key]
                     for f in figures}
            return {**found, **control_values(maps, degraded, rng)}
        return score

    directions = {**{f.name: bool(f.higher_is_better) for f in figures},
                  **{name: c.higher_is_better for name, c in CONTROLS.items()}}
    roles = {name: f"{c.role} control" for name, c in CONTROLS.items()}
    found = meta_evaluate(closure(ctx, _STREAM_CONTROL), result.maps.double().numpy(), higher_is_better=directions,
                          roles=roles, partner=Partner(closure(other_ctx, _STREAM_CONTROL + 1),
                                                       other.maps.double().numpy()), seed=seed)
    found.protocol.update({
        "oracle": oracle, "metrics": [m.name for m in chosen], "settings": protocol.to_dict(),
        "scored_images": int(eligible.sum()),
        "partner": described,
        "controls": {name: {"role": c.role, "higher_is_better": c.higher_is_better, "what": c.description}
                     for name, c in CONTROLS.items()},
    })
    return found
