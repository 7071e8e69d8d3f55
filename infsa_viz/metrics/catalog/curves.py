"""MoRF / LeRF patch removal, declared for the registry."""

from __future__ import annotations

import numpy as np

from ..perturbation import perturbation_curves, perturbed_forwards, resolve_step_grid
from ..protocol import BASELINES, STEP_GRIDS
from ..registry import Curve, Figure, Metric, Scores, Scoring, Setting, register_metric
from ..scores import aopc, lerf_auc, morf_aoc
from ._common import MAX_STEPS, copies_estimate, quiet

__all__ = ['PatchPerturbation']


@register_metric
class PatchPerturbation(Metric):
    """MoRF / LeRF patch removal (Samek et al., IEEE TNNLS 2016). ViT patches are replaced by the
    baseline (the dataset mean by default) in the map's order, most relevant first (MoRF) or least
    relevant first (LeRF), over ``steps`` cumulative steps, and the probability of the explained class is
    read after each. MoRF-AOC is the area over ``p_k / p_0`` (higher: the map found what the model
    needs), LeRF-AUC the area under it (higher: the map's low end is truly unimportant), AOPC the
    mean drop. Both are averaged over the correctly classified images. The steps fall on the grid
    ``step_grid`` names: uniform fractions ``k/K``, or a cosine grid denser at both ends, which ``auto``
    (the default) takes with at most 10 steps on grids of more than 100 patches
    (:func:`~infsa_viz.metrics.perturbation.resolve_step_grid`); the grid and why it was chosen are stored
    with every result. A perturbed copy that several maps of the same images remove alike is scored once
    (the record's memo). Removal creates images the
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
        Curve("morf", "MoRF", "perturbation", "fractions", "share of patches removed", "p(explained class)",
              figure="morf_aoc", percent=(True, True), mean="morf_mean", mean_x="fractions"),
        Curve("lerf", "LeRF", "perturbation", "fractions", "share of patches removed", "p(explained class)",
              figure="lerf_auc", dash=True, percent=(True, True), mean="lerf_mean", mean_x="fractions"),
    )
    settings = (
        Setting("steps", 20, int, "MoRF/LeRF removal steps K (K + 1 points)", minimum=1, maximum=MAX_STEPS),
        Setting("step_grid", "auto", str, "MoRF/LeRF step grid: uniform (fractions k/K), cosine ((1 - cos(pi k/K))/2, "
                "denser at both ends) or auto (uniform up to 100 patches, cosine with at most 10 steps above)",
                choices=("auto", *STEP_GRIDS)),
        Setting("baseline", "mean", str, "what removed patches become (mean = 0 after normalisation)",
                choices=tuple(b for b in BASELINES if b != "zero")),
    )
    cost = "2 x (distinct partial steps) + 1 forwards per image, at most (copies shared between maps run once)"

    def estimate(self, work, settings):
        grid, steps, _ = resolve_step_grid(settings["step_grid"], settings["steps"], work.patches)
        return copies_estimate(work, settings["batch_size"], perturbed_forwards(steps, work.patches, grid))

    def score(self, ctx: Scoring) -> Scores:
        s = ctx.settings
        h, w = ctx.maps.shape[-2:]
        grid, steps, why = resolve_step_grid(s["step_grid"], s["steps"], int(h) * int(w))
        curves = perturbation_curves(ctx.model, ctx.images, ctx.maps, ctx.explained, patch_size=ctx.model.patch_size,
                                     order="both", steps=steps, step_grid=grid, baseline=s["baseline"],
                                     explained="target", seed=s["seed"], batch_size=s["batch_size"],
                                     logits=ctx.record.logits, memo=ctx.record.memo("perturbation"))
        with quiet():
            values = {"morf_aoc": morf_aoc(curves["morf"], select="all").per_image,
                      "lerf_auc": lerf_auc(curves["lerf"], select="all").per_image,
                      "aopc": aopc(curves["morf"], select="all").per_image}
        protocol = {k: v for k, v in curves["morf"].protocol.items() if k != "order"}
        protocol["step_grid_rule"] = why
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
