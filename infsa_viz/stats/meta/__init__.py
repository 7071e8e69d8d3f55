"""Meta-evaluation of the metrics, with controls: which figures can be trusted to tell a better map from
a worse one (:mod:`.core`: the tests; :mod:`.controls`: figures whose verdict is known; :mod:`.model`:
every registered figure of one model on a benchmark, against a parameter-randomised partner)."""

from .controls import CONTROLS, Control, control_values
from .core import (
    ALPHAS,
    NOISE_GRID,
    PAIR,
    REFERENCE_NOISE,
    FigureMeta,
    MetaEvaluation,
    Partner,
    blend,
    meta_evaluate,
    normalise,
    shift,
)
from .model import meta_evaluate_model, randomised_partner

__all__ = ["ALPHAS", "CONTROLS", "NOISE_GRID", "PAIR", "REFERENCE_NOISE", "Control", "FigureMeta", "MetaEvaluation",
           "Partner", "blend", "control_values", "meta_evaluate", "meta_evaluate_model", "normalise",
           "randomised_partner", "shift"]
