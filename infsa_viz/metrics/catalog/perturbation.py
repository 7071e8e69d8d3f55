"""Deletion / insertion, positive / negative perturbation and ROAD, declared for the registry."""

from __future__ import annotations

from ..insertion import deletion_insertion, positive_negative_perturbation
from ..registry import Figure, Metric, Scores, Scoring, Setting, register_metric
from ..road import road_curves
from ._common import MAX_ROAD_STEPS, MAX_STEPS, SUBSAMPLE, copies_estimate

__all__ = ['DeletionInsertionMetric', 'PositiveNegativeMetric', 'ROAD']


@register_metric
class DeletionInsertionMetric(Metric):
    """Deletion / insertion (Petsiuk, Das & Saenko, RISE, BMVC 2018): the probability of the explained
    class as patches are replaced by a blurred copy in map order (deletion, lower is better) or put
    back into the blurred copy (insertion, higher is better), as areas under the curve. The blur
    keeps the perturbed images closer to the data than a constant fill."""

    name = "deletion_insertion"
    category = "faithfulness"
    citation = "Petsiuk, Das & Saenko, RISE, BMVC 2018"
    rule = "probability AUC as patches are deleted (to a blurred copy) or inserted (into it) in map order"
    figures = (Figure("deletion_auc", "deletion AUC", False, "probability AUC", percent=True),
               Figure("insertion_auc", "insertion AUC", True, "probability AUC", percent=True))
    settings = (SUBSAMPLE,
                Setting("insertion_steps", 20, int, "deletion/insertion steps", minimum=1, maximum=MAX_STEPS),
                Setting("blur_sigma", None, float, "deletion/insertion blur sigma in pixels (default patch_size / 2)",
                        minimum=1e-6, maximum=1e4, optional=True))
    subset = "subsample"
    count = "n_subsample"
    cost = "2 x (insertion_steps + 1) forwards per image"

    def estimate(self, work, settings):
        return copies_estimate(work, settings["batch_size"], 2 * (settings["insertion_steps"] + 1),
                               extra=8.0 * work.batch * work.pixels)  # the blurred copy

    def score(self, ctx: Scoring) -> Scores:
        s = ctx.settings
        di = deletion_insertion(ctx.model, ctx.images, ctx.maps, ctx.explained, patch_size=ctx.model.patch_size,
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
    settings = (SUBSAMPLE,)
    subset = "subsample"
    cost = "2 x 10 forwards per image"

    def estimate(self, work, settings):
        return copies_estimate(work, settings["batch_size"], 20)

    def score(self, ctx: Scoring) -> Scores:
        s = ctx.settings
        pn = positive_negative_perturbation(ctx.model, ctx.images, ctx.maps, ctx.explained,
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

    def estimate(self, work, settings):
        # the imputation: one sparse system per image of about 9 entries per pixel (values and indices)
        return copies_estimate(work, settings["batch_size"], 2 * settings["road_steps"],
                               extra=2 * 9 * 16.0 * work.pixels)

    def score(self, ctx: Scoring) -> Scores:
        s = ctx.settings
        rc = road_curves(ctx.model, ctx.images, ctx.maps, ctx.explained, patch_size=ctx.model.patch_size,
                         steps=s["road_steps"], noise=s["road_noise"], seed=s["seed"], batch_size=s["batch_size"],
                         image_ids=ctx.positions)
        return Scores({"road_morf_aoc": rc.morf_aoc, "road_lerf_auc": rc.lerf_auc}, rc.protocol)
