"""The shortcut test: does a map reveal what a trained model relies on?

On cued digits (:mod:`infsa_viz.data.cued`) models of each variant are trained with the cue useless
(``p10``) and with the cue a shortcut (``p100``), paired by seed. A map that reveals reliance puts
more of its weight on the cue in the shortcut model than in the useless-cue model of the same seed.

* :mod:`.salience`: the cue at other saliences (faint, large, absent) and the cue's region;
* :mod:`.measure`: one model's cue shares for every map at every salience, the cue's measured
  evidence, and which maps are identical (:func:`identical_maps`);
* :mod:`.stats`: detection AUROC with its interval, held-out false-positive rate, factor R²;
* :mod:`.analysis`: the tables over models (:func:`shortcut_tables`).

``scripts/shortcut.py`` runs it on the committed seed models (``metrics/shortcut-cued-digits.json``).
"""

from .analysis import EDGE, SETTINGS, ModelEntry, distinct_maps, shortcut_tables
from .measure import IDENTICAL_TOLERANCE, ModelCueShares, cue_share, identical_maps, measure_model
from .salience import CUE, SALIENCE, Salience, cue_regions, salient_scene
from .stats import clopper_pearson, detection_auroc, factor_r2, held_out_detection

__all__ = ["CUE", "EDGE", "IDENTICAL_TOLERANCE", "SALIENCE", "SETTINGS", "ModelCueShares", "ModelEntry", "Salience",
           "clopper_pearson", "cue_regions", "cue_share", "detection_auroc", "distinct_maps", "factor_r2",
           "held_out_detection", "identical_maps", "measure_model", "salient_scene", "shortcut_tables"]
