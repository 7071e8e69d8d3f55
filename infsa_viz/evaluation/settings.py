"""The evaluation's settings: its own choices, the metrics it runs with theirs, and the map options.

Every metric declares its free choices (:class:`~infsa_viz.metrics.registry.Setting`); the
settings object holds their resolved values beside the run's own (the class the maps explain and
every metric scores, which images the curves count, seeds, chunking) and the map selectors
(layer, head, γ), and stores them with every result (:meth:`EvalSettings.to_dict`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._checks import check_choice, check_float, check_int
from ..maps import parse_head, selector_options
from ..metrics.protocol import SELECTIONS
from ..metrics.registry import METRICS, SETTINGS, RowMetric, check_metric, default_metrics, resolve_settings
from ..targets import Target

__all__ = ["MAP_SELECTORS", "EvalSettings"]

#: The map selectors an evaluation may set for every method that takes them.
MAP_SELECTORS = ("layer", "head", "gamma")


class EvalSettings:
    """The evaluation's free choices (each metric adds its own fixed rules to its protocol).

    Args:
        select: images in the ``"scored"`` figures: ``"correct"`` (correctly classified) or ``"all"``.
        target: the class class-explaining maps explain and every metric scores (the probability
            the removal curves track, the class the evidence interventions measure):
            a :class:`~infsa_viz.targets.Target`, ``"label"`` by default (an image without a label:
            its prediction), ``"predicted"``, ``"top k"``, a class index.
        seed: tie-breaking seed (and random-map seed).
        chunk: images per map call (also bounds memory of dense spectral maps).
        batch_size: perturbed copies per forward pass (does not change the results).
        metrics: the registered metrics to compute (default: :func:`default_metrics`).
        map_options: map selectors (``layer``, ``head``, ``gamma``) applied to every method that
            takes them.
        **settings: the metrics' settings (:data:`~infsa_viz.metrics.registry.SETTINGS`, e.g.
            ``steps=20``, ``subsample=100``); readable as attributes (``settings.steps``).

    Raises:
        ValueError: naming the setting, its value and what was expected.
    """

    __slots__ = ("select", "target", "seed", "chunk", "batch_size", "metrics", "map_options", "values")

    def __init__(self, *, select: str = "correct", target: Any = "label", seed: int = 0,
                 chunk: int = 50, batch_size: int = 512, metrics: Sequence[str] | None = None,
                 map_options: Mapping[str, Any] | None = None, **settings: Any) -> None:
        check_choice("select", select, SELECTIONS)
        check_int("seed", seed, minimum=0)
        check_int("chunk", chunk, minimum=1)
        check_int("batch_size", batch_size, minimum=1)
        names = tuple(default_metrics() if metrics is None else metrics)
        if not names:
            raise ValueError(f"metrics is empty; expected at least one of {list(METRICS)} (None: the defaults)")
        for name in names:
            check_metric(name)
        set_ = object.__setattr__
        set_(self, "select", select)
        set_(self, "target", Target.parse(target, name="target"))
        set_(self, "seed", seed)
        set_(self, "chunk", chunk)
        set_(self, "batch_size", batch_size)
        set_(self, "metrics", tuple(dict.fromkeys(names)))
        set_(self, "map_options", _check_map_options(map_options or {}))
        set_(self, "values", resolve_settings(settings))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"EvalSettings is immutable; build a new one (attempted to set {name!r})")

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "values")
        if name in values:
            return values[name]
        raise AttributeError(f"EvalSettings has no setting {name!r}; settings: {sorted(values)}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EvalSettings) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(repr(sorted(self.to_dict().items(), key=lambda kv: kv[0])))

    def __repr__(self) -> str:
        return f"EvalSettings({', '.join(f'{k}={v!r}' for k, v in self.to_dict().items() if k != 'target_rule')})"

    def replace(self, **changes: Any) -> EvalSettings:
        """A copy with ``changes`` (any argument of the constructor, or a metric setting)."""
        given = {"select": self.select, "target": self.target, "seed": self.seed,
                 "chunk": self.chunk, "batch_size": self.batch_size, "metrics": self.metrics,
                 "map_options": self.map_options, **self.values}
        return EvalSettings(**{**given, **changes})

    def resolved(self) -> dict[str, Any]:
        """What a metric reads: every metric setting and the run's ``select``, ``seed``, ``batch_size``."""
        return {**self.values, "select": self.select, "seed": self.seed,
                "batch_size": self.batch_size}

    def image_metrics(self) -> list[Any]:
        """The selected per-image metrics, in registry order."""
        return [m for name, m in METRICS.items() if name in self.metrics and not isinstance(m, RowMetric)]

    def row_metrics(self) -> list[RowMetric]:
        """The selected per-row metrics (sanity checks), in registry order."""
        return [m for name, m in METRICS.items() if name in self.metrics and isinstance(m, RowMetric)]

    def options_for(self, method: str) -> dict[str, Any]:
        """The map selectors that ``method`` takes."""
        return selector_options(method, strict=False, **self.map_options)

    def to_dict(self) -> dict[str, Any]:
        """Flat JSON-able settings, stored with every result."""
        out: dict[str, Any] = {}
        for name in SETTINGS:  # the metrics' settings, then the run's own
            out[name] = self.values[name]
        out.update({"select": self.select, "target": self.target.to_json(), "seed": self.seed,
                    "chunk": self.chunk, "batch_size": self.batch_size, "metrics": list(self.metrics),
                    "map_options": dict(self.map_options),
                    "target_rule": f"class-explaining maps explain, and every metric scores, {self.target.describe()}"})
        return out


def _check_map_options(options: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(MAP_SELECTORS))
    if unknown:
        raise ValueError(f"map_options {unknown} are not map selectors; expected some of {list(MAP_SELECTORS)}")
    out: dict[str, Any] = {}
    if options.get("layer") is not None:
        layer = options["layer"]
        if isinstance(layer, bool) or not isinstance(layer, int):
            raise ValueError(f"layer={layer!r} is invalid; expected a layer index (negatives count from the end)")
        out["layer"] = layer
    if options.get("head") is not None:
        out["head"] = parse_head(options["head"])
    if options.get("gamma") is not None:
        out["gamma"] = check_float("gamma", options["gamma"], positive=True)
    return out

