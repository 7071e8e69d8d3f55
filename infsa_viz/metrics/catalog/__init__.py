"""The built-in metrics, declared once each (:mod:`~infsa_viz.metrics.registry`).

One module per group; the import order below is the order of the evaluation table's columns and of
the ranking criteria. Each :meth:`~infsa_viz.metrics.registry.Metric.score` calls the plain metric
functions of :mod:`infsa_viz.metrics`; the figures are per image, ``nan`` where not measured.
"""

from ._common import MAX_ROAD_STEPS, MAX_STEPS
from .curves import PatchPerturbation
from .evidence import Evidence
from .localisation import BoxLocalisation, Complexity, MassLocalisation, Pointing
from .perturbation import ROAD, DeletionInsertionMetric, PositiveNegativeMetric
from .checks import ClassSwitch, Sanity
from .funnybirds import FunnyBirdsChecks, TargetSensitivityCheck

__all__ = ["MAX_ROAD_STEPS", "MAX_STEPS", "ROAD", "BoxLocalisation", "ClassSwitch", "Complexity",
           "DeletionInsertionMetric", "Evidence", "MassLocalisation", "PatchPerturbation", "Pointing",
           "PositiveNegativeMetric", "Sanity", "FunnyBirdsChecks", "TargetSensitivityCheck"]
