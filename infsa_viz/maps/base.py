"""The map pipeline's core: one base class, one result type, one registry, one verb.

Every explanation method is a :class:`MapMethod` subclass registered in :data:`METHODS` by
:func:`register`; the CLI, the app, evaluation and the benchmarks read that registry and call
:func:`attribute` (or ``METHODS[name].attribute``), so a method name is written once, on its
class. A map is a per-patch importance on the ViT grid ``(B, h, w)``, higher = more important.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, get_args

import numpy as np
import torch
from torch import Tensor, nn

from ..estimate import Estimate, Workload, check_estimate
from ..forward import ForwardRecord, check_classes
from ..model.capture import AttentionRecord
from ..plugins import PluginError, plugin_call, plugin_of
from ..targets import Target

__all__ = [
    "FAMILIES",
    "METHODS",
    "ROLES",
    "GroundTruth",
    "MapMethod",
    "MapResult",
    "Validity",
    "attribute",
    "check_method",
    "parse_head",
    "register",
    "selector_options",
    "tokens_to_grid",
]

Family = Literal["attention", "spectral", "gradient", "baseline", "reference"]
FAMILIES: tuple[str, ...] = get_args(Family)
#: What a map is for: an ``"explanation"`` of the model, or a reference row of an evaluation — the
#: ``"floor"`` of every metric (the random map), a ``"model_ignorant"`` control that reads only the
#: image (an edge map, the intensity: a method that does not beat it shows nothing about the model;
#: XAI-TRIS, Clark et al. 2024) or a ``"ceiling"`` (an oracle built from the truth).
Role = Literal["explanation", "floor", "model_ignorant", "ceiling"]
ROLES: tuple[str, ...] = get_args(Role)


@dataclass(frozen=True, eq=False)
class GroundTruth:
    """What an evaluation knows about its images beyond the pixels, in model-input pixels.

    Reference maps (:attr:`MapMethod.needs_truth`) and the evidence metrics read it; explanation
    methods never do.

    Attributes:
        boxes: per image, ``(K_i, 4)`` target boxes ``(x0, y0, x1, y1)``, ``x1``/``y1`` exclusive.
        objects: the scene objects' names (``target``, ``distractor_1`` …, ``background``), or ``None``.
        masks: ``(B, O, H, W)`` bool: each object's visible pixels, or ``None`` (no scenes).
        importance: ``(B, O)``: the model's importance of each object, the drop of the explained
            class's probability when that object alone is removed
            (:func:`~infsa_viz.evaluation.interventions.object_importance`), or ``None``.
        scenes: the images' :class:`~infsa_viz.data.Scene` objects (re-renderable with any objects
            changed, for metrics that intervene themselves), or ``None``.
    """

    boxes: list[np.ndarray]
    objects: tuple[str, ...] | None = None
    masks: np.ndarray | None = None
    importance: np.ndarray | None = None
    scenes: list[Any] | None = None

    @property
    def has_evidence(self) -> bool:
        return self.masks is not None and self.importance is not None

    def subset(self, rows: Any) -> GroundTruth:
        """The truth of the images at positions ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        return GroundTruth(boxes=[self.boxes[i] for i in rows], objects=self.objects,
                           masks=None if self.masks is None else self.masks[rows],
                           importance=None if self.importance is None else self.importance[rows],
                           scenes=None if self.scenes is None else [self.scenes[i] for i in rows])


@dataclass(frozen=True)
class Validity:
    """Where the absorbing-Markov-chain reading of a map's graph holds.

    ``(I − γA)⁻¹`` counts expected visits of a walk that moves ``i → j`` with probability
    ``γ·A_ij`` only where every row has ``γ·Σ_j A_ij ≤ 1`` (Kemeny & Snell 1960); elsewhere it is
    still a well-defined series but not a visit count. Recorded per image and per layer the map
    reads (the graph it used: the head mean or the chosen head).

    Attributes:
        layers: the layer indices, in the order of the columns below.
        row_share: ``(B, L)`` share of rows (tokens) of the graph the map used (the head mean,
            or one head) with ``γ·Σ_j A_ij ≤ 1``.
        head_row_share: ``(B, L)`` share of (head, row) pairs with ``γ_h·Σ_j A^h_ij ≤ 1``, each
            head's own graph with its own ``γ`` (equal to ``row_share`` for a one-head map).
        max_row_mass: ``(B, L)`` the largest ``γ·Σ_j A_ij`` of the graph the map used.
        gamma: ``(B, L)`` the discount used.
    """

    layers: list[int]
    row_share: Tensor
    head_row_share: Tensor
    max_row_mass: Tensor
    gamma: Tensor

    @property
    def holds(self) -> Tensor:
        """``(B,) bool``: the reading holds on every row of every layer."""
        return (self.row_share == 1).all(dim=-1)

    def for_image(self, index: int) -> dict[str, Any]:
        """JSON-able record of image ``index``."""
        return {
            "reading": "absorbing chain: gamma * sum_j A_ij <= 1 for every row",
            "holds": bool(self.holds[index]),
            "layers": list(self.layers),
            "row_share": [round(float(v), 6) for v in self.row_share[index]],
            "head_row_share": [round(float(v), 6) for v in self.head_row_share[index]],
            "max_row_mass": [round(float(v), 6) for v in self.max_row_mass[index]],
            "gamma": [round(float(v), 6) for v in self.gamma[index]],
        }


@dataclass(frozen=True, eq=False)
class MapResult:
    """Maps of one method for a batch of images, with what they are.

    Attributes:
        maps: ``(B, h, w)`` float32 per-patch importance.
        method: the registry name.
        options: the resolved options (defaults filled in).
        target: ``(B,)`` class each map explains, for methods that explain a class; else ``None``.
        validity: where the absorbing-chain reading holds, for maps that rely on it; else ``None``.
        metadata: JSON-able description of what was computed (matrix, side, γ, solver, …).
    """

    maps: Tensor
    method: str
    options: dict[str, Any]
    target: Tensor | None = None
    validity: Validity | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class MapMethod(ABC):
    """An explanation method: class attributes describe it, :meth:`attribute` computes it.

    Subclasses set the class attributes and implement :meth:`_compute`; :func:`register` adds
    an instance to :data:`METHODS`.
    """

    #: Registry key.
    name: ClassVar[str]
    #: ``"attention"``, ``"spectral"``, ``"gradient"``, ``"baseline"`` or ``"reference"``.
    family: ClassVar[Family]
    #: ``"explanation"`` (default), or ``"floor"`` / ``"ceiling"`` for the reference rows of an
    #: evaluation (``infsa-viz evaluate --references`` adds every method whose role is not an explanation).
    role: ClassVar[Role] = "explanation"
    #: Whether it reads the images' :class:`GroundTruth` (an oracle) rather than only the model.
    needs_truth: ClassVar[bool] = False
    #: For reference maps: whether ``--references`` adds it (an expensive oracle is run on a stated
    #: subset by naming it in ``--methods`` instead).
    with_references: ClassVar[bool] = True
    #: Options an evaluation sets from its own settings of the same name (an oracle that must remove
    #: patches exactly as the run's MoRF does: ``steps``, ``baseline``, ``seed``, ``batch_size``).
    from_settings: ClassVar[tuple[str, ...]] = ()
    #: One line for help texts and the app.
    description: ClassVar[str]
    #: Where the method comes from (paper, library).
    reference: ClassVar[str] = ""
    #: The options it accepts, with their defaults.
    defaults: ClassVar[dict[str, Any]] = {}
    #: Whether it reads one layer (the ``layer`` and ``head`` selectors apply).
    per_layer: ClassVar[bool] = False
    #: Whether it explains a class (``target`` applies).
    explains_class: ClassVar[bool] = False
    #: Whether its values can be negative (signed attributions).
    signed: ClassVar[bool] = False
    #: Whether the published evaluation runs it by default.
    in_default_report: ClassVar[bool] = True
    #: Whether its ``seed`` option draws the map (the evaluation then seeds each chunk of images
    #: from its own seed and the chunk's first index, so reruns reproduce it).
    seeded: ClassVar[bool] = False
    #: Work per batch of images, in words (:meth:`estimate` states it as numbers).
    cost: ClassVar[str] = ""
    #: The toolkit's version of its definition: raise it whenever a change moves its maps, so
    #: journalled results of another version (``evaluate --journal``) are recomputed, not reused.
    version: ClassVar[int] = 1
    #: What it needs of an evaluation's data beyond images and labels: a
    #: :class:`~infsa_viz.data.LabelledImages` field → what that is (:meth:`missing_data`).
    requires: ClassVar[dict[str, str]] = {}

    def missing_data(self, data: Any) -> str | None:
        """Why this method cannot run on ``data`` (what it needs and the data lacks), or ``None``."""
        from ..metrics.registry import lacking

        return lacking(self.name, "method", self.requires, data)

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        """What one call on ``work`` (:class:`~infsa_viz.estimate.Workload`) with the resolved ``options``
        holds at its peak and how many model passes per image it makes; :meth:`attribute` refuses a
        call that cannot fit before computing anything. Default: one forward and every layer's captured
        ``q`` and ``k``; methods that hold more state it."""
        return Estimate(work.forward() + work.capture(), "one forward and every layer's q, k")
    #: Whether it reads the attention records of the forward (:attr:`ForwardRecord.attention
    #: <infsa_viz.forward.ForwardRecord.attention>`): a record built for it captures attention in its
    #: one forward.
    reads_attention: ClassVar[bool] = False
    #: Whether it rebuilds a layer's operator from the layer's class (its matrix, token graph or LRP rule)
    #: rather than reading the module's output: such a method is refused, with the reason, on a layer whose
    #: :func:`operator fingerprint <infsa_viz.model.fingerprint.fingerprint>` is not the variant its class
    #: declares (per-layer methods check their ``layer``, the others every layer).
    reads_operator: ClassVar[bool] = False

    def resolve(self, options: dict[str, Any]) -> dict[str, Any]:
        """Defaults updated by ``options``; ``ValueError`` for an option the method does not take."""
        unknown = sorted(set(options) - set(self.defaults))
        if unknown:
            raise ValueError(
                f"options {unknown} do not apply to method {self.name!r}; it accepts {sorted(self.defaults)}"
            )
        return {**self.defaults, **options}

    def attribute(self, model: nn.Module | ForwardRecord, images: Tensor | None = None, *,
                  target: Target | str | int | Tensor | None = None, labels: Any = None,
                  truth: GroundTruth | None = None, **options: Any) -> MapResult:
        """Maps ``(B, h, w)`` of this method for a forward record, or for ``images`` of ``model``.

        Args:
            model: a :class:`~infsa_viz.forward.ForwardRecord` (its images, labels and target), or a
                :class:`~infsa_viz.model.vit.VisionTransformer` (any variant) with ``images``.
            images: ``(B, C, H, W)`` preprocessed images (:func:`infsa_viz.preprocess.preprocess`),
                with a model only.
            target: with a model only: the class to explain for methods with ``explains_class``:
                ``None`` (default, the model's prediction), a :class:`~infsa_viz.targets.Target` or
                anything :meth:`Target.parse <infsa_viz.targets.Target.parse>` reads (``"label"``,
                ``"top 2"``, a class index or name), or ``(B,)`` class indices. Methods that do not
                explain a class refuse a target.
            labels: with a model only: ``(B,)`` ground-truth labels, for ``target="label"``.
            truth: the images' :class:`GroundTruth`, for methods with :attr:`needs_truth`.
            **options: see :attr:`defaults`; unknown options are refused.

        Raises:
            ValueError: unknown option, bad option value, a target for a method without one, a
                missing ground truth, a call whose :meth:`estimate` is over the memory available or
                the method's bound, a method that rebuilds a layer's operator from its class on a layer
                that computes something else (:attr:`reads_operator`), or maps that are not finite (the
                images are named).
        """
        resolved = self.resolve(options)
        record = self._record(model, images, target, labels)
        B = len(record)
        if self.needs_truth and (truth is None or len(truth.boxes) != B):
            raise ValueError(f"method {self.name!r} is a reference map built from the images' ground truth; "
                             f"pass truth=GroundTruth(...) with one entry per image ({B})")
        work = Workload.of(record.model, record.inputs)
        if work is not None:  # before anything is allocated (the record's forward is lazy)
            estimate = self.estimate(work, resolved) if plugin_of(self) is None else \
                plugin_call(plugin_of(self), f"map method {self.name!r}, its estimate", self.estimate, work, resolved)
            check_estimate(estimate, work, subject=f"method {self.name!r}", fewer="fewer images per call")
        if self.reads_operator:
            from ..model.fingerprint import require_graph

            layer = resolved.get("layer") if self.per_layer else None
            require_graph(record.model, None if layer is None else [layer], what=f"method {self.name!r}")
        classes = record.explained if self.explains_class else None
        args = (record, resolved, truth) if self.needs_truth else (record, resolved)
        plugin = plugin_of(self)
        found = self._compute(*args) if plugin is None else \
            plugin_call(plugin, f"map method {self.name!r}", self._compute, *args)
        maps, metadata, validity = self._check_output(found, record, plugin)
        finite = torch.isfinite(maps.detach()).flatten(1).all(-1)  # (B,)
        if not bool(finite.all()):
            bad = (~finite).nonzero().flatten().tolist()
            raise ValueError(f"{getattr(record.model, 'origin', 'model')}: method {self.name!r} gave NaN/Inf maps "
                             f"for images {bad[:8]} (options {resolved}); the model or its inputs are out of range")
        return MapResult(maps=maps.detach().float(), method=self.name, options=resolved, target=classes,
                         validity=validity, metadata=metadata)

    def _check_output(self, found: Any, record: ForwardRecord,
                      plugin: str | None) -> tuple[Tensor, dict[str, Any], Validity | None]:
        """``_compute``'s result checked before any use: a ``(maps, metadata, validity)`` triple whose maps
        are a real ``(B, h, w)`` tensor on the model's patch grid (``h, w`` = the inputs' sides over
        ``patch_size``, where the model has one).

        Raises:
            ValueError (a :class:`~infsa_viz.plugins.PluginError` for a plugin's method): naming the method
                and what it returned instead.
        """
        def refuse(why: str) -> ValueError:
            text = f"map method {self.name!r} returned {why}"
            return PluginError(f"plugin {plugin!r} ({text})") if plugin else ValueError(text)

        if not (isinstance(found, tuple) and len(found) == 3):
            raise refuse(f"{type(found).__name__}; expected a (maps, metadata, validity) tuple")
        maps, metadata, validity = found
        if not isinstance(maps, Tensor) or maps.is_complex() or maps.dtype == torch.bool:
            kind = type(maps).__name__ if not isinstance(maps, Tensor) else f"a {maps.dtype} tensor"
            raise refuse(f"maps of type {kind}; expected a real floating-point (B, h, w) tensor")
        B = len(record)
        patch = getattr(record.model, "patch_size", None)
        H, W = record.inputs.shape[-2:]
        grid = (H // patch, W // patch) if isinstance(patch, int) and patch > 0 else None
        if maps.dim() != 3 or maps.shape[0] != B or (grid is not None and tuple(maps.shape[1:]) != grid):
            expected = f"({B}, {grid[0]}, {grid[1]})" if grid else f"({B}, h, w)"
            raise refuse(f"maps of shape {tuple(maps.shape)}; expected {expected}: one map per image on the "
                         "model's patch grid")
        if not isinstance(metadata, dict):
            raise refuse(f"metadata of type {type(metadata).__name__}; expected a dict")
        if validity is not None and not isinstance(validity, Validity):
            raise refuse(f"validity of type {type(validity).__name__}; expected a Validity or None")
        return maps.float() if not maps.is_floating_point() else maps, metadata, validity

    def _record(self, model: nn.Module | ForwardRecord, images: Tensor | None, target: Any,
                labels: Any) -> ForwardRecord:
        """The record to read: ``model`` itself, or one built for ``images`` (the target checked)."""
        if isinstance(model, ForwardRecord):
            if images is not None or target is not None or labels is not None:
                raise ValueError("a ForwardRecord carries its images, labels and target; pass none of them "
                                 "(record.explaining(classes) explains other classes)")
            return model
        if not isinstance(images, Tensor):
            raise ValueError(f"images has type {type(images).__name__}; expected a (B, C, H, W) tensor with a "
                             "model (or pass a ForwardRecord alone)")
        if target is not None and not self.explains_class:
            raise ValueError(f"method {self.name!r} does not explain a class; target={target!r} does not apply")
        config = getattr(model, "config", None)
        if isinstance(target, Tensor):
            classes = check_classes(target, images.shape[0], getattr(config, "num_classes", None))
            return ForwardRecord(model, images, labels=labels, capture=self.reads_attention, classes=classes)
        parsed = Target.parse(target, class_names=getattr(config, "class_names", None))
        if parsed.needs_label and self.explains_class:  # asked for the labels: every image needs one
            parsed.resolve(torch.zeros(images.shape[0], getattr(config, "num_classes", None) or 1), labels)
        return ForwardRecord(model, images, labels=labels, target=parsed, capture=self.reads_attention)

    @abstractmethod
    def _compute(self, forward: ForwardRecord, options: dict[str, Any],
                 *truth: GroundTruth) -> tuple[Tensor, dict[str, Any], Validity | None]:
        """``(maps (B, h, w), metadata, validity)`` for the images of the record ``forward`` and
        resolved ``options`` (and, for methods with :attr:`needs_truth`, the images'
        :class:`GroundTruth`). Methods that explain a class explain ``forward.explained``; methods
        that read attention read ``forward.attention`` (and set :attr:`reads_attention`)."""


#: Method name → the method. Filled by :func:`register`; the one list of methods.
METHODS: dict[str, MapMethod] = {}


def register(cls: type[MapMethod]) -> type[MapMethod]:
    """Class decorator: add an instance of ``cls`` to :data:`METHODS` under ``cls.name``."""
    if cls.name in METHODS:
        raise ValueError(f"map method {cls.name!r} is registered twice")
    if cls.family not in FAMILIES:
        raise ValueError(f"{cls.__name__}.family={cls.family!r} must be one of {list(FAMILIES)}")
    if cls.role not in ROLES:
        raise ValueError(f"{cls.__name__}.role={cls.role!r} must be one of {list(ROLES)}")
    METHODS[cls.name] = cls()
    return cls


def check_method(method: str) -> MapMethod:
    """The registered method named ``method``; ``ValueError`` naming the choices otherwise."""
    if method not in METHODS:
        raise ValueError(f"method={method!r} is not a known map method; expected one of {list(METHODS)}")
    return METHODS[method]


def attribute(model: nn.Module | ForwardRecord, images: Tensor | str, method: str | None = None, *,
              target: Target | str | int | Tensor | None = None, labels: Any = None, truth: GroundTruth | None = None,
              **options: Any) -> MapResult:
    """Maps of ``method`` for each image: ``attribute(record, method)`` reads a
    :class:`~infsa_viz.forward.ForwardRecord`; ``attribute(model, images, method)`` builds one.

    Example:
        >>> result = attribute(model, images, "visits")      # result.maps: (B, h, w)
        >>> attribute(model, images, "attention", layer=0, head=1).maps
        >>> record = forward_record(model, images, labels=labels, target="label")
        >>> attribute(record, "saliency").maps               # the record's images and target
    """
    if isinstance(model, ForwardRecord):
        if method is not None or not isinstance(images, str):
            raise ValueError("attribute(record, method): a ForwardRecord carries its images; pass the method second")
        return check_method(images).attribute(model, target=target, labels=labels, truth=truth, **options)
    if not isinstance(method, str):
        raise ValueError(f"method={method!r} is invalid; expected attribute(model, images, method) with a method name")
    return check_method(method).attribute(model, images, target=target, labels=labels, truth=truth, **options)


def parse_head(value: Any) -> str | int:
    """A head selector: ``"mean"`` (or ``"max"``/``"min"`` where a method fuses heads) or an index."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    if text in ("mean", "max", "min"):
        return text
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"head={value!r} must be 'mean' (or 'max'/'min' where heads are fused) or an integer") from None


def selector_options(method: str, *, layer: int | None = None, head: Any = None, gamma: float | None = None,
                     strict: bool = True) -> dict[str, Any]:
    """Options of ``method`` from the layer / head / γ selectors of the CLI and the app.

    ``None`` means "not chosen" (the method's default). With ``strict`` (the CLI) a selector the
    method does not take is an error; without it (the app, whose selectors serve several pages)
    it is left out.
    """
    spec = check_method(method)
    given = {"layer": layer, "head": None if head is None else parse_head(head), "gamma": gamma}
    options = {}
    for key, value in given.items():
        if value is None:
            continue
        if key not in spec.defaults:
            if strict:
                raise ValueError(f"--{key} does not apply to method {method!r}; it accepts {sorted(spec.defaults)}")
            continue
        options[key] = value
    return options


def tokens_to_grid(values: Tensor, record: AttentionRecord) -> Tensor:
    """Per-token values ``(B, N)`` → patch-grid map ``(B, h, w)`` (prefix tokens dropped).

    Without a recorded grid (a model that does not expose ``patch_size``) the patches must form
    a square.
    """
    patches = values[:, record.num_prefix_tokens:]  # (B, h·w)
    grid = record.grid
    if grid is None:
        side = math.isqrt(patches.shape[-1])
        if side * side != patches.shape[-1]:
            raise ValueError(f"the model does not expose patch_size and {patches.shape[-1]} patches are not a square")
        grid = (side, side)
    return patches.reshape(values.shape[0], *grid)


def select_layer(records: list[AttentionRecord], layer: int) -> AttentionRecord:
    """``records[layer]`` (negatives count from the end); ``ValueError`` when out of range."""
    if isinstance(layer, bool) or not isinstance(layer, int) or not -len(records) <= layer < len(records):
        raise ValueError(f"layer={layer!r} must be an index in [0, {len(records)}) (negatives count from the end)")
    return records[layer]
