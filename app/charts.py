"""Plotly charts of the Curves & reports page: legends under the plot (never squeezing it), axes
titled for people, shares as percentages, the better direction stated (each column's
:class:`~infsa_viz.metrics.registry.Figure`, :func:`infsa_viz.reports.figure`)."""

from __future__ import annotations

import json
from typing import Any

import warmup
from infsa_viz.reports import axis_title, figure

warmup.settled()  # before plotly reads sys.modules["pandas"]
import plotly.graph_objects as go  # noqa: E402
from plotly.colors import qualitative  # noqa: E402

#: Height of the plot area (px); the legend adds its own rows under it.
HEIGHT = 300
#: Legends sit at the bottom of the figure, horizontally, in a margin of their own: a long legend
#: adds height instead of taking the plot's width, and never covers the x axis's title.
LEGEND = {"orientation": "h", "yref": "container", "yanchor": "bottom", "y": 0.0, "xanchor": "left", "x": 0.0}


def colour(i: int) -> str:
    return qualitative.Plotly[i % len(qualitative.Plotly)]


def layout(fig: go.Figure, *, entries: int, **kwargs: Any) -> go.Figure:
    """The page's layout: title, axes, legend under the plot (a line per two entries, the narrowest
    case, under the x axis's title)."""
    legend = 22 * (-(-entries // 2))
    fig.update_layout(height=HEIGHT + legend, margin={"l": 10, "r": 10, "t": 40, "b": 50 + legend}, legend=LEGEND,
                      **kwargs)
    return fig


def ci(row: dict, y: str) -> tuple[float, float] | None:
    """The confidence interval ``<y>_ci`` of a table row (JSON ``[lo, hi]`` or dotted ``lo``/``hi``)."""
    value = row.get(f"{y}_ci")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return float(value[0]), float(value[1])
    for lo, hi in (("lo", "hi"), ("low", "high"), ("lower", "upper")):
        if isinstance(row.get(f"{y}_ci.{lo}"), (int, float)) and isinstance(row.get(f"{y}_ci.{hi}"), (int, float)):
            return float(row[f"{y}_ci.{lo}"]), float(row[f"{y}_ci.{hi}"])
    return None


def bars(rows: list[dict], x: str, y: str, group: str) -> go.Figure:
    """Grouped bars of ``y`` by ``x``, one colour per ``group``, with 95 % CI error bars where the
    report has ``<y>_ci``; axes titled, shares as percentages, the better direction stated."""
    fig = go.Figure()
    groups: dict[str, list[dict]] = {}
    for row in rows:
        if isinstance(row.get(y), (int, float)):
            groups.setdefault(str(row.get(group)), []).append(row)
    with_ci = False
    for i, (name, members) in enumerate(groups.items()):
        cis = [ci(r, y) for r in members]
        error = None
        if any(c is not None for c in cis):
            with_ci = True
            error = {"type": "data", "symmetric": False,
                     "array": [0 if c is None else max(0.0, c[1] - r[y]) for r, c in zip(members, cis)],
                     "arrayminus": [0 if c is None else max(0.0, r[y] - c[0]) for r, c in zip(members, cis)]}
        fig.add_bar(name=name, x=[str(r.get(x)) for r in members], y=[r[y] for r in members], error_y=error,
                    marker_color=colour(i))
    fig_y = figure(y)
    return layout(fig, entries=len(groups), barmode="group",
                  title=f"{fig_y.label} by {x}" + (" (error bars: 95 % CI)" if with_ci else ""),
                  xaxis_title=x, yaxis_title=axis_title(y), legend_title_text=group,
                  yaxis_tickformat=".0%" if fig_y.percent else None)


def lines(series: dict[str, tuple[list, list]], *, title: str, x: str, y: str, log: bool = False) -> go.Figure:
    """One line per series (``{name: (xs, ys)}``)."""
    fig = go.Figure([go.Scatter(x=xs, y=ys, mode="lines+markers", name=name) for name, (xs, ys) in series.items()])
    return layout(fig, entries=len(series), title=title, xaxis_title=x, yaxis_title=y,
                  xaxis_type="log" if log else None, yaxis_type="log" if log else None)
