"""Attribution metrics: MoRF / LeRF patch-removal curves and their scores, box ROC-AUC /
PR-AUC and the pointing game, each returned with its resolved protocol; deletion / insertion,
positive / negative perturbation, ROAD, mass-based localisation, evidence metrics against the
objects a model used, FunnyBirds-style part checks, the greedy deletion oracle and a beam-search
estimate of MoRF's ceiling, complexity, sanity checks, the class-switch test and a multi-criteria
ranking. Every metric the evaluation computes is declared once in the registry (:mod:`.registry`;
the built-in declarations are in :mod:`.catalog`).

Plain functions over maps ``(B, h, w)`` on the ViT patch grid (or pixel maps ``(B, H, W)`` for
the localisation metrics). OpenCV and scikit-learn are imported by the functions that use them.
"""

from ._checks import UndefinedMetricWarning
from .beam_deletion import BeamDeletion, beam_deletion, beam_forwards
from .class_switch import class_switch, switch_classes
from .evidence import (
    EVIDENCE_FIGURES,
    RankCorrelation,
    evidence_mass_accuracy,
    evidence_oracle,
    evidence_rank_correlation,
    evidence_scores,
    object_density,
    object_mass,
    top_object_agreement,
)
from .funnybirds import background_independence, completeness_checks, target_sensitivity
from .greedy_deletion import GreedyDeletion, greedy_deletion, greedy_forwards
from .insertion import (
    DeletionInsertion,
    PositiveNegative,
    deletion_insertion,
    positive_negative_perturbation,
)
from .localisation import (
    RECALL_GRID,
    BoxAUCResult,
    BoxCurve,
    PointingResult,
    box_auc,
    box_curves,
    pointing_game,
)
from .mass import (
    box_mass_share,
    complexity,
    energy_pointing_game,
    mask_mass_share,
    mask_rank_accuracy,
    relevance_rank_accuracy,
)
from .perturbation import PerturbationCurves, perturbation_curves, removal_order
from .protocol import BoxAUCProtocol, PerturbationProtocol, PointingProtocol
from .ranking import rank_methods
from .road import ROADCurves, noisy_linear_imputation, road_curves
from .sanity import (
    FAIL_THRESHOLD,
    cascading_randomisation,
    map_similarity,
    random_other_class,
    sanity_report,
    spearman,
    ssim,
)
from .scores import CurveScore, aopc, lerf_auc, morf_aoc
from .upsample import boxes_to_mask, upsample_map
from .registry import (
    FIGURES,
    METRICS,
    SETTINGS,
    Figure,
    Metric,
    RowMetric,
    RowScoring,
    Scores,
    Scoring,
    Setting,
    check_metric,
    default_metrics,
    register_metric,
)
from . import catalog  # noqa: F401, E402  (registers the built-in metrics, in table order)

__all__ = [
    "EVIDENCE_FIGURES",
    "FAIL_THRESHOLD",
    "FIGURES",
    "METRICS",
    "RECALL_GRID",
    "SETTINGS",
    "Figure",
    "Metric",
    "RowMetric",
    "Scores",
    "RowScoring",
    "Scoring",
    "Setting",
    "check_metric",
    "default_metrics",
    "register_metric",
    "BoxAUCProtocol",
    "BeamDeletion",
    "BoxAUCResult",
    "BoxCurve",
    "CurveScore",
    "DeletionInsertion",
    "GreedyDeletion",
    "PerturbationCurves",
    "PerturbationProtocol",
    "PointingProtocol",
    "PointingResult",
    "PositiveNegative",
    "ROADCurves",
    "RankCorrelation",
    "UndefinedMetricWarning",
    "aopc",
    "background_independence",
    "beam_deletion",
    "beam_forwards",
    "box_auc",
    "box_curves",
    "box_mass_share",
    "boxes_to_mask",
    "cascading_randomisation",
    "class_switch",
    "completeness_checks",
    "complexity",
    "deletion_insertion",
    "energy_pointing_game",
    "evidence_mass_accuracy",
    "evidence_oracle",
    "evidence_rank_correlation",
    "evidence_scores",
    "greedy_deletion",
    "greedy_forwards",
    "lerf_auc",
    "map_similarity",
    "mask_mass_share",
    "mask_rank_accuracy",
    "morf_aoc",
    "noisy_linear_imputation",
    "object_density",
    "object_mass",
    "perturbation_curves",
    "pointing_game",
    "positive_negative_perturbation",
    "random_other_class",
    "rank_methods",
    "relevance_rank_accuracy",
    "removal_order",
    "road_curves",
    "sanity_report",
    "spearman",
    "ssim",
    "switch_classes",
    "target_sensitivity",
    "top_object_agreement",
    "upsample_map",
]
