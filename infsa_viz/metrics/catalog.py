"""The built-in metrics, declared once each (:mod:`~infsa_viz.metrics.registry`).

The order of the declarations below is the order of the evaluation table's columns and of the
ranking criteria. Each :meth:`~infsa_viz.metrics.registry.Metric.score` calls the plain metric
functions of this package; the figures are per image, ``nan`` where not measured.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

from ._checks import UndefinedMetricWarning
from .class_switch import class_switch, switch_classes
from .evidence import evidence_scores
from .insertion import deletion_insertion, positive_negative_perturbation
from .localisation import RECALL_GRID, box_auc, box_curves, pointing_game
from .mass import complexity, energy_pointing_game, relevance_rank_accuracy
from .perturbation import perturbation_curves
from .protocol import BASELINES
from .registry import Figure, Metric, RowMetric, Scores, Scoring, Setting, register_metric
from .road import road_curves
from .sanity import sanity_report
from .scores import aopc, lerf_auc, morf_aoc

__all__ = ["BoxLocalisation", "ClassSwitch", "DeletionInsertionMetric", "Evidence", "MassLocalisation",
           "PatchPerturbation", "Pointing", "PositiveNegativeMetric", "ROAD", "Sanity"]

#: Upper bounds of step counts: each step is one perturbed forward per image, held in memory at once.
MAX_STEPS = 1000
MAX_ROAD_STEPS = 100

_SUBSAMPLE = Setting("subsample", 100, int, "deletion/insertion, positive/negative perturbation and the class "
                     "switch on images with index < N (0 = off)", minimum=0, maximum=10**7)


@contextmanager
def _quiet() -> Iterator[None]:
    """Undefined images are ``nan`` in the records and counted in the rows, not warned per chunk."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        yield


@register_metric
class PatchPerturbation(Metric):
    """MoRF / LeRF patch removal (Samek et al., IEEE TNNLS 2016). ViT patches are replaced by the
    baseline (the dataset mean by default) in the map's order, most relevant first (MoRF) or least
    relevant first (LeRF), over ``steps`` cumulative steps, and the probability of the scored class is
    read after each. MoRF-AOC is the area over ``p_k / p_0`` (higher: the map found what the model
    needs), LeRF-AUC the area under it (higher: the map's low end is truly unimportant), AOPC the
    mean drop. Both are averaged over the correctly classified images. Removal creates images the
    model never saw, so part of any MoRF score measures the model's reaction to grey patches; the
    greedy deletion oracle (the model's own best removal order) is its ceiling."""

    name = "perturbation"
    category = "faithfulness"
    citation = "Samek et al., IEEE TNNLS 2016 (MoRF/LeRF, AOPC)"
    rule = "class probability as ViT patches are removed in map order, most (MoRF) or least (LeRF) relevant first"
    figures = (
        Figure("morf_aoc", "MoRF-AOC", True, "% of the area over p_k/p_0", images="scored", digits=3,
               ceiling="greedy_deletion",
               description="area over the class probability as the most relevant patches go"),
        Figure("lerf_auc", "LeRF-AUC", True, "% of the area under p_k/p_0", images="scored", digits=3,
               description="area under the class probability as the least relevant patches go"),
        Figure("aopc", "AOPC", True, "probability", images="scored", ranked=False,
               description="average drop of the probability over the MoRF steps"),
    )
    settings = (
        Setting("steps", 20, int, "MoRF/LeRF removal steps K (K + 1 points)", minimum=1, maximum=MAX_STEPS),
        Setting("baseline", "mean", str, "what removed patches become (mean = 0 after normalisation)",
                choices=tuple(b for b in BASELINES if b != "zero")),
    )
    cost = "2 x (steps + 1) forwards per image"

    def score(self, ctx: Scoring) -> Scores:
        s = ctx.settings
        curves = perturbation_curves(ctx.model, ctx.images, ctx.maps, ctx.classes, patch_size=ctx.model.patch_size,
                                     order="both", steps=s["steps"], baseline=s["baseline"], score=s["score"],
                                     seed=s["seed"], batch_size=s["batch_size"])
        with _quiet():
            values = {"morf_aoc": morf_aoc(curves["morf"], select="all").per_image,
                      "lerf_auc": lerf_auc(curves["lerf"], select="all").per_image,
                      "aopc": aopc(curves["morf"], select="all").per_image}
        protocol = {k: v for k, v in curves["morf"].protocol.items() if k != "order"}
        protocol["fractions"] = [round(float(f), 5) for f in curves["morf"].fractions]
        protocol["removed"] = [int(k) for k in curves["morf"].removed]
        return Scores(values, protocol, curves={"morf": curves["morf"].probs, "lerf": curves["lerf"].probs})

    def row_extras(self, records, scored, protocol):
        if not all("morf" in r.curves for r in records):
            return {}
        morf = np.stack([r.curves["morf"] for r in records])  # (B, K + 1)
        lerf = np.stack([r.curves["lerf"] for r in records])
        mean = lambda probs: (probs[scored] / probs[scored, :1]).mean(0).round(5).tolist() if scored.any() else None  # noqa: E731
        return {"curves": {"fractions": protocol.get("fractions"), "morf_mean": mean(morf), "lerf_mean": mean(lerf)}}


@register_metric
class Evidence(Metric):
    """Evidence by intervention (after FunnyBirds, Hesse, Schaub-Meyer & Roth, ICCV 2023, and
    CLEVR-XAI, Arras, Osman & Samek, Information Fusion 2022). Every benchmark image is a scene of
    named objects (the target digit, each distractor, the background); each object is removed alone
    *in distribution* (the generator re-renders the scene without it; the background is swapped for
    another photo crop) and the drop of the explained class's probability is that object's
    importance to this model. A map is then scored on how it distributes its positive mass over the
    objects' visible pixels: the rank correlation (Spearman, Kendall) between the map's mass per
    pixel and the importance, the evidence mass accuracy (the overlap of the two distributions),
    top-object agreement (the map's densest object is the one that hurts most when removed) and the
    CLEVR-XAI relevance mass / rank accuracy against the target's pixel mask. Unlike box metrics it
    rewards a map for the distractors the model really compared, and unlike MoRF it needs no
    out-of-distribution input. The evidence oracle is its ceiling, the random map its floor."""

    name = "evidence"
    category = "evidence"
    citation = ("Hesse, Schaub-Meyer & Roth, FunnyBirds, ICCV 2023 (single-object removal in distribution); "
                "Arras, Osman & Samek, CLEVR-XAI, Information Fusion 2022 (relevance mass / rank accuracy)")
    rule = ("the map's positive mass per visible pixel of each scene object (target, distractors, background) "
            "against the model's importance of that object: the drop of the explained class's probability "
            "when the object alone is removed in distribution (background: swapped), clipped at 0")
    figures = (
        Figure("evidence_spearman", "evidence rank correlation", True, "Spearman's rho over objects",
               ceiling="evidence_oracle", description="the map ranks the objects as their removal hurts the model"),
        Figure("evidence_kendall", "evidence Kendall tau", True, "Kendall's tau-b over objects", ranked=False,
               ceiling="evidence_oracle", description="the same ranking, by Kendall's tau-b"),
        Figure("evidence_mass_accuracy", "evidence mass accuracy", True, "histogram intersection", percent=True,
               ceiling="evidence_oracle", description="overlap of the map's per-object mass shares (per pixel) "
                                                      "with the model's evidence shares"),
        Figure("top_object_agreement", "top-object agreement", True, "share of images", percent=True,
               ceiling="evidence_oracle", description="the map's densest object is the one whose removal "
                                                      "hurts most"),
        Figure("mask_relevance_mass_accuracy", "relevance mass accuracy (mask)", True, "share of positive mass",
               percent=True, ranked=False, ceiling="evidence_oracle",
               description="share of the map's positive mass on the target digit's pixels (CLEVR-XAI, mask)"),
        Figure("mask_relevance_rank_accuracy", "relevance rank accuracy (mask)", True, "share of pixels",
               percent=True, ranked=False, ceiling="evidence_oracle",
               description="share of the K highest pixels on the target digit, K = its pixels (CLEVR-XAI, mask)"),
    )
    cost = "one forward per scene object per image (shared by every map), then mask sums"
    _KEYS = {"evidence_spearman": "evidence_spearman", "evidence_kendall": "evidence_kendall",
             "evidence_mass_accuracy": "evidence_mass_accuracy", "top_object_agreement": "top_object_agreement",
             "mask_relevance_mass_accuracy": "relevance_mass_accuracy",
             "mask_relevance_rank_accuracy": "relevance_rank_accuracy"}

    def score(self, ctx: Scoring) -> Scores:
        truth = ctx.truth
        if not truth.has_evidence:
            return Scores({f.key: np.full(len(ctx), np.nan) for f in self.figures},
                          {"undefined": "the data has no scenes (object masks): evidence figures are not measured"})
        with _quiet():
            found = evidence_scores(ctx.maps, truth.masks, truth.importance)
        return Scores({figure: found[key] for figure, key in self._KEYS.items()},
                      {"objects": list(truth.objects), "importance": "probability drop, clipped at 0",
                       "comparison": "per-object density (positive mass per visible pixel), nearest upsampling"},
                      curves={"importance": np.asarray(truth.importance, dtype=np.float64)})


@register_metric
class BoxLocalisation(Metric):
    """Box ROC-AUC and PR-AUC: the map, upsampled to pixels, used as a detector of the target box's
    pixels (every other pixel, distractors included, is a negative); ``sklearn`` ROC-AUC and
    average precision per image. It measures plausibility (agreement with where a person would look),
    not faithfulness: a map may rightly weigh the distractors the model compared the target with.
    The distractor ROC-AUC ranks target pixels against distractor pixels only."""

    name = "box_auc"
    category = "localisation"
    citation = "pixel ROC-AUC / average precision of the map against the target boxes"
    rule = "the upsampled map as a detector of the target boxes' pixels (sklearn ROC-AUC and PR-AUC per image)"
    figures = (
        Figure("box_roc_auc", "box ROC-AUC", True, "AUC", percent=True, ranked=False, ceiling="box_oracle",
               description="map values rank the target box's pixels above the others (0.5 = chance)"),
        Figure("box_pr_auc", "box PR-AUC", True, "average precision", percent=True, ceiling="box_oracle",
               description="precision-recall of the same ranking (chance = the box's share of pixels)"),
        Figure("distractor_roc_auc", "distractor ROC-AUC", True, "AUC", percent=True, ranked=False,
               description="target pixels ranked above the distractors' pixels"),
        Figure("positive_fraction", "box share", None, "share of pixels", percent=True, ranked=False, table=False,
               description="share of target pixels: the PR-AUC of a constant map"),
    )

    def score(self, ctx: Scoring) -> Scores:
        with _quiet():
            auc = box_auc(ctx.maps, ctx.boxes, image_size=ctx.image_size, negatives_boxes=ctx.negatives)
        precision = np.stack([np.full(len(RECALL_GRID), np.nan) if c is None else c.interpolated_precision()
                              for c in box_curves(ctx.maps, ctx.boxes, image_size=ctx.image_size)])
        distractor = (np.full(len(ctx), np.nan) if auc.negatives_roc_auc is None else auc.negatives_roc_auc)
        return Scores({"box_roc_auc": auc.roc_auc, "box_pr_auc": auc.pr_auc, "distractor_roc_auc": distractor,
                       "positive_fraction": auc.positive_fraction}, auc.protocol, curves={"precision": precision})

    def row_extras(self, records, scored, protocol):
        undefined = {"box_undefined": int(sum(not np.isfinite(r.box_roc_auc) for r in records))}
        if not all("precision" in r.curves for r in records):
            return undefined
        precision = np.stack([r.curves["precision"] for r in records])  # (B, R)
        defined = np.isfinite(precision[:, 0])
        return {**undefined,
                "curves": {"recall": RECALL_GRID.round(3).tolist(),
                           "precision_mean": precision[defined].mean(0).round(5).tolist() if defined.any() else None}}


@register_metric
class Pointing(Metric):
    """The pointing game (Zhang et al., ECCV 2016): a hit when the map's maximum falls on a target box,
    within a tolerance of 15 px at 224 px scaled to the image."""

    name = "pointing_game"
    category = "localisation"
    citation = "Zhang et al., ECCV 2016"
    rule = "the map's maximum falls on a target box (within the tolerance)"
    figures = (Figure("pointing_game", "pointing game", True, "share of hits", percent=True, record="pointing_hit",
                      ceiling="box_oracle", description="the map's maximum falls in the target box"),)

    def score(self, ctx: Scoring) -> Scores:
        with _quiet():
            point = pointing_game(ctx.maps, ctx.boxes, image_size=ctx.image_size)
        return Scores({"pointing_hit": point.hits.astype(np.float64)}, point.protocol)


@register_metric
class MassLocalisation(Metric):
    """Mass-based localisation: the energy pointing game (Wang et al., Score-CAM, CVPRW 2020), the
    share of the map's positive mass inside the target box, and the relevance rank accuracy
    (Arras, Osman & Samek, 2022), the share of the K highest pixels that lie in the box (K = the
    box's pixel count)."""

    name = "mass"
    category = "localisation"
    citation = "Wang et al., Score-CAM, CVPRW 2020; Arras, Osman & Samek, Information Fusion 2022"
    rule = "where the map's mass lies against the target box"
    figures = (
        Figure("energy_pointing_game", "energy pointing game", True, "share of positive mass", percent=True,
               ceiling="box_oracle", description="share of the map's positive mass inside the target box "
                                                 "(nearest upsampling)"),
        Figure("relevance_rank_accuracy", "relevance rank accuracy", True, "share of pixels", percent=True,
               ceiling="box_oracle", description="share of the K highest pixels inside the box, K = box pixels; "
                                                 "ties by expectation"),
    )

    def score(self, ctx: Scoring) -> Scores:
        with _quiet():
            return Scores({"energy_pointing_game": energy_pointing_game(ctx.maps, ctx.boxes, image_size=ctx.image_size),
                           "relevance_rank_accuracy": relevance_rank_accuracy(ctx.maps, ctx.boxes,
                                                                              image_size=ctx.image_size)})


@register_metric
class Complexity(Metric):
    """Complexity (Bhatt, Weller & Moura, IJCAI 2020): the entropy of the map's normalised absolute
    mass over patches; lower means a more concentrated explanation. Descriptive of the map, not of
    the model."""

    name = "complexity"
    category = "complexity"
    citation = "Bhatt, Weller & Moura, IJCAI 2020"
    rule = "entropy (nats) of |m| / sum|m| over patches; log(h*w) for a flat map"
    figures = (Figure("complexity", "complexity", False, "nats", description="entropy of the map's mass "
                                                                             "(lower = more concentrated)"),)

    def score(self, ctx: Scoring) -> Scores:
        return Scores({"complexity": complexity(ctx.maps)})


@register_metric
class DeletionInsertionMetric(Metric):
    """Deletion / insertion (Petsiuk, Das & Saenko, RISE, BMVC 2018): the probability of the scored
    class as patches are replaced by a blurred copy in map order (deletion, lower is better) or put
    back into the blurred copy (insertion, higher is better), as areas under the curve. The blur
    keeps the perturbed images closer to the data than a constant fill."""

    name = "deletion_insertion"
    category = "faithfulness"
    citation = "Petsiuk, Das & Saenko, RISE, BMVC 2018"
    rule = "probability AUC as patches are deleted (to a blurred copy) or inserted (into it) in map order"
    figures = (Figure("deletion_auc", "deletion AUC", False, "probability AUC", percent=True),
               Figure("insertion_auc", "insertion AUC", True, "probability AUC", percent=True))
    settings = (_SUBSAMPLE,
                Setting("insertion_steps", 20, int, "deletion/insertion steps", minimum=1, maximum=MAX_STEPS),
                Setting("blur_sigma", None, float, "deletion/insertion blur sigma in pixels (default patch_size / 2)",
                        minimum=1e-6, maximum=1e4, optional=True))
    subset = "subsample"
    count = "n_subsample"
    cost = "2 x (insertion_steps + 1) forwards per image"

    def score(self, ctx: Scoring) -> Scores:
        s = ctx.settings
        di = deletion_insertion(ctx.model, ctx.images, ctx.maps, ctx.classes, patch_size=ctx.model.patch_size,
                                steps=s["insertion_steps"], blur_sigma=s["blur_sigma"], seed=s["seed"],
                                batch_size=s["batch_size"])
        return Scores({"deletion_auc": di.deletion_auc, "insertion_auc": di.insertion_auc}, di.protocol)


@register_metric
class PositiveNegativeMetric(Metric):
    """Positive / negative perturbation (Chefer, Gur & Wolf, CVPR 2021): whether the top-1 prediction
    survives as the most (positive, lower is better) or least (negative, higher is better) relevant
    patches are zeroed at 0, 10, …, 90 %; the area under that accuracy curve."""

    name = "positive_negative"
    category = "faithfulness"
    citation = "Chefer, Gur & Wolf, CVPR 2021"
    rule = "accuracy AUC as the most (positive) or least (negative) relevant patches are zeroed"
    figures = (Figure("positive_perturbation_auc", "positive perturbation AUC", False, "AUC", percent=True),
               Figure("negative_perturbation_auc", "negative perturbation AUC", True, "AUC", percent=True))
    settings = (_SUBSAMPLE,)
    subset = "subsample"

    def score(self, ctx: Scoring) -> Scores:
        s = ctx.settings
        pn = positive_negative_perturbation(ctx.model, ctx.images, ctx.maps, ctx.classes,
                                            patch_size=ctx.model.patch_size, seed=s["seed"],
                                            batch_size=s["batch_size"])
        return Scores({"positive_perturbation_auc": pn.positive_auc, "negative_perturbation_auc": pn.negative_auc},
                      pn.protocol)


@register_metric
class ROAD(Metric):
    """ROAD (Rong et al., ICML 2022): MoRF and LeRF with removed pixels imputed from their neighbours
    by noisy linear imputation, which leaks less of the removal pattern into the model than a
    constant fill."""

    name = "road"
    category = "faithfulness"
    citation = "Rong et al., ICML 2022"
    rule = "MoRF/LeRF with removed pixels imputed from their neighbours (noisy linear imputation)"
    figures = (Figure("road_morf_aoc", "ROAD MoRF-AOC", True, "% of the area over p_k/p_0", images="scored"),
               Figure("road_lerf_auc", "ROAD LeRF-AUC", True, "% of the area under p_k/p_0", images="scored"))
    settings = (Setting("road_images", 30, int, "ROAD on images with index < N (0 = off)", minimum=0,
                        maximum=10**7),
                Setting("road_steps", 8, int, "ROAD steps (fractions 0 .. (K-1)/K)", minimum=2,
                        maximum=MAX_ROAD_STEPS),
                Setting("road_noise", 0.01, float, "ROAD imputation noise, normalised units", minimum=0.0,
                        maximum=1e3))
    subset = "road_images"
    count = "n_road"
    cost = "2 x road_steps forwards and sparse solves per image"

    def score(self, ctx: Scoring) -> Scores:
        s = ctx.settings
        rc = road_curves(ctx.model, ctx.images, ctx.maps, ctx.classes, patch_size=ctx.model.patch_size,
                         steps=s["road_steps"], noise=s["road_noise"], seed=s["seed"], batch_size=s["batch_size"],
                         image_ids=ctx.positions)
        return Scores({"road_morf_aoc": rc.morf_aoc, "road_lerf_auc": rc.lerf_auc}, rc.protocol)


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
    settings = (_SUBSAMPLE,)
    subset = "subsample"
    count = "n_class_switch"
    redraws = True

    def score(self, ctx: Scoring) -> Scores:
        out = {f.key: np.full(len(ctx), np.nan) for f in self.figures}
        if ctx.negatives is None or ctx.negative_labels is None:
            return Scores(out)
        which, classes = switch_classes(ctx.classes, list(ctx.negative_labels))
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

    def score_row(self, model, images, classes, method, options, settings, maps_of):
        num_classes = getattr(getattr(model, "config", None), "num_classes", None)
        if num_classes is None:
            num_classes = 2 if classes is None else int(classes.max()) + 1
        report = sanity_report(model, images, maps_of, None if classes is None else torch.as_tensor(classes),
                               num_classes=num_classes, seed=settings["seed"])
        figures = {"sanity_randomised_spearman": report["randomised_spearman"],
                   "sanity_randomised_ssim": report["randomised_ssim"],
                   "sanity_random_logit_spearman": None if report["random_logit"] is None else
                   report["random_logit"]["spearman"]["mean"]}
        return figures, report

