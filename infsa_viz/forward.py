"""One forward record per (model, images): what every map, metric, the engine and the app read.

As TransformerLens's ``run_with_cache`` returns one record of a forward pass (logits and every
activation) for all later analysis, and as Quantus passes ``(model, x, y, a)`` together to a
metric, a :class:`ForwardRecord` holds, for one batch of images:

* the prepared input ``(B, C, H, W)`` and the preprocessing it went through (with the display
  pixels and the box mapping when the record was built from decoded images);
* the clean logits ``(B, classes)`` (float64, no gradient) of **one** forward pass;
* the labels (``-1`` where unknown: an upload, or a set the model does not belong to, whose
  prediction then stands in for the label, the one rule for an unknown label);
* the class explained and scored, one :class:`~infsa_viz.targets.Target` resolved against those
  logits and labels (:attr:`explained`);
* the attention records of the same forward, on demand (:attr:`attention`).

The forward runs when something first reads the logits, the classes or the attention: a record
built for a map that needs neither (a random map, an oracle) runs no forward. With
``capture=True`` (a reader of attention is coming) the one forward captures attention as it goes;
asking for attention after a forward without capture runs one more forward, with capture.

Example:
    >>> record = forward_record(model, images, labels=labels, target="label")  # decoded uint8 images
    >>> record.logits.shape, record.explained.shape                             # (B, classes), (B,)
    >>> attribute(record, "visits").maps                                         # reads record.attention
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from .model.capture import AttentionRecord, record_attention
from .preprocess import Prepared, Preprocessing, prepare
from .targets import Target

__all__ = ["ForwardRecord", "check_classes", "forward_record"]


class ForwardRecord:
    """One clean forward of ``model`` on a batch of prepared images (see the module docstring).

    Build it with :func:`forward_record`. Attributes read as properties; the forward runs once,
    when first needed.

    Args:
        model: the model (set to eval mode).
        inputs: ``(B, C, H, W)`` the model's input.
        labels: ``(B,)`` ground-truth classes, ``-1`` where unknown (default: all unknown).
        target: the class explained and scored (:class:`~infsa_viz.targets.Target` or anything
            :meth:`Target.parse <infsa_viz.targets.Target.parse>` reads; default the prediction).
        prepared: the :class:`~infsa_viz.preprocess.Prepared` the inputs come from, if any.
        logits: the clean logits when already computed (no forward then).
        capture: capture attention during the forward (a reader of :attr:`attention` is coming).
        classes: ``(B,)`` explicit classes to explain and score instead of resolving ``target``.
        name: the target's name in error messages (``"--target"`` in the CLI, ``"class"`` in the app).
    """

    def __init__(self, model: nn.Module, inputs: Tensor, *, labels: Any = None, target: Any = None,
                 prepared: Prepared | None = None, logits: Tensor | None = None, capture: bool = False,
                 classes: Tensor | None = None, name: str = "target") -> None:
        if not isinstance(model, nn.Module):
            raise TypeError(f"model has type {type(model).__name__}; expected a torch.nn.Module")
        if not isinstance(inputs, Tensor) or inputs.dim() != 4:
            raise ValueError(f"inputs has shape {tuple(getattr(inputs, 'shape', ()))}; expected (B, C, H, W) "
                             "prepared images (infsa_viz.preprocess.prepare)")
        B = inputs.shape[0]
        given = np.full(B, -1, dtype=np.int64) if labels is None else np.asarray(labels, dtype=np.int64).reshape(-1)
        if given.shape != (B,):
            raise ValueError(f"labels has shape {given.shape}; expected one label per image ({B},), -1 where unknown")
        config = getattr(model, "config", None)
        self.model = model.eval()
        self.inputs = inputs
        self.labels = given
        self.name = name
        self.target = Target.parse(target, class_names=getattr(config, "class_names", None), name=name).validate(
            getattr(config, "num_classes", None), name=name)
        self.prepared = prepared
        self._logits = None if logits is None else logits.detach().double()
        self._attention: list[AttentionRecord] | None = None
        self._capture = capture
        self._classes = None if classes is None else check_classes(classes, B, getattr(config, "num_classes", None))
        self._memos: dict[str, dict[Any, Any]] = {}

    # -- what the record holds -------------------------------------------------------------------
    def memo(self, name: str) -> dict[Any, Any]:
        """A dict kept with this record under ``name``, for results that are pure functions of these inputs
        and this model and that several maps or metrics share (e.g. ``"perturbation"``: the probability of
        each perturbed copy already scored, :func:`~infsa_viz.metrics.perturbation.perturbation_curves`).
        A record made by :meth:`take` or :meth:`explaining` starts with its own."""
        return self._memos.setdefault(name, {})

    @property
    def preprocessing(self) -> Preprocessing | None:
        """The preprocessing the inputs went through (the model's own), if the model declares one."""
        return getattr(getattr(self.model, "config", None), "preprocessing", None)

    @property
    def logits(self) -> Tensor:
        """``(B, classes)`` float64: the clean logits (runs the forward on first use)."""
        if self._logits is None:
            self._forward(capture=self._capture)
        return self._logits  # type: ignore[return-value]

    @property
    def probabilities(self) -> Tensor:
        """``(B, classes)`` float64: the softmax of :attr:`logits`."""
        return torch.softmax(self.logits, dim=-1)

    @property
    def attention(self) -> list[AttentionRecord]:
        """The attention records of the forward, one per layer (captured on first use)."""
        if self._attention is None:
            self._forward(capture=True)
        return self._attention  # type: ignore[return-value]

    @property
    def predicted(self) -> np.ndarray:
        """``(B,)`` int64: the model's prediction."""
        return self.logits.argmax(-1).numpy()

    @property
    def known(self) -> np.ndarray:
        """``(B,)`` bool: which images have a label."""
        return self.labels >= 0

    @property
    def filled_labels(self) -> np.ndarray:
        """``(B,)`` int64: the labels, with the prediction where the label is unknown."""
        if self.known.all():
            return self.labels
        return np.where(self.known, self.labels, self.predicted)

    @property
    def explained(self) -> Tensor:
        """``(B,)`` int64: the class the maps explain and the metrics score (:attr:`target` resolved;
        a label or a class needs no forward)."""
        if self._classes is None:
            if self.target.kind == "class" or (self.target.kind == "label" and self.known.all()):
                width = self._num_classes() or max(int(self.labels.max(initial=0)), int(self.target.value or 0)) + 1
                self._classes = self.target.resolve(torch.zeros(len(self), width), self.labels, name=self.name)
            else:
                self._classes = self.target.resolve(self.logits, self.filled_labels, name=self.name)
        return self._classes

    def __len__(self) -> int:
        return int(self.inputs.shape[0])

    # -- derived records ---------------------------------------------------------------------------
    def take(self, rows: Sequence[int] | np.ndarray) -> ForwardRecord:
        """The record of the images at ``rows``: the same forward's logits, classes and attention, and their
        :class:`~infsa_viz.preprocess.Prepared` (no forward of its own when this record's has run; a forward
        not yet run runs on the rows only)."""
        rows = np.asarray(rows, dtype=np.int64)
        index = torch.as_tensor(rows)
        out = ForwardRecord(self.model, self.inputs[index], labels=self.labels[rows], target=self.target,
                            prepared=None if self.prepared is None else self.prepared.take(rows),
                            logits=None if self._logits is None else self._logits[index], capture=self._capture,
                            classes=None if self._classes is None else self._classes[index], name=self.name)
        if self._attention is not None:
            out._attention = [layer.take(index) for layer in self._attention]
        return out

    def explaining(self, classes: Tensor | np.ndarray | Sequence[int] | None = None, *,
                   target: Any = None, labels: Any = None) -> ForwardRecord:
        """The same forward (its logits and attention: no forward of its own once this record's has run),
        explaining and scoring ``classes`` ``(B,)``, or without them ``target`` resolved anew (default:
        this record's target), against ``labels`` ``(B,)`` (``-1`` where unknown; default: this record's)."""
        out = ForwardRecord(self.model, self.inputs, labels=self.labels if labels is None else labels,
                            target=self.target if target is None else target, prepared=self.prepared,
                            logits=self._logits, classes=None if classes is None else torch.as_tensor(np.asarray(classes)),
                            name=self.name)
        out._attention, out._capture = self._attention, self._capture
        return out

    @staticmethod
    def join(parts: Sequence[ForwardRecord]) -> ForwardRecord:
        """One record of the images of ``parts``, in order (records of one model and one target, e.g. parts
        of consecutive batches taken with :meth:`take`): their inputs and labels, and the logits, classes
        and attention of their forwards where every part holds them, so the joined record runs no forward
        of its own for what every part has (the app joins the rows a page shows from a set's batches).

        Raises:
            ValueError: no parts, or parts of different models, targets or input sizes.
        """
        if not parts:
            raise ValueError("parts is empty; expected at least one ForwardRecord")
        first = parts[0]
        for part in parts[1:]:
            same = part.model is first.model and part.target == first.target
            if not same or part.inputs.shape[1:] != first.inputs.shape[1:]:
                raise ValueError(f"parts hold inputs {tuple(part.inputs.shape)} of {type(part.model).__name__} "
                                 f"explaining {part.target} beside {tuple(first.inputs.shape)} explaining "
                                 f"{first.target}; expected records of one model, one target and one input size")
        out = ForwardRecord(first.model, torch.cat([p.inputs for p in parts]),
                            labels=np.concatenate([p.labels for p in parts]), target=first.target,
                            logits=torch.cat([p._logits for p in parts]) if all(p._logits is not None for p in parts)
                            else None, capture=any(p._capture for p in parts),
                            classes=torch.cat([p._classes for p in parts])
                            if all(p._classes is not None for p in parts) else None, name=first.name)
        if all(p._attention is not None for p in parts):
            out._attention = [AttentionRecord.join(layer) for layer in zip(*(p._attention for p in parts))]
        return out

    # -- the forward ----------------------------------------------------------------------------
    def _num_classes(self) -> int | None:
        num = getattr(getattr(self.model, "config", None), "num_classes", None)
        return num if num is not None or self._logits is None else int(self._logits.shape[-1])

    def _forward(self, *, capture: bool) -> None:
        with torch.no_grad():
            if capture:
                with record_attention(self.model) as recorder:
                    logits = self.model(self.inputs)
                self._attention = recorder.layers
            else:
                logits = self.model(self.inputs)
        if not isinstance(logits, Tensor) or logits.dim() != 2 or logits.shape[0] != len(self):
            raise TypeError(f"model returned {type(logits).__name__} of shape {tuple(getattr(logits, 'shape', ()))}; "
                            f"expected logits of shape ({len(self)}, classes)")
        if self._logits is None:
            self._logits = logits.double()


def check_classes(classes: Any, B: int, num_classes: int | None, *, name: str = "target") -> Tensor:
    """``(B,)`` int64 class indices from ``classes`` (one index is repeated); ``ValueError`` naming
    ``name`` for a wrong shape or a class outside ``[0, num_classes)``."""
    given = torch.as_tensor(np.asarray(classes) if not isinstance(classes, Tensor) else classes)
    found = given.to(torch.int64).flatten() if given.ndim else torch.full((B,), int(given), dtype=torch.int64)
    outside = bool((found < 0).any()) or (num_classes is not None and bool((found >= num_classes).any()))
    if found.shape != (B,) or outside:
        raise ValueError(f"{name} has shape {tuple(given.shape)} and values {found.tolist()[:8]}; expected "
                         f"({B},) class indices in [0, {num_classes})")
    return found


def forward_record(model: nn.Module, images: Any, *, labels: Any = None, target: Any = None,
                   capture: bool = False) -> ForwardRecord:
    """The :class:`ForwardRecord` of ``model`` on ``images``.

    Args:
        model: the model.
        images: decoded uint8 images (a batch or a sequence, any size: prepared with the model's
            own preprocessing, :func:`~infsa_viz.preprocess.prepare`), a
            :class:`~infsa_viz.preprocess.Prepared`, or a ``(B, C, H, W)`` tensor already prepared.
        labels: ``(B,)`` ground-truth classes, ``-1`` where unknown.
        target: the class explained and scored (default: the prediction).
        capture: capture attention in the forward (when attention readers will follow).

    Raises:
        TypeError, ValueError: a model that is not a module, images of the wrong kind or shape,
            labels that do not match the images, a target the model cannot have.
    """
    if isinstance(images, Tensor):
        return ForwardRecord(model, images, labels=labels, target=target, capture=capture)
    prepared = images if isinstance(images, Prepared) else prepare(model, images)
    return ForwardRecord(model, prepared.tensor, labels=labels, target=target, prepared=prepared, capture=capture)
