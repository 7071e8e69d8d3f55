"""What a metric declares besides its score: its figures (:class:`Figure`), its per-image curves
(:class:`Curve`) and its free choices (:class:`Setting`).

These are plain records; :mod:`infsa_viz.metrics.registry` collects them from every registered
:class:`~infsa_viz.metrics.registry.Metric`, and reports, rankings, the CLI and the app read them
there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

__all__ = ["IMAGE_SUBSETS", "Curve", "Figure", "ImageSubset", "Setting"]

#: Which images a figure's row mean counts: every image where it is defined (``"all"``), or only
#: the images of the run's curve selection (``"scored"``: ``--select``, e.g. correctly classified,
#: with a defined MoRF score) — figures divided by the clean probability ``p_0`` use the latter.
ImageSubset = Literal["all", "scored"]
IMAGE_SUBSETS: tuple[str, ...] = get_args(ImageSubset)


@dataclass(frozen=True)
class Figure:
    """One number a metric gives per image (and its row mean).

    Attributes:
        name: the row key (and the per-image key, unless ``record`` differs).
        label: the name people read ("MoRF-AOC").
        higher_is_better: the direction; ``None`` for a descriptive figure (not ranked).
        unit: what one unit is ("% of the area", "share of pixels", "nats", …).
        images: :data:`IMAGE_SUBSETS`: the images the row mean counts.
        percent: a share in [0, 1] that tables and the app show as a percentage.
        ranked: whether it is a criterion of :func:`~infsa_viz.metrics.rank_methods`.
        table: whether it is a column of the evaluation table.
        digits: decimals kept in rows.
        record: the per-image key when it differs from the row key (``pointing_hit`` → ``pointing_game``).
        ceiling: the reference map (a :data:`~infsa_viz.maps.METHODS` name with the role
            ``"ceiling"``) that bounds this figure from above, for the benchmark's headroom.
        description: one line for glossaries and help texts.
        image_format: how one image's value is shown where single images are explained (the app's
            figures table and its exports): a format spec (``".3f"``), or ``"hit"`` for a per-image
            hit (1) or miss (0); ``None`` (default): not shown there.
    """

    name: str
    label: str
    higher_is_better: bool | None
    unit: str
    images: ImageSubset = "all"
    percent: bool = False
    ranked: bool = True
    table: bool = True
    digits: int = 5
    record: str | None = None
    ceiling: str | None = None
    description: str = ""
    image_format: str | None = None

    def __post_init__(self) -> None:
        if self.images not in IMAGE_SUBSETS:
            raise ValueError(f"Figure {self.name!r}: images={self.images!r} must be one of {list(IMAGE_SUBSETS)}")
        if self.ranked and self.higher_is_better is None:
            raise ValueError(f"Figure {self.name!r} is ranked but has no direction (higher_is_better=None)")

    @property
    def key(self) -> str:
        """The per-image key of :class:`~infsa_viz.evaluation.ImageRecord` figures."""
        return self.record or self.name

    @property
    def direction(self) -> str:
        return {True: "higher is better", False: "lower is better", None: "descriptive"}[self.higher_is_better]

    def format_value(self, value: float) -> str:
        """One image's value as :attr:`image_format` shows it (``"n/a"`` where undefined)."""
        if value is None or not math.isfinite(value):
            return "n/a"
        if self.image_format == "hit":
            return "hit" if value else "miss"
        return format(value, self.image_format or "g")


@dataclass(frozen=True)
class Curve:
    """A per-image curve a metric keeps (``ImageRecord.curves[name]``, ``(K,)`` values) and how to draw it.

    Attributes:
        name: the key in the records' curves.
        label: the legend's name for it (``"MoRF"``).
        chart: the chart it is drawn in; the curves of one chart share its axes (their first curve's).
        x: its x values: a key of the metric's protocol (``"fractions"``: known per run) or a fixed grid.
        x_label, y_label: the axes' titles.
        figure: the figure its area gives (shown beside the curve's name), or ``None``.
        dash: drawn dashed (to tell two curves of one model apart).
        percent: whether x and y are shares in [0, 1] (shown as percentages).
        diagonal: draw the chance line ``y = x`` (ROC curves).
        mean: the key of its mean over a row's images in the row's ``curves`` (:meth:`Metric.row_extras`),
            with ``mean_x`` the key of its x values there; ``None``: no mean curve.
    """

    name: str
    label: str
    chart: str
    x: str | tuple[float, ...]
    x_label: str
    y_label: str
    figure: str | None = None
    dash: bool = False
    percent: tuple[bool, bool] = (False, False)
    diagonal: bool = False
    mean: str | None = None
    mean_x: str | None = None


@dataclass(frozen=True)
class Setting:
    """A free choice of a metric's protocol, with its default and bounds (a CLI option ``--name``).

    Bounds are checked before anything runs, so a value that would exhaust memory (e.g. a step
    count) is refused up front with the bound in the message.
    """

    name: str
    default: Any
    kind: type
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] | None = None
    optional: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def check(self, value: Any, *, name: str | None = None) -> Any:
        """``value`` converted to :attr:`kind` and checked; ``ValueError`` naming the setting (as
        ``name``, e.g. its CLI flag) otherwise."""
        if value is None and self.optional:
            return None
        expected = (f"one of {list(self.choices)}" if self.choices else
                    f"{'an integer' if self.kind is int else 'a number' if self.kind is float else self.kind.__name__}"
                    + (f" >= {self.minimum:g}" if self.minimum is not None else "")
                    + (f" and <= {self.maximum:g}" if self.maximum is not None else ""))
        bad = ValueError(f"{name or self.name}={value!r} is invalid; expected {expected}")
        if isinstance(value, bool) or (self.kind is int and not isinstance(value, (int, np.integer))):
            raise bad
        if self.kind is float:
            if not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(float(value)):
                raise bad
            value = float(value)
        elif self.kind is int:
            value = int(value)
        elif not isinstance(value, self.kind):
            raise bad
        if self.choices is not None and value not in self.choices:
            raise bad
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            raise bad
        return value
