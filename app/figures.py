"""The figures the app shows, each declared once: name, label, which way is better, unit, percent.

The app's one home for what a figure is (axis titles, table headers, "higher is better", percent
axes); switch to ``infsa_viz.metrics.registry`` here when it lands.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """A per-image or per-report figure: ``label`` for people, ``higher_is_better`` (``None``:
    neither), ``unit`` (``""`` when it has none) and ``percent`` (a share in [0, 1] shown as %)."""

    name: str
    label: str
    higher_is_better: bool | None = True
    unit: str = ""
    percent: bool = False

    @property
    def better(self) -> str:
        return {True: "higher is better", False: "lower is better", None: ""}[self.higher_is_better]


FIGURES: dict[str, Figure] = {f.name: f for f in (
    Figure("morf_aoc", "MoRF-AOC", unit="% of p₀ × patches removed"),
    Figure("lerf_auc", "LeRF-AUC", unit="% of p₀ × patches removed"),
    Figure("aopc", "AOPC"),
    Figure("box_roc_auc", "box ROC-AUC"),
    Figure("box_pr_auc", "box PR-AUC"),
    Figure("distractor_roc_auc", "distractor ROC-AUC"),
    Figure("pointing_hit", "pointing game", percent=True),
    Figure("pointing_game", "pointing game", percent=True),
    Figure("energy_pointing_game", "energy pointing game", percent=True),
    Figure("probability", "p(predicted)", percent=True),
    Figure("accuracy", "accuracy", percent=True),
    Figure("test_accuracy", "test accuracy", percent=True),
    Figure("deletion_auc", "deletion AUC", higher_is_better=False),
    Figure("insertion_auc", "insertion AUC"),
    Figure("complexity", "complexity", higher_is_better=False),
    Figure("mean_rank", "mean rank", higher_is_better=False),
    Figure("latency_s", "latency", higher_is_better=False, unit="s"),
)}


def figure(name: str) -> Figure:
    """The declaration of ``name`` (a dotted report column reads its last part); an undeclared
    name gets a plain one (its name as label, no direction)."""
    key = name.split(".")[-1]
    return FIGURES.get(key, Figure(key, key.replace("_", " "), higher_is_better=None))


def axis_title(name: str) -> str:
    """``"MoRF-AOC (higher is better)"``: a figure's label with its direction, for an axis."""
    fig = figure(name)
    return fig.label + (f" ({fig.better})" if fig.better else "")
