"""Box, pointing, mass and complexity metrics, declared for the registry."""

from __future__ import annotations

import numpy as np

from ..localisation import RECALL_GRID, ROC_GRID, box_auc, box_curves, pointing_game
from ..mass import complexity, energy_pointing_game, relevance_rank_accuracy
from ..registry import Curve, Figure, Metric, Scores, Scoring, register_metric
from ._common import quiet

__all__ = ['BoxLocalisation', 'Complexity', 'MassLocalisation', 'Pointing']


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
               image_format=".3f",
               description="map values rank the target box's pixels above the others (0.5 = chance)"),
        Figure("box_pr_auc", "box PR-AUC", True, "average precision", percent=True, ceiling="box_oracle",
               image_format=".3f",
               description="precision-recall of the same ranking (chance = the box's share of pixels)"),
        Figure("distractor_roc_auc", "distractor ROC-AUC", True, "AUC", percent=True, ranked=False,
               description="target pixels ranked above the distractors' pixels"),
        Figure("positive_fraction", "box share", None, "share of pixels", percent=True, ranked=False, table=False,
               description="share of target pixels: the PR-AUC of a constant map"),
    )

    curves = (
        Curve("roc", "box ROC", "roc", tuple(ROC_GRID.round(3)), "false-positive rate", "true-positive rate",
              figure="box_roc_auc", diagonal=True),
        Curve("precision", "box precision-recall", "pr", tuple(RECALL_GRID.round(3)), "recall", "precision",
              figure="box_pr_auc", mean="precision_mean", mean_x="recall"),
    )

    def score(self, ctx: Scoring) -> Scores:
        with quiet():
            auc = box_auc(ctx.maps, ctx.boxes, image_size=ctx.image_size, negatives_boxes=ctx.negatives)
        found = box_curves(ctx.maps, ctx.boxes, image_size=ctx.image_size)
        precision = np.stack([np.full(len(RECALL_GRID), np.nan) if c is None else c.interpolated_precision()
                              for c in found])
        roc = np.stack([np.full(len(ROC_GRID), np.nan) if c is None else c.tpr_at() for c in found])
        distractor = (np.full(len(ctx), np.nan) if auc.negatives_roc_auc is None else auc.negatives_roc_auc)
        return Scores({"box_roc_auc": auc.roc_auc, "box_pr_auc": auc.pr_auc, "distractor_roc_auc": distractor,
                       "positive_fraction": auc.positive_fraction}, auc.protocol,
                      curves={"precision": precision, "roc": roc})

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
                      ceiling="box_oracle", image_format="hit", description="the map's maximum falls in the target box"),)

    def score(self, ctx: Scoring) -> Scores:
        with quiet():
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
        with quiet():
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
