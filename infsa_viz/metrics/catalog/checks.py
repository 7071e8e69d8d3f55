"""The class switch and the sanity checks, declared for the registry."""

from __future__ import annotations

import numpy as np

from ..class_switch import class_switch, switch_classes
from ...estimate import Estimate
from ..registry import Figure, Metric, RowMetric, Scores, Scoring, Setting, register_metric
from ..sanity import sanity_report
from ._common import SUBSAMPLE

__all__ = ['ClassSwitch', 'Sanity']


@register_metric
class ClassSwitch(Metric):
    """The class switch (ours): each image is explained again for the class of a distractor digit; a
    map that explains a class should move its mass from the target's box to that distractor's box.
    The shift is the distractor's gain minus the target's change; a map that ignores the class
    shifts 0."""

    name = "class_switch"
    category = "faithfulness"
    citation = "ours (cluttered digits carry labelled distractors)"
    rule = ("explain the class of the first distractor whose class differs from the label; shift = (distractor "
            "share after - before) - (target share after - before), positive mass shares; target_drop = target "
            "share before - after; distractor_gain = after - before; a map without a class does not change (shift 0)")
    figures = (Figure("class_switch_shift", "class-switch shift", True, "share of positive mass", percent=True),
               Figure("class_switch_target_drop", "class-switch target drop", True, "share of positive mass",
                      percent=True, ranked=False, table=False),
               Figure("class_switch_distractor_gain", "class-switch distractor gain", True, "share of positive mass",
                      percent=True, ranked=False, table=False))
    settings = (SUBSAMPLE,)
    subset = "subsample"
    count = "n_class_switch"
    redraws = True
    cost = "one map of another class per image (the method's own cost)"
    requires = {"negative_labels": "labelled distractor boxes (a cluttered-digits benchmark, or VOC boxes of other "
                                   "classes)"}

    def score(self, ctx: Scoring) -> Scores:
        out = {f.key: np.full(len(ctx), np.nan) for f in self.figures}
        if ctx.negatives is None or ctx.negative_labels is None:
            return Scores(out)
        which, classes = switch_classes(ctx.explained, list(ctx.negative_labels))
        rows = np.flatnonzero(which >= 0)
        if not rows.size:
            return Scores(out)
        switched = ctx.redraw(rows, classes[rows])
        distractor = [np.asarray(ctx.negatives[i]).reshape(-1, 4)[which[i]][None] for i in rows]
        found = class_switch(ctx.maps[rows], switched, [ctx.boxes[i] for i in rows], distractor,
                             image_size=ctx.image_size)
        out["class_switch_shift"][rows] = found["shift"]
        out["class_switch_target_drop"][rows] = found["target_before"] - found["target_after"]
        out["class_switch_distractor_gain"][rows] = found["distractor_after"] - found["distractor_before"]
        return Scores(out, {"images": "subsample images with a distractor of another class"})


@register_metric
class Sanity(RowMetric):
    """Sanity checks (Adebayo et al., NeurIPS 2018): the maps of the trained model against the maps
    of the same model with its layers randomised top-down, and against maps of a random other
    class; a method whose maps survive full randomisation (Spearman above the threshold) fails."""

    name = "sanity"
    category = "randomisation"
    citation = "Adebayo et al., NeurIPS 2018"
    rule = "maps of the trained model against maps of a cascade of randomised models (and of a random other class)"
    figures = (Figure("sanity_randomised_spearman", "randomisation Spearman", False, "rank correlation"),
               Figure("sanity_randomised_ssim", "randomisation SSIM", False, "SSIM", ranked=False, table=False),
               Figure("sanity_random_logit_spearman", "random-logit Spearman", False, "rank correlation",
                      ranked=False, table=False))
    settings = (Setting("sanity_images", 30, int, "sanity checks (randomisation, random logit) on the first N images "
                        "(0 = off)", minimum=0, maximum=10**5),)
    subset = "sanity_images"
    cost = "one map per randomisation stage (about 2 + depth) per image"

    def estimate(self, work, settings):
        weights = 4.0 * work.layers * (4 * work.width**2 + 2 * work.width * work.mlp)
        maps = 8.0 * (work.layers + 2) * work.batch * work.pixels
        return Estimate(2 * weights + maps, "a randomised copy of the model and a map per stage, upsampled",
                        forwards=work.layers + 3)

    def score_row(self, row):
        classes = row.classes
        num_classes = getattr(getattr(row.model, "config", None), "num_classes", None)
        if num_classes is None:
            num_classes = 2 if classes is None else int(classes.max()) + 1
        report = sanity_report(row.model, row.images, row.maps_of, classes, num_classes=num_classes,
                               seed=row.settings["seed"], trained=row.maps)
        figures = {"sanity_randomised_spearman": report["randomised_spearman"],
                   "sanity_randomised_ssim": report["randomised_ssim"],
                   "sanity_random_logit_spearman": None if report["random_logit"] is None else
                   report["random_logit"]["spearman"]["mean"]}
        return figures, report
