"""The class a map explains: one :class:`Target`, parsed and validated once.

Every reader of a "class to explain" — the CLI's ``--target``, the evaluation settings, the app's
"Explain class" box, :func:`infsa_viz.maps.attribute` and the sanity checks — goes through
:meth:`Target.parse` (:func:`target_for_models` for several models) and is resolved once, by the
images' :class:`~infsa_viz.forward.ForwardRecord`, so the vocabulary below is defined here only
(as pytorch-grad-cam makes targets objects and Captum validates one ``TargetType`` once). The
class a map explains is also the class every metric scores (the probability MoRF tracks, the
class the evidence removes objects for):

* ``"label"``: the ground-truth label of each image (an image without one is an error);
* ``"predicted"``: the model's prediction (``"top 1"`` is the same class);
* ``"top k"``: the k-th most probable class of each image (ties: the lower class index first);
* a class index (``3`` or ``"3"``) or one of the model's class names (``"person"``).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

__all__ = ["TARGET_WORDS", "Target", "TargetKind", "target_for_models"]

TargetKind = Literal["label", "predicted", "rank", "class"]

#: The words of the vocabulary (besides ``"top k"``, class indices and class names).
TARGET_WORDS: tuple[str, ...] = ("label", "predicted")
_RANK_WORD = "top"
_EXPECTED = "'label', 'predicted', 'top K' (K >= 1), a class index or a class name"


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


@dataclass(frozen=True)
class Target:
    """What class a class-explaining map explains.

    Build it with :meth:`parse` (or the constructors :meth:`label`, :meth:`predicted`,
    :meth:`top`, :meth:`of_class`); ``str(target)`` gives the canonical text that
    :meth:`parse` reads back, which is what reports store.

    Attributes:
        kind: ``"label"``, ``"predicted"``, ``"rank"`` (the ``value``-th most probable class) or
            ``"class"`` (class ``value``).
        value: the rank (1-based) for ``"rank"``, the class index for ``"class"``, else ``None``.
    """

    kind: TargetKind
    value: int | None = None

    def __post_init__(self) -> None:
        if self.kind in TARGET_WORDS:
            if self.value is not None:
                raise ValueError(f"Target(kind={self.kind!r}) takes no value; got value={self.value!r}")
        elif self.kind in ("rank", "class"):
            minimum = 1 if self.kind == "rank" else 0
            if isinstance(self.value, bool) or not isinstance(self.value, int) or self.value < minimum:
                raise ValueError(f"Target(kind={self.kind!r}) needs an integer value >= {minimum}; got {self.value!r}")
        else:
            raise ValueError(f"Target kind={self.kind!r} is invalid; expected 'label', 'predicted', 'rank' or 'class'")

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def label(cls) -> Target:
        return cls("label")

    @classmethod
    def predicted(cls) -> Target:
        return cls("predicted")

    @classmethod
    def top(cls, k: int) -> Target:
        """The ``k``-th most probable class (``top(1)`` is the prediction)."""
        return cls("rank", k)

    @classmethod
    def of_class(cls, index: int) -> Target:
        return cls("class", index)

    @classmethod
    def parse(cls, value: Any, *, class_names: Sequence[str] | None = None, name: str = "target") -> Target:
        """A :class:`Target` from a target, ``None`` (the prediction), a class index or a text.

        Args:
            value: a :class:`Target`; ``None``; an ``int`` class index; or a text: ``"label"``,
                ``"predicted"``, ``"top K"``, an integer, or one of ``class_names``.
            class_names: the model's class names, for a class given by name.
            name: the parameter's name in error messages (``"--target"`` in the CLI).

        Raises:
            ValueError: anything else, naming ``name``, the value and the vocabulary.
        """
        if isinstance(value, Target):
            return value
        if value is None:
            return cls.predicted()
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            if value < 0:
                raise ValueError(f"{name}={value!r} is invalid; expected {_EXPECTED}")
            return cls.of_class(operator.index(value))
        if not isinstance(value, str):
            raise ValueError(f"{name}={value!r} is invalid; expected {_EXPECTED}")
        text = value.strip()
        if text in TARGET_WORDS:
            return cls(text)  # type: ignore[arg-type]
        words = text.split()
        if len(words) == 2 and words[0] == _RANK_WORD:
            try:
                k = int(words[1])
            except ValueError:
                k = 0
            if k < 1:
                raise ValueError(f"{name}={value!r} is invalid; 'top K' needs an integer K >= 1")
            return cls.predicted() if k == 1 else cls.top(k)
        try:
            index = int(text)
        except ValueError:
            index = None
        if index is not None:
            if index < 0:
                raise ValueError(f"{name}={value!r} is invalid; a class index must be >= 0")
            return cls.of_class(index)
        if class_names is not None and text in class_names:
            return cls.of_class(list(class_names).index(text))
        known = f"; the model's classes are {list(class_names)[:12]}" if class_names else ""
        raise ValueError(f"{name}={value!r} is invalid; expected {_EXPECTED}{known}")

    # -- checks and resolution ----------------------------------------------------------------
    def validate(self, num_classes: int | None, *, name: str = "target", model: str = "the model") -> Target:
        """``self`` when it can name a class of a model with ``num_classes`` outputs, else ``ValueError``."""
        if num_classes is None:
            return self
        if self.kind == "class" and self.value >= num_classes:  # type: ignore[operator]
            raise ValueError(f"{name}={self} is not a class of {model}; expected a class index in [0, {num_classes})")
        if self.kind == "rank" and self.value > num_classes:  # type: ignore[operator]
            raise ValueError(f"{name}={self} is invalid for {model}, which has {num_classes} classes; "
                             f"expected 'top K' with K <= {num_classes}")
        return self

    @property
    def needs_label(self) -> bool:
        return self.kind == "label"

    def resolve(self, logits: Tensor | np.ndarray, labels: Sequence[int] | np.ndarray | Tensor | None = None, *,
                name: str = "target") -> Tensor:
        """The class index per image ``(B,) int64`` for ``logits (B, C)`` and ``labels (B,)``.

        Labels ``< 0`` (or ``None``) mean "unknown"; ``"label"`` then raises ``ValueError``.
        """
        scores = torch.as_tensor(logits).detach()
        if scores.ndim != 2:
            raise ValueError(f"logits has shape {tuple(scores.shape)}; expected (B, classes)")
        B, C = scores.shape
        self.validate(C, name=name)
        if self.kind == "predicted":
            return scores.argmax(-1).to(torch.int64).cpu()
        if self.kind == "class":
            return torch.full((B,), int(self.value), dtype=torch.int64)  # type: ignore[arg-type]
        if self.kind == "rank":
            order = np.argsort(-scores.double().cpu().numpy(), axis=-1, kind="stable")  # ties: lower index first
            return torch.from_numpy(order[:, int(self.value) - 1].astype(np.int64))  # type: ignore[arg-type]
        given = None if labels is None else torch.as_tensor(np.asarray(labels), dtype=torch.int64).flatten()
        if given is None or given.shape != (B,) or bool((given < 0).any()):
            raise ValueError(f"{name}=label needs a ground-truth label for every image; "
                             + ("none was given" if given is None else f"got {given.tolist()[:8]} for {B} image(s)"))
        if bool((given >= C).any()):
            raise ValueError(f"labels {given.tolist()[:8]} are not classes of a model with {C} outputs")
        return given.clone()

    # -- text -------------------------------------------------------------------------------
    def __str__(self) -> str:
        if self.kind == "rank":
            return f"{_RANK_WORD} {self.value}"
        if self.kind == "class":
            return str(self.value)
        return self.kind

    def to_json(self) -> str | int:
        """What reports store: the class index for a class, the canonical text otherwise."""
        return int(self.value) if self.kind == "class" else str(self)  # type: ignore[arg-type]

    def describe(self, class_names: Sequence[str] | None = None) -> str:
        """In words: "the ground-truth label", "the prediction", "the 2nd-most-probable class", "class 3 (cat)"."""
        if self.kind == "label":
            return "the ground-truth label"
        if self.kind == "predicted":
            return "the prediction"
        if self.kind == "rank":
            return f"the {_ordinal(int(self.value))}-most-probable class"  # type: ignore[arg-type]
        names = list(class_names or [])
        index = int(self.value)  # type: ignore[arg-type]
        return f"class {index} ({names[index]})" if index < len(names) else f"class {index}"


def target_for_models(value: Any, models: Sequence[tuple[str, Any]], *, name: str = "target") -> Target:
    """One :class:`Target` for several models, parsed once and checked against every model.

    A class given by name is looked up in the class names the models share (``ValueError`` when
    they name their classes differently: give an index); the target is then validated against each
    model's number of classes (:meth:`Target.validate`, naming the model).

    Args:
        value: anything :meth:`Target.parse` reads.
        models: ``(name, model)`` pairs; each model's ``config`` gives ``class_names`` and ``num_classes``.
        name: the parameter's name in error messages (``"--target"`` in the CLI).
    """
    configs = [(label, getattr(model, "config", None)) for label, model in models]
    try:
        target = Target.parse(value, name=name)
    except ValueError:
        names = {tuple(getattr(c, "class_names", None) or ()) for _, c in configs}
        if len(names) != 1:
            raise ValueError(f"{name}={value!r} names a class by name, but the models name their classes "
                             "differently; give a class index") from None
        target = Target.parse(value, class_names=names.pop() or None, name=name)
    for label, config in configs:
        target.validate(getattr(config, "num_classes", None), name=name, model=label)
    return target
