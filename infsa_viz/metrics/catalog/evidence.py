"""The evidence metric (in-distribution interventions on scene objects), declared for the registry."""

from __future__ import annotations

import numpy as np

from ..evidence import evidence_scores
from ..registry import Figure, Metric, Scores, Scoring, register_metric
from ._common import copies_estimate, quiet

__all__ = ['Evidence']


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
               ceiling="evidence_oracle",
               description="the map ranks the objects as their removal hurts the model"),
        Figure("evidence_kendall", "evidence Kendall tau", True, "Kendall's tau-b over objects", ranked=False,
               ceiling="evidence_oracle", description="the same ranking, by Kendall's tau-b"),
        Figure("evidence_mass_accuracy", "evidence mass accuracy", True, "histogram intersection", percent=True,
               ceiling="evidence_oracle", image_format=".3f",
               description="overlap of the map's per-object mass shares (per pixel) with the model's evidence shares"),
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
    requires = {"scenes": "scene objects (their masks and in-distribution removals, from a generated benchmark "
                          "such as --data cluttered-digits)"}

    def estimate(self, work, settings):
        # the objects' importance: (objects + 1) renders per image, scored batch_size at a time (4 objects
        # in the shipped benchmarks), and the objects' (B, O, H, W) masks
        return copies_estimate(work, settings["batch_size"], 5, extra=4.0 * work.batch * work.pixels)
    _KEYS = {"evidence_spearman": "evidence_spearman", "evidence_kendall": "evidence_kendall",
             "evidence_mass_accuracy": "evidence_mass_accuracy", "top_object_agreement": "top_object_agreement",
             "mask_relevance_mass_accuracy": "relevance_mass_accuracy",
             "mask_relevance_rank_accuracy": "relevance_rank_accuracy"}

    def score(self, ctx: Scoring) -> Scores:
        truth = ctx.truth
        if not truth.has_evidence:
            return Scores({f.key: np.full(len(ctx), np.nan) for f in self.figures},
                          {"undefined": "the data has no scenes (object masks): evidence figures are not measured"})
        with quiet():
            found = evidence_scores(ctx.maps, truth.masks, truth.importance)
        return Scores({figure: found[key] for figure, key in self._KEYS.items()},
                      {"objects": list(truth.objects), "importance": "probability drop, clipped at 0",
                       "comparison": "per-object density (positive mass per visible pixel), nearest upsampling"},
                      curves={"importance": np.asarray(truth.importance, dtype=np.float64)})
