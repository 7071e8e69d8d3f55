"""The shortcut test's measurements: how much of each map sits on the cue a trained model may rely on.

On cued digits (:mod:`infsa_viz.data.cued`) models of each variant are trained with the cue useless
(``p10``) and with the cue a shortcut (``p100``), paired by seed. A map that reveals reliance puts
more of its weight on the cue in the shortcut model than in the useless-cue model of the same seed.

* :mod:`.salience`: the cue at other saliences (faint, large, absent) and the cue's region;
* :mod:`.measure`: one model's cue shares for every map at every salience, the cue's measured
  evidence, and which maps are identical (:func:`identical_maps`).

The statistics over models (detection AUROC, the tables) are :mod:`infsa_viz.stats.shortcut`'s;
``scripts/shortcut.py`` runs both on the committed seed models (``metrics/shortcut-cued-digits.json``).
"""

from .measure import IDENTICAL_TOLERANCE, ModelCueShares, cue_share, identical_maps, measure_model
from .salience import CUE, SALIENCE, Salience, cue_regions, salient_scene

__all__ = ["CUE", "IDENTICAL_TOLERANCE", "SALIENCE", "ModelCueShares", "Salience", "cue_regions", "cue_share",
           "identical_maps", "measure_model", "salient_scene"]
