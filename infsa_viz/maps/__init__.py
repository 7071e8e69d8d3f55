"""Explanation maps: one class per method, one registry (:data:`METHODS`), one verb (``attribute``).

Families: ``attention`` (a layer's attention row, rollout), ``spectral`` (expected visits,
the Neumann series across layers, Perron vectors, Linear-InfSA's estimate), ``gradient``
(Captum, optional), ``baseline`` (random: the floor) and ``reference`` (oracles built from the
images' ground truth: the ceilings of an evaluation). See :class:`MapMethod` for what each class states
about itself (options, cost, reference, whether it explains a class or has signed values).
:func:`relevance_conservation` measures how much relevance each block of an AttnLRP pass conserves.
"""

# Each module registers its methods on import; this order is the registry's order.
from . import attention  # noqa: F401, I001
from . import spectral  # noqa: F401
from . import gradient  # noqa: F401
from . import relevance  # noqa: F401
from . import flow  # noqa: F401
from . import baseline  # noqa: F401
from . import reference  # noqa: F401
from .attention import fuse_heads, rollout
from .conservation import ConservationReport, StageConservation, relevance_conservation
from .base import (
    FAMILIES,
    METHODS,
    ROLES,
    GroundTruth,
    MapMethod,
    MapResult,
    Validity,
    attribute,
    attribute_images,
    check_method,
    parse_head,
    selector_options,
    tokens_to_grid,
)
from .gradient import patch_feature_mask, pool_to_patches
from .spectral import UNLEARNED_GAMMA

__all__ = [
    "FAMILIES",
    "METHODS",
    "ROLES",
    "UNLEARNED_GAMMA",
    "ConservationReport",
    "GroundTruth",
    "MapMethod",
    "MapResult",
    "StageConservation",
    "Validity",
    "attribute",
    "attribute_images",
    "check_method",
    "fuse_heads",
    "parse_head",
    "patch_feature_mask",
    "pool_to_patches",
    "relevance_conservation",
    "rollout",
    "selector_options",
    "tokens_to_grid",
]
