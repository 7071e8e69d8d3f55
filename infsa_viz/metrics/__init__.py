"""Attribution metrics: MoRF / LeRF patch-removal curves and their scores, box ROC-AUC /
PR-AUC and the pointing game, each returned with its resolved protocol.

Plain functions over maps ``(B, h, w)`` on the ViT patch grid (or pixel maps ``(B, H, W)`` for
the localisation metrics). OpenCV and scikit-learn are imported by the functions that use them.
"""

from ._checks import UndefinedMetricWarning
from .localisation import RECALL_GRID, BoxAUCResult, BoxCurve, PointingResult, box_auc, box_curves, pointing_game
from .perturbation import PerturbationCurves, perturbation_curves, removal_order
from .protocol import BoxAUCProtocol, PerturbationProtocol, PointingProtocol
from .scores import CurveScore, aopc, lerf_auc, morf_aoc
from .upsample import boxes_to_mask, upsample_map

__all__ = [
    "RECALL_GRID",
    "BoxAUCProtocol",
    "BoxAUCResult",
    "BoxCurve",
    "CurveScore",
    "PerturbationCurves",
    "PerturbationProtocol",
    "PointingProtocol",
    "PointingResult",
    "UndefinedMetricWarning",
    "aopc",
    "box_auc",
    "box_curves",
    "boxes_to_mask",
    "lerf_auc",
    "morf_aoc",
    "perturbation_curves",
    "pointing_game",
    "removal_order",
    "upsample_map",
]
