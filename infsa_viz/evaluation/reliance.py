"""Measured reliance: what a trained model uses on the cued benchmarks, by behaviour and by intervention.

Two measurements per model, both on the test split of a cued benchmark
(:mod:`infsa_viz.data.cued`), never assumed from how it was trained:

* **Cue reliance by behaviour** (:func:`cue_reliance`): on *conflicting* images (the cue encodes a
  class other than the label) the share of images the model assigns to the cue's class ("decided by
  the cue") and to the label ("decided by the digit"); accuracy on consistent and conflicting
  images. A model that ignores the cue is decided by it only by chance (about ``(1 − accuracy) / 9``).
* **The top object by intervention** (:func:`top_objects`): for each image, the object whose
  in-distribution change (:meth:`~infsa_viz.data.scenes.Scene.intervene`) lowers the explained
  class's probability most, among the objects the image holds. The share of images whose top object
  is not the target digit says how far the ground truth departs from "the target is the evidence".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from .._checks import check_int
from ..data import LabelledImages, cue_conditions
from ..preprocess import prepare
from .interventions import ObjectImportance

__all__ = ["CueReliance", "cue_reliance", "top_object_summary", "top_objects"]


@dataclass(frozen=True, eq=False)
class CueReliance:
    """One model's behaviour on a cued test split.

    Attributes:
        conditions: ``(n,)`` ``"consistent"`` / ``"conflicting"`` / ``"absent"`` per image.
        labels: ``(n,) int64`` the labels (the target digit's class).
        cue_classes: ``(n,) int64`` the class the cue encodes (``-1`` where absent).
        predicted: ``(n,) int64`` the model's class.
        probabilities: ``(n, M) float64`` the model's softmax output.
    """

    conditions: np.ndarray
    labels: np.ndarray
    cue_classes: np.ndarray
    predicted: np.ndarray
    probabilities: np.ndarray

    def summary(self) -> dict[str, Any]:
        """JSON-ready figures: accuracy overall and per condition, and on conflicting images the
        shares decided by the cue, by the digit and by neither (each in [0, 1], with counts)."""
        out: dict[str, Any] = {"images": int(len(self.labels)),
                               "accuracy": float((self.predicted == self.labels).mean())}
        for condition in ("consistent", "conflicting", "absent"):
            picked = self.conditions == condition
            out[f"{condition}_images"] = int(picked.sum())
            out[f"{condition}_accuracy"] = float((self.predicted[picked] == self.labels[picked]).mean()) \
                if picked.any() else None
        conflicting = self.conditions == "conflicting"
        if conflicting.any():
            by_cue = self.predicted[conflicting] == self.cue_classes[conflicting]
            by_digit = self.predicted[conflicting] == self.labels[conflicting]
            out.update({"decided_by_cue": float(by_cue.mean()), "decided_by_digit": float(by_digit.mean()),
                        "decided_by_neither": float((~by_cue & ~by_digit).mean())})
        return out


def cue_reliance(model: nn.Module, data: LabelledImages, *, batch_size: int = 256) -> CueReliance:
    """How ``model`` decides on a cued test split (one clean forward per image).

    Args:
        model: a classifier in eval mode with a preprocessing config.
        data: cued-digits images with their scenes (e.g. ``test_split(benchmark="cued-digits-p100")``).
        batch_size: images per forward pass. Default 256.

    Returns:
        :class:`CueReliance`.

    Raises:
        ValueError: data without cued scenes, a bad ``batch_size``, or a model in training mode.
    """
    if data.scenes is None:
        raise ValueError("data has no scenes; expected a cued benchmark's test split (e.g. --data cued-digits-p100)")
    batch_size = check_int("batch_size", batch_size, minimum=1)
    if model.training:
        raise ValueError("model is in training mode; expected eval mode (call model.eval() first)")
    labels = np.asarray(data.labels, dtype=np.int64)
    conditions = cue_conditions(data.scenes, labels)
    cue_classes = np.array([int(s.labels[s.names.index("cue")]) for s in data.scenes], dtype=np.int64)
    probabilities = []
    with torch.inference_mode():
        for start in range(0, len(labels), batch_size):
            images = data.images[start:start + batch_size]
            logits = model(prepare(model, np.asarray(images)).tensor)
            probabilities.append(torch.softmax(logits.double(), dim=-1).cpu().numpy())
    probs = np.concatenate(probabilities)
    return CueReliance(conditions, labels, cue_classes, probs.argmax(axis=1).astype(np.int64), probs)


def top_objects(importance: ObjectImportance) -> np.ndarray:
    """Per image, the index of the object whose change lowers the explained class's probability most.

    Only objects the image holds (a non-empty visible mask) compete; ties go to the lowest index.

    Returns:
        ``(B,) int64`` object indices (into ``importance.objects``).
    """
    present = importance.masks.any(axis=(2, 3))  # (B, O)
    drops = np.where(present, importance.prob_drop, -np.inf)
    return drops.argmax(axis=1).astype(np.int64)


def top_object_summary(importance: ObjectImportance, conditions: np.ndarray | None = None) -> dict[str, Any]:
    """Shares of images by top object (:func:`top_objects`), overall and per cue condition.

    Returns:
        ``{"images", "not_target", "by_object": {name: share}, "by_condition": {condition: {...}}}``.
    """
    top = top_objects(importance)
    names = importance.objects

    def shares(picked: np.ndarray) -> dict[str, Any]:
        chosen = top[picked]
        return {"images": int(picked.sum()),
                "not_target": float((chosen != 0).mean()) if len(chosen) else None,
                "by_object": {name: float((chosen == k).mean()) if len(chosen) else None
                              for k, name in enumerate(names)}}

    out = shares(np.ones(len(top), dtype=bool))
    if conditions is not None:
        conditions = np.asarray(conditions)
        if conditions.shape != top.shape:
            raise ValueError(f"conditions has shape {conditions.shape}; expected one per image {top.shape}")
        out["by_condition"] = {str(c): shares(conditions == c) for c in np.unique(conditions)}
    return out
