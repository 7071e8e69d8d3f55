"""Hand-made :class:`~infsa_viz.evaluation.ImageRecord` objects for the comparison and verdict tests."""

from __future__ import annotations

import math

import numpy as np

from infsa_viz.evaluation import ImageRecord


def image_record(model: str, method: str, index: int, *, morf: float, pr: float, label: int = 0,
                 predicted: int = 0, variant: str = "softmax") -> ImageRecord:
    """One image's record with the given MoRF-AOC and box PR-AUC (also its box ROC-AUC)."""
    logits = np.zeros(3)
    logits[predicted] = 1.0
    nan = math.nan
    figures = {"morf_aoc": morf, "lerf_auc": nan, "aopc": nan, "box_roc_auc": pr, "box_pr_auc": pr,
               "distractor_roc_auc": nan, "positive_fraction": 0.1, "pointing_hit": nan}
    return ImageRecord(model=model, variant=variant, method=method, index=index, name=str(index), label=label,
                       logits=logits, target=None, explained=label, figures=figures,
                       curves={"morf": np.ones(3), "lerf": np.ones(3), "precision": np.full(3, nan)},
                       map_min=0.0, map_max=1.0, map_mass=1.0)
