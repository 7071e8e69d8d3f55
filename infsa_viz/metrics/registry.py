"""The metric registry: every metric the evaluation computes, declared once.

A :class:`Metric` is one class with its name, category, citation, the rule stored with its
results, its settings (:class:`Setting`), the figures it produces (:class:`Figure`: name, label,
direction, unit, which images its row mean counts, its ceiling reference map, how a single image's
value is shown) and the per-image curves it keeps (:class:`Curve`; the three declarations live in
:mod:`~infsa_viz.metrics.declarations`); :func:`register_metric` adds it to :data:`METRICS`. The evaluation engine, the row summaries, the table columns, the
ranking criteria, the CLI's ``--metrics`` and settings options, the README tables and the app's
hints all read these declarations (as Quantus declares a metric once with its name, score
direction and category), so a new metric is one module with its registration:

    >>> @register_metric
    ... class MapPeak(Metric):
    ...     name = "map_peak"
    ...     category = "complexity"
    ...     rule = "the map's largest value"
    ...     figures = (Figure("map_peak", "map peak", higher_is_better=None, unit="map units"),)
    ...     def score(self, ctx):
    ...         return Scores({"map_peak": ctx.maps.flatten(1).amax(1).double().numpy()})
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, get_args

import numpy as np
from torch import Tensor, nn

from ..estimate import Estimate, Workload
from ..forward import ForwardRecord
from .declarations import IMAGE_SUBSETS, Curve, Figure, Setting

__all__ = [
    "CATEGORIES",
    "Curve",
    "FIGURES",
    "IMAGE_SUBSETS",
    "METRICS",
    "SETTINGS",
    "Figure",
    "Metric",
    "RowMetric",
    "RowScoring",
    "Scores",
    "Scoring",
    "Setting",
    "check_metric",
    "criteria",
    "default_metrics",
    "figures_of",
    "image_figures",
    "image_metrics",
    "register_metric",
    "resolve_settings",
]

Category = Literal["faithfulness", "localisation", "evidence", "complexity", "randomisation", "robustness"]
CATEGORIES: tuple[str, ...] = get_args(Category)


class _OnRecord:
    """``model`` and ``images`` of a view that holds a :class:`~infsa_viz.forward.ForwardRecord`."""

    record: ForwardRecord

    @property
    def model(self) -> nn.Module:
        """The model (eval mode)."""
        return self.record.model

    @property
    def images(self) -> Tensor:
        """``(B, C, H, W)`` the prepared inputs."""
        return self.record.inputs


@dataclass(frozen=True, eq=False)
class Scoring(_OnRecord):
    """What a metric sees of one chunk of images (all in model-input space).

    Attributes:
        record: the images' :class:`~infsa_viz.forward.ForwardRecord`: the model, the prepared
            inputs, the clean logits of one forward, the labels and the class explained and scored.
        maps: ``(B, h, w)`` the maps being scored.
        positions: ``(B,)`` each image's index in the whole data set.
        truth: the images' :class:`~infsa_viz.maps.GroundTruth` (target boxes, masks, importance).
        negatives: per image, ``(K_i, 4)`` negative (distractor) boxes, or ``None``.
        negative_labels: per image, the class of each negative box, or ``None``.
        settings: the run's resolved settings (every registered :class:`Setting`, and the
            evaluation's own ``select``, ``seed``, ``batch_size``).
        redraw: ``redraw(rows, classes) -> (len(rows), h, w)``: the same method's maps of the
            images at ``rows`` explaining ``classes`` (the map itself for methods without a class).
    """

    record: ForwardRecord
    maps: Tensor
    positions: np.ndarray
    truth: Any
    negatives: list[np.ndarray] | None
    negative_labels: Sequence[np.ndarray] | None
    settings: Mapping[str, Any]
    redraw: Callable[[np.ndarray, np.ndarray], Tensor]

    @property
    def explained(self) -> np.ndarray:
        """``(B,)`` the class each image is explained and scored for (the record's
        :attr:`~infsa_viz.forward.ForwardRecord.explained`: its label, or the prediction where the label is
        unknown, unless the run's target names another)."""
        return self.record.explained.numpy()

    @property
    def image_size(self) -> tuple[int, int]:
        return (int(self.images.shape[-2]), int(self.images.shape[-1]))

    @property
    def boxes(self) -> list[np.ndarray]:
        return self.truth.boxes

    def __len__(self) -> int:
        return len(self.record)

    def take(self, rows: np.ndarray) -> Scoring:
        """The context of the images at ``rows`` (positions in this chunk)."""
        rows = np.asarray(rows, dtype=np.int64)
        pick = lambda values: None if values is None else [values[i] for i in rows]  # noqa: E731
        base = self.redraw
        return Scoring(record=self.record.take(rows), maps=self.maps[rows], positions=self.positions[rows],
                       truth=self.truth.subset(rows), negatives=pick(self.negatives),
                       negative_labels=pick(self.negative_labels), settings=self.settings,
                       redraw=lambda r, c: base(rows[np.asarray(r, dtype=np.int64)], c))


@dataclass(frozen=True, eq=False)
class RowScoring(_OnRecord):
    """What a row metric sees of one (model, method): the first images of the run, as a chunk's metrics
    see theirs.

    Attributes:
        record: the images' :class:`~infsa_viz.forward.ForwardRecord` (the trained model's clean forward,
            the class explained: the run's target); taken from the first chunk's record when it holds them.
        maps: ``(B, h, w)`` the method's maps of the trained model on these images (the chunk's).
        method: the map method's registry name.
        options: the map options the run used.
        settings: the run's resolved settings.
        maps_of: ``maps_of(model, classes) -> (B, h, w)``: the method's maps of the same images for another
            model (a randomised copy) or other classes (``classes`` ``(B,)``, ``None`` for a method that
            explains no class); the trained model's maps of other classes read :attr:`record`.
        classes: ``(B,)`` the classes the maps explain (``record.explained``) for a method that explains a
            class; ``None`` for one that does not.
    """

    record: ForwardRecord
    maps: Tensor
    method: str
    options: Mapping[str, Any]
    settings: Mapping[str, Any]
    maps_of: Callable[[nn.Module, Tensor | None], Tensor]
    classes: Tensor | None = None

    def __len__(self) -> int:
        return len(self.record)


@dataclass
class Scores:
    """A metric's result on one chunk.

    Attributes:
        values: figure key → ``(B,) float64`` per image (``nan`` where not measured).
        protocol: the resolved rules, stored with the row (JSON-able).
        curves: name → ``(B, K)`` per-image curves kept in the records (e.g. MoRF probabilities).
    """

    values: dict[str, np.ndarray]
    protocol: dict[str, Any] = field(default_factory=dict)
    curves: dict[str, np.ndarray] = field(default_factory=dict)


class Metric(ABC):
    """A per-image metric: class attributes declare it, :meth:`score` computes it on a chunk."""

    #: Registry key (also the key of its protocol in each row).
    name: ClassVar[str]
    category: ClassVar[Category]
    #: The paper or library the definition comes from.
    citation: ClassVar[str] = ""
    #: The rule, in one line, stored with every result.
    rule: ClassVar[str]
    figures: ClassVar[tuple[Figure, ...]]
    #: The per-image curves it keeps, and how to draw them.
    curves: ClassVar[tuple[Curve, ...]] = ()
    #: Its free choices (shared by name with other metrics that declare the same setting).
    settings: ClassVar[tuple[Setting, ...]] = ()
    #: The name of an ``int`` setting: the metric runs on the images whose index is below it
    #: (``None``: every image).
    subset: ClassVar[str | None] = None
    #: The row key counting the images with a value of its first figure (``None``: no count).
    count: ClassVar[str | None] = None
    #: Whether it asks the map method for maps of other classes (``Scoring.redraw``); the
    #: meta-evaluation, which degrades fixed maps, cannot run such a metric.
    redraws: ClassVar[bool] = False
    #: Whether ``infsa-viz evaluate`` computes it unless ``--metrics`` says otherwise.
    default: ClassVar[bool] = True
    #: Work per image, in words (:meth:`estimate` states it as numbers).
    cost: ClassVar[str] = ""
    #: The toolkit's version of its definition: raise it whenever a change moves its figures, so
    #: journalled results of another version (``evaluate --journal``) are recomputed, not reused.
    version: ClassVar[int] = 1
    #: What it needs of the data beyond images and labels: a :class:`~infsa_viz.data.LabelledImages`
    #: field → what that is. A run that names the metric on data without it is refused
    #: (:meth:`missing_data`); where it is only a default, its figures are ``nan`` with the reason.
    requires: ClassVar[dict[str, str]] = {}

    def missing_data(self, data: Any) -> str | None:
        """Why this metric cannot be computed on ``data`` (what it needs and the data lacks), or ``None``."""
        return lacking(self.name, "metric", self.requires, data)

    def estimate(self, work: Workload, settings: Mapping[str, Any]) -> Estimate:
        """What scoring one chunk of ``work.batch`` images under the resolved ``settings`` holds at its peak
        and how many model passes per image it makes (:mod:`infsa_viz.estimate`); checked before an
        evaluation starts. Default: the maps upsampled to the input's pixels, no model pass."""
        return Estimate(16.0 * work.batch * work.pixels, "the maps upsampled to the input's pixels", forwards=0)

    @abstractmethod
    def score(self, ctx: Scoring) -> Scores:
        """Per-image values of every figure on ``ctx``'s images."""

    def row_extras(self, records: Sequence[Any], scored: np.ndarray, protocol: Mapping[str, Any]) -> dict[str, Any]:
        """Row entries beyond the figures' means (counts, mean curves under ``"curves"``), from the
        (model, method)'s image records, the ``"scored"`` image mask and this metric's row protocol."""
        return {}

    def describe(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The protocol record of this metric under ``settings`` (stored with each row)."""
        out: dict[str, Any] = {"category": self.category, "rule": self.rule}
        if self.citation:
            out["reference"] = self.citation
        if self.subset:
            out["images"] = f"index < {settings[self.subset]}"
        return out


def lacking(name: str, kind: str, requires: Mapping[str, str], data: Any) -> str | None:
    """``"{kind} {name!r} needs …, which the data lacks"`` for the fields of ``requires`` that ``data``
    does not hold (``None``), or ``None`` when it holds them all."""
    missing = [what for field_name, what in requires.items() if getattr(data, field_name, None) is None]
    return None if not missing else f"{kind} {name!r} needs {' and '.join(missing)}, which the data lacks"


class RowMetric(Metric):
    """A metric computed once per (model, method) on the first images, not per chunk (sanity checks)."""

    def score(self, ctx: Scoring) -> Scores:  # pragma: no cover - row metrics are scored by score_row
        raise NotImplementedError(f"{self.name} is a row metric: call score_row")

    @abstractmethod
    def score_row(self, row: RowScoring) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(row figures, full report)`` of one (model, method) on the images of ``row``
        (:class:`RowScoring`: their forward record, the trained maps, ``maps_of`` for other models and classes)."""


#: Metric name → metric; filled by :func:`register_metric`. The one list of metrics.
METRICS: dict[str, Metric] = {}
#: Figure name → figure, over every registered metric (derived; names are unique).
FIGURES: dict[str, Figure] = {}
#: Setting name → setting, over every registered metric (derived; shared names agree).
SETTINGS: dict[str, Setting] = {}
_OWNER: dict[str, str] = {}


def register_metric(cls: type[Metric]) -> type[Metric]:
    """Class decorator: add an instance of ``cls`` to :data:`METRICS` (and its figures and settings)."""
    if cls.name in METRICS:
        raise ValueError(f"metric {cls.name!r} is registered twice")
    if cls.category not in CATEGORIES:
        raise ValueError(f"{cls.__name__}.category={cls.category!r} must be one of {list(CATEGORIES)}")
    for figure in cls.figures:
        if figure.name in FIGURES or figure.key in _OWNER:
            raise ValueError(f"figure {figure.name!r} of metric {cls.name!r} is already declared by "
                             f"{_OWNER.get(figure.key, _OWNER.get(figure.name))!r}")
    for setting in cls.settings:
        known = SETTINGS.get(setting.name)
        if known is not None and known != setting:
            raise ValueError(f"setting {setting.name!r} of metric {cls.name!r} differs from the one already declared")
    if cls.subset is not None and cls.subset not in {s.name for s in cls.settings}:
        raise ValueError(f"{cls.__name__}.subset={cls.subset!r} must name one of its settings")
    METRICS[cls.name] = cls()
    for figure in cls.figures:
        FIGURES[figure.name] = figure
        _OWNER[figure.key] = _OWNER[figure.name] = cls.name
    for setting in cls.settings:
        SETTINGS.setdefault(setting.name, setting)
    return cls


def check_metric(name: str) -> Metric:
    """The registered metric ``name``; ``ValueError`` naming the choices otherwise."""
    if name not in METRICS:
        raise ValueError(f"metric={name!r} is not a known metric; expected one of {list(METRICS)}")
    return METRICS[name]


def default_metrics() -> list[str]:
    """The metrics an evaluation computes by default."""
    return [name for name, metric in METRICS.items() if metric.default]


def figures_of(metrics: Sequence[str] | None = None) -> list[Figure]:
    """The figures of ``metrics`` (default: every registered metric), in registry order."""
    names = list(METRICS) if metrics is None else list(metrics)
    return [figure for name in names for figure in check_metric(name).figures]


def criteria(metrics: Sequence[str] | None = None) -> dict[str, bool]:
    """Ranking criteria: figure name → higher is better, for the ranked figures of ``metrics``."""
    return {f.name: bool(f.higher_is_better) for f in figures_of(metrics) if f.ranked}


def image_metrics() -> list[str]:
    """The per-image metrics whose figures or curves are shown where single images are explained
    (a figure with :attr:`Figure.image_format`, or a :class:`Curve`), in registry order."""
    return [name for name, m in METRICS.items() if not isinstance(m, RowMetric)
            and (m.curves or any(f.image_format for f in m.figures))]


def image_figures(metrics: Sequence[str] | None = None) -> list[Figure]:
    """The figures of ``metrics`` (default :func:`image_metrics`) shown for single images, in order."""
    return [f for f in figures_of(image_metrics() if metrics is None else metrics) if f.image_format]


def resolve_settings(given: Mapping[str, Any]) -> dict[str, Any]:
    """Every registered setting: its default, updated by ``given`` (checked); ``ValueError`` for an
    unknown name or a value out of bounds."""
    unknown = sorted(set(given) - set(SETTINGS))
    if unknown:
        raise ValueError(f"settings {unknown} are not settings of any metric; expected some of {sorted(SETTINGS)}")
    return {name: setting.check(given.get(name, setting.default)) for name, setting in SETTINGS.items()}
