"""MoRF / LeRF patch removal, declared for the registry."""

from __future__ import annotations

import numpy as np

from ..perturbation import perturbation_curves
from ..protocol import BASELINES
from ..registry import Curve, Figure, Metric, Scores, Scoring, Setting, register_metric
from ..scores import aopc, lerf_auc, morf_aoc
from ._common import MAX_STEPS, copies_estimate, quiet

__all__ = ['PatchPerturbation']


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
               ceiling="greedy_deletion", image_format=".1f",
               description="area over the class probability as the most relevant patches go"),
        Figure("lerf_auc", "LeRF-AUC", True, "% of the area under p_k/p_0", images="scored", digits=3,
               image_format=".1f", description="area under the class probability as the least relevant patches go"),
        Figure("aopc", "AOPC", True, "probability", images="scored", ranked=False,
               description="average drop of the probability over the MoRF steps"),
    )
    curves = (
        Curve("morf", "MoRF", "perturbation", "fractions", "share of patches removed", "p(scored class)",
              figure="morf_aoc", percent=(True, True), mean="morf_mean", mean_x="fractions"),
        Curve("lerf", "LeRF", "perturbation", "fractions", "share of patches removed", "p(scored class)",
              figure="lerf_auc", dash=True, percent=(True, True), mean="lerf_mean", mean_x="fractions"),
    )
    settings = (
        Setting("steps", 20, int, "MoRF/LeRF removal steps K (K + 1 points)", minimum=1, maximum=MAX_STEPS),
        Setting("baseline", "mean", str, "what removed patches become (mean = 0 after normalisation)",
                choices=tuple(b for b in BASELINES if b != "zero")),
    )
    cost = "2 x (steps + 1) forwards per image"

    def estimate(self, work, settings):
        return copies_estimate(work, settings["batch_size"], 2 * (settings["steps"] + 1) + 1)

    def score(self, ctx: Scoring) -> Scores:
        s = ctx.settings
        curves = perturbation_curves(ctx.model, ctx.images, ctx.maps, ctx.classes, patch_size=ctx.model.patch_size,
                                     order="both", steps=s["steps"], baseline=s["baseline"], score="target",
                                     seed=s["seed"], batch_size=s["batch_size"], logits=ctx.record.logits)
        with quiet():
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
