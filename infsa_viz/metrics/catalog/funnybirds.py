"""The FunnyBirds-style checks (scene objects as parts), declared for the registry."""

from __future__ import annotations

import numpy as np
import torch

from ..class_switch import switch_classes
from ..funnybirds import (
    BACKGROUND_TOLERANCE,
    THRESHOLDS,
    SceneInputs,
    background_independence,
    completeness_checks,
    scene_inputs,
    target_sensitivity,
)
from ..registry import Figure, Metric, Scores, Scoring, register_metric
from ._common import SUBSAMPLE, quiet

__all__ = ["FunnyBirdsChecks", "TargetSensitivityCheck"]

_CITATION = "Hesse, Schaub-Meyer & Roth, FunnyBirds, ICCV 2023"
_NO_SCENES = "the data has no scenes (objects that can be changed in distribution): not measured"


def _record_logits(ctx: Scoring, inputs: SceneInputs) -> np.ndarray | None:
    """The clean logits of the scenes' renders from the chunk's forward record: the renders are the
    images the record holds (generated benchmarks), so no clean forward is repeated; ``None`` (one forward
    then) where they differ."""
    if inputs.tensor.shape != ctx.images.shape or not torch.equal(inputs.tensor, ctx.images):
        return None
    return ctx.record.logits.numpy()


def _undefined(metric: Metric, n: int) -> Scores:
    return Scores({f.key: np.full(n, np.nan) for f in metric.figures}, {"undefined": _NO_SCENES})


@register_metric
class FunnyBirdsChecks(Metric):
    """FunnyBirds' completeness checks and background independence (Hesse, Schaub-Meyer & Roth, ICCV
    2023) with the scene's objects as parts, changed in distribution (digits removed, the background
    swapped). An object is important at a threshold t when its area-normalised share of the map
    exceeds t, over the published grid t = 0.01 … 0.5 (80 values). The preservation check keeps only
    the important objects (every other one changed) and asks that the prediction stays; the deletion
    check changes the important objects and asks that it changes; each image scores the share of
    thresholds that pass, on the correctly classified images (where the map explains the prediction).
    Background independence is a property of the model, not of the map: the share of images whose
    background swap does not lower the class logit by 5 % of its magnitude. FunnyBirds' single-deletion
    correlation is the evidence rank correlation (metric ``evidence``)."""

    name = "funnybirds"
    category = "evidence"
    citation = _CITATION
    rule = ("objects important at threshold t: area-normalised map share > t, t = linspace(0.01, 0.5, 80); "
            "preservation: prediction kept when only the important objects are kept; deletion: prediction "
            "changed when they are changed; per image the share of thresholds; background independence: the "
            f"background swap lowers the class logit by less than {BACKGROUND_TOLERANCE:.0%} of its magnitude")
    figures = (
        Figure("preservation_check", "preservation check", True, "share of thresholds", images="scored",
               percent=True, ranked=False, description="keeping only the objects the map marks keeps the prediction"),
        Figure("deletion_check", "deletion check", True, "share of thresholds", images="scored", percent=True,
               ranked=False, description="changing the objects the map marks changes the prediction"),
        Figure("background_independence", "background independence", None, "share of images", percent=True,
               ranked=False, description="model property: the background swap leaves the class logit within 5 %"),
    )
    settings = (SUBSAMPLE,)
    subset = "subsample"
    cost = "at most 2 x objects forwards per image (one per distinct set of objects changed) and 1 for the background"

    def score(self, ctx: Scoring) -> Scores:
        scenes = ctx.truth.scenes
        if scenes is None:
            return _undefined(self, len(ctx))
        inputs = scene_inputs(ctx.model, scenes)
        batch, logits = ctx.settings["batch_size"], _record_logits(ctx, inputs)
        with quiet():
            checks = completeness_checks(ctx.model, scenes, ctx.maps, batch_size=batch, inputs=inputs, logits=logits)
        independence = background_independence(ctx.model, scenes, ctx.explained, batch_size=batch, inputs=inputs,
                                               logits=logits)
        return Scores({"preservation_check": checks.preservation, "deletion_check": checks.deletion,
                       "background_independence": independence},
                      {"thresholds": f"linspace({THRESHOLDS[0]:g}, {THRESHOLDS[-1]:g}, {len(THRESHOLDS)})",
                       "importance": "area-normalised share of the map's positive mass (per visible pixel)",
                       "prediction": "argmax on the clean render against the changed render",
                       "forwards_per_image_max": int(checks.forwards.max()) if len(checks.forwards) else 0})


@register_metric
class TargetSensitivityCheck(Metric):
    """FunnyBirds' target sensitivity (Hesse, Schaub-Meyer & Roth, ICCV 2023) on scenes: the image is
    explained again for the class of its first distractor of another class. Where the model behaves
    as assumed (removing the target digit lowers the label's logit more than removing that distractor
    does, and removing the distractor lowers its class's logit more than removing the target does),
    the map of the label should weigh the target more than the distractor's map does, and the
    distractor's map the distractor more; each image scores the share of the two that hold (ties
    fail). A map that ignores the class scores 0."""

    name = "target_sensitivity"
    category = "evidence"
    citation = _CITATION
    rule = ("classes A = label (part: the target digit), B = the first distractor of another class (part: that "
            "digit); images where the assumption on the logit drops holds; score = ([share_A(target) > "
            "share_B(target)] + [share_B(distractor) > share_A(distractor)]) / 2, shares of positive map mass")
    figures = (Figure("target_sensitivity", "target sensitivity", True, "share of checks", images="scored",
                      percent=True, ranked=False,
                      description="the map of each class weighs that class's object (target or distractor) "
                                  "more than the other map"),)
    settings = (SUBSAMPLE,)
    subset = "subsample"
    count = "n_target_sensitivity"
    redraws = True
    cost = "one map of another class and 3 forwards per image"

    def score(self, ctx: Scoring) -> Scores:
        scenes, out = ctx.truth.scenes, np.full(len(ctx), np.nan)
        if scenes is None or ctx.negatives is None or ctx.negative_labels is None:
            return _undefined(self, len(ctx))
        inputs = scene_inputs(ctx.model, scenes)
        if "target" not in inputs.objects:
            return _undefined(self, len(ctx))
        target = inputs.objects.index("target")
        which, classes = switch_classes(ctx.explained, list(ctx.negative_labels))
        objects = np.full(len(ctx), -1)
        others = [k for k, name in enumerate(inputs.objects) if k != target and name != "background"]
        for i in np.flatnonzero(which >= 0):  # the scene object that fills the distractor's box
            x0, y0, x1, y1 = (int(v) for v in np.asarray(ctx.negatives[i]).reshape(-1, 4)[which[i]])
            inside = [int(inputs.masks[i, k, y0:y1, x0:x1].sum()) for k in others]
            if inside and max(inside) > 0:
                objects[i] = others[int(np.argmax(inside))]
        rows = np.flatnonzero(objects >= 0)
        if not rows.size:
            return Scores({"target_sensitivity": out}, {"images": "none has a distractor of another class"})
        switched = ctx.redraw(rows, classes[rows])
        part = ctx.take(rows)
        logits = _record_logits(ctx, inputs)
        with quiet():
            found = target_sensitivity(ctx.model, part.truth.scenes, part.maps, switched, part.explained,
                                       classes[rows], np.full(len(rows), target), objects[rows],
                                       batch_size=ctx.settings["batch_size"], inputs=inputs.take(rows),
                                       logits=None if logits is None else logits[rows])
        out[rows] = found.score
        return Scores({"target_sensitivity": out},
                      {"assumption_failed": int((~found.assumption).sum()),
                       "images": "images with a distractor of another class whose logit drops meet the assumption"})
