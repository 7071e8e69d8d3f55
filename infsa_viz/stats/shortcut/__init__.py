"""The shortcut test's statistics: does a map reveal what a trained model relies on?

The cue shares are measured by :mod:`infsa_viz.evaluation.shortcut` (one model at a time); here
they are judged over models:

* :mod:`.detection`: detection AUROC with its interval, held-out false-positive rate, factor R²;
* :mod:`.analysis`: the tables over models (:func:`shortcut_tables`).
"""

from .analysis import EDGE, SETTINGS, ModelEntry, distinct_maps, shortcut_tables
from .detection import clopper_pearson, detection_auroc, factor_r2, held_out_detection

__all__ = ["EDGE", "SETTINGS", "ModelEntry", "clopper_pearson", "detection_auroc", "distinct_maps", "factor_r2",
           "held_out_detection", "shortcut_tables"]
