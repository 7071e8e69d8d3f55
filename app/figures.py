"""The figures the app shows: the metric registry's declarations, and the few figures of models and
reports that are not metrics (probability, accuracy, rank, latency).

Axis titles, table headers, "higher is better" and percent axes all come from here, and every
metric figure comes from :data:`infsa_viz.metrics.registry.FIGURES` (a metric registered by a
plugin shows with its own label and direction without any change here).
"""

from __future__ import annotations

from dataclasses import dataclass

from infsa_viz.metrics.registry import FIGURES as REGISTERED


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


#: Figures of models and reports that no metric declares.
_NOT_METRICS = (
    Figure("probability", "p(predicted)", percent=True),
    Figure("accuracy", "accuracy", percent=True),
    Figure("test_accuracy", "test accuracy", percent=True),
    Figure("mean_rank", "mean rank", higher_is_better=False),
    Figure("latency_s", "latency", higher_is_better=False, unit="s"),
)


def _from_registry() -> dict[str, Figure]:
    out: dict[str, Figure] = {}
    for f in REGISTERED.values():
        mine = Figure(f.name, f.label, f.higher_is_better, f.unit, f.percent)
        out[f.name] = mine
        out[f.key] = mine  # the per-image key where it differs (pointing_hit → the pointing game)
    return out


def figure(name: str) -> Figure:
    """The declaration of ``name`` (a dotted report column reads its last part); an undeclared
    name gets a plain one (its name as label, no direction)."""
    key = name.split(".")[-1]
    known = {**_from_registry(), **{f.name: f for f in _NOT_METRICS}}
    return known.get(key, Figure(key, key.replace("_", " "), higher_is_better=None))


def axis_title(name: str) -> str:
    """``"MoRF-AOC (higher is better)"``: a figure's label with its direction, for an axis."""
    fig = figure(name)
    return fig.label + (f" ({fig.better})" if fig.better else "")
