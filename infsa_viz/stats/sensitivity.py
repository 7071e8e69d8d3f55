"""How much MoRF-AOC depends on its protocol: the score variants of one set of raw deletion curves.

The InfSA paper (Roffo & Palmer, arXiv 2603.00175) reports MoRF-AOC 42.6 (softmax) against 71.7
and 76.0 (pure / Linear InfSA) without publishing its protocol. A MoRF score is fixed by six
choices; :class:`ProtocolChoice` names one value of each:

* ``deletion``: what a removed pixel becomes: ``"zero"`` (a black pixel), ``"mean"`` (the data
  set mean, 0 after normalisation; ours) or ``"blur"`` (a Gaussian blur of the image);
* ``steps``: ``"patch_fraction"`` (20 steps over the fraction of patches; ours),
  ``"patches"`` (one patch per step) or ``"pixels"`` (20 steps over the fraction of pixels,
  pixels ranked by the bilinearly upsampled map);
* ``curve``: ``"ratio"`` (``p_k / p_0``; ours) or ``"probability"`` (``p_k``);
* ``area``: ``"aoc"`` (the area between the curve and its start, ``∫ (c_0 − c_k) df``; ours),
  ``"one_minus_auc"`` (``1 − ∫ c_k df``, the area up to 1) or ``"aopc"`` (the mean of
  ``c_0 − c_k`` over the ``K + 1`` steps, Samek et al. 2016);
* ``target``: the class whose probability is tracked: ``"label"`` (ours) or ``"predicted"``;
* ``images``: ``"correct"`` (images the model classifies correctly; ours) or ``"all"``.

For ``curve="ratio"`` ``aoc`` and ``one_minus_auc`` coincide (``c_0 = 1``), and on correctly
classified images the label is the prediction, so :func:`protocol_choices` lists only distinct
combinations. Curves come from :func:`~infsa_viz.metrics.perturbation_curves` (the caller runs
the model); :func:`curve_scores` and :func:`protocol_mean` turn them into every variant's score, and
:func:`sensitivity_summary` spreads those over seeds and checks each protocol against the paper.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import check_choice
from ..model import VARIANTS
from ..targets import TARGET_WORDS
from .verdict import spread

__all__ = ["AREAS", "CURVES", "DELETIONS", "IMAGES", "OURS", "STEPS", "TARGETS", "ProtocolChoice", "RawCurves",
           "curve_scores", "one_at_a_time", "protocol_choices", "protocol_mean", "sensitivity_summary"]

DELETIONS = ("zero", "mean", "blur")
STEPS = ("patch_fraction", "patches", "pixels")
CURVES = ("ratio", "probability")
AREAS = ("aoc", "one_minus_auc", "aopc")
TARGETS = TARGET_WORDS  # the class tracked: the label (ours) or the prediction
IMAGES = ("correct", "all")
#: Steps of the ``patch_fraction`` and ``pixels`` schedules (ours: ``EvalSettings.steps``).
FRACTION_STEPS = 20
_AXES = {"deletion": DELETIONS, "steps": STEPS, "curve": CURVES, "area": AREAS, "target": TARGETS,
         "images": IMAGES}


@dataclass(frozen=True)
class ProtocolChoice:
    """One MoRF protocol: a value for each of the six choices (see the module docstring)."""

    deletion: str
    steps: str
    curve: str
    area: str
    target: str
    images: str

    def __post_init__(self) -> None:
        for axis, options in _AXES.items():
            check_choice(axis, getattr(self, axis), options)

    @property
    def name(self) -> str:
        """``"mean · patch_fraction · ratio · aoc · label · correct"``."""
        return " · ".join(getattr(self, axis) for axis in _AXES)

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)

    def differs_from(self, other: ProtocolChoice) -> list[str]:
        """The axes on which ``self`` and ``other`` differ."""
        return [axis for axis in _AXES if getattr(self, axis) != getattr(other, axis)]


#: Our evaluation's protocol (``infsa-viz evaluate`` defaults).
OURS = ProtocolChoice("mean", "patch_fraction", "ratio", "aoc", "label", "correct")


def _distinct(choice: ProtocolChoice) -> bool:
    """False for a combination that equals another by construction (listed once)."""
    if choice.curve == "ratio" and choice.area == "one_minus_auc":
        return False  # c_0 = 1: equal to "aoc"
    return not (choice.images == "correct" and choice.target == "predicted")  # label == prediction there


def protocol_choices() -> list[ProtocolChoice]:
    """Every distinct combination of the six choices (135), ours first."""
    every = [ProtocolChoice(*values) for values in itertools.product(*_AXES.values())]
    return [OURS] + [c for c in every if _distinct(c) and c != OURS]


def one_at_a_time() -> list[ProtocolChoice]:
    """Ours, then ours with one choice changed (each other value of each axis). The tracked class
    matters only on misclassified images, so ``target="predicted"`` comes with ``images="all"``;
    ``1 − AUC`` differs from the area over the curve only for raw probabilities, so
    ``area="one_minus_auc"`` comes with ``curve="probability"``."""
    out = [OURS]
    for axis, options in _AXES.items():
        for value in options:
            changed = dataclasses.replace(OURS, **{axis: value})
            if axis == "target" and value == "predicted":
                changed = dataclasses.replace(changed, images="all")
            if axis == "area" and value == "one_minus_auc":
                changed = dataclasses.replace(changed, curve="probability")
            if changed != OURS and _distinct(changed) and changed not in out:
                out.append(changed)
    return out


def curve_scores(probs: np.ndarray, fractions: np.ndarray, *, curve: str, area: str) -> np.ndarray:
    """Per-image MoRF score in % of one protocol's curve and area rule.

    Args:
        probs: ``(B, K + 1)`` probability of the tracked class after each step (column 0: the
            clean image).
        fractions: ``(K + 1,)`` increasing fraction removed at each step, 0 first and 1 last.
        curve: ``"ratio"`` (``c_k = p_k / p_0``) or ``"probability"`` (``c_k = p_k``).
        area: ``"aoc"`` (``100 ∫ (c_0 − c_k) df``, trapezoid rule), ``"one_minus_auc"``
            (``100 (1 − ∫ c_k df)``) or ``"aopc"`` (``100 / (K + 1) Σ_k (c_0 − c_k)``).

    Returns:
        ``(B,) float64``; ``nan`` where ``curve="ratio"`` and ``p_0 = 0``.

    Raises:
        ValueError: a bad shape or option.

    Example:
        >>> curve_scores(np.array([[1.0, 0.0]]), np.array([0.0, 1.0]), curve="ratio", area="aoc").tolist()
        [50.0]
    """
    check_choice("curve", curve, CURVES)
    check_choice("area", area, AREAS)
    p = np.asarray(probs, dtype=np.float64)
    f = np.asarray(fractions, dtype=np.float64)
    if p.ndim != 2 or f.shape != (p.shape[1],) or p.shape[1] < 2:
        raise ValueError(f"probs has shape {p.shape} and fractions {f.shape}; expected (B, K + 1) and (K + 1,), K >= 1")
    if not (f[0] == 0.0 and f[-1] == 1.0 and (np.diff(f) >= 0).all()):
        raise ValueError(f"fractions={f.tolist()} is invalid; expected a non-decreasing grid from 0 to 1")
    if curve == "ratio":
        p0 = p[:, :1]
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(p0 > 0, p / np.where(p0 > 0, p0, 1.0), np.nan)
    else:
        c = p
    if area == "aopc":
        return 100.0 * (c[:, :1] - c).mean(axis=1)
    auc = ((c[:, 1:] + c[:, :-1]) / 2.0 * np.diff(f)).sum(axis=1)  # trapezoid over the actual fractions
    return 100.0 * ((c[:, 0] if area == "aoc" else 1.0) - auc)


@dataclass(frozen=True)
class RawCurves:
    """The deletion curves of one (model, map) on ``B`` images, for every deletion, schedule and class.

    Attributes:
        curves: ``(deletion, steps, target) → (probs (B, K + 1), fractions (K + 1,))`` for
            ``steps`` in ``("patches", "pixels")`` (``"patch_fraction"`` is read off the
            ``"patches"`` curve, :meth:`get`).
        correct: ``(B,) bool``, the clean prediction equals the label.
        num_patches: patches per image ``h·w``.
    """

    curves: Mapping[tuple[str, str, str], tuple[np.ndarray, np.ndarray]]
    correct: np.ndarray
    num_patches: int

    def get(self, deletion: str, steps: str, target: str) -> tuple[np.ndarray, np.ndarray]:
        """``(probs, fractions)`` of one schedule; ``patch_fraction`` keeps the columns of the one-patch
        curve at ``n_k = round(k·N / 20)`` removed patches (:func:`~infsa_viz.metrics.perturbation.removed_counts`),
        which is exactly the 20-step curve (same order, same tie-breaking)."""
        from ..metrics.perturbation import removed_counts

        if steps != "patch_fraction":
            return self.curves[deletion, steps, target]
        probs, _ = self.curves[deletion, "patches", target]
        counts = removed_counts(FRACTION_STEPS, self.num_patches)
        return probs[:, counts], counts / self.num_patches


def protocol_mean(raw: RawCurves, choice: ProtocolChoice) -> dict[str, Any]:
    """The MoRF score of ``raw`` under ``choice``: mean over the chosen images with a defined score.

    Returns:
        ``{"mean", "n"}`` (``mean`` ``None`` when no image counts).
    """
    probs, fractions = raw.get(choice.deletion, choice.steps, choice.target)
    scores = curve_scores(probs, fractions, curve=choice.curve, area=choice.area)
    keep = np.isfinite(scores) & (raw.correct if choice.images == "correct" else True)
    n = int(np.sum(keep))
    return {"mean": float(scores[keep].mean()) if n else None, "n": n}


def sensitivity_summary(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Per protocol: each (variant, map)'s mean and sd over seeds, and the paper's two criteria.

    Args:
        record: the protocol-sensitivity record of ``scripts/paper_gap.py`` (``protocol.maps``;
            ``protocol.paper``: the paper's MoRF-AOC per variant; ``choices``: every protocol of
            :func:`protocol_choices`; ``models``: per seed model its ``variant`` and, per map, one
            ``[mean, n]`` per choice).

    Returns:
        One entry per choice: ``values`` (``"<variant>/<map>"`` → :func:`~.verdict.spread` over seeds),
        ``random_softmax_below_paper`` (the softmax models' random map below the paper's softmax
        figure), ``paper_ordering`` (attention maps Linear > pure > softmax), ``both`` and
        ``linear_minus_softmax_attention``.
    """

    paper = record["protocol"]["paper"]
    out = []
    for i, choice in enumerate(record["choices"]):
        values = {}
        for variant in VARIANTS:
            for method in record["protocol"]["maps"]:
                mine = [m["scores"][method][i][0] for m in record["models"] if m["variant"] == variant]
                values[variant, method] = spread(mine, 3)
        attention = [values[v, "attention"]["mean"] for v in ("softmax", "pure_infsa", "linear_infsa")]
        random = values["softmax", "random"]["mean"]
        ordering = None if None in attention else attention[2] > attention[1] > attention[0]
        below = None if random is None else random < paper["softmax"]
        out.append({"choice": choice, "values": {f"{v}/{m}": s for (v, m), s in values.items()},
                    "random_softmax_below_paper": below, "paper_ordering": ordering,
                    "both": bool(below and ordering),
                    "linear_minus_softmax_attention": None if None in attention else round(attention[2] - attention[0], 3)})
    return out
