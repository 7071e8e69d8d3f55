"""Explanation maps: one registry (:data:`METHODS`), one verb (:func:`explain`)."""

from .attention_maps import attention_map, random_map, tokens_to_grid
from .captum_maps import CAPTUM_METHODS, captum_map, patch_feature_mask, pool_to_patches
from .registry import METHODS, SOFTMAX_GAMMA, MapMethod, MapResult, check_method, explain, explain_with_metadata

__all__ = [
    "CAPTUM_METHODS",
    "METHODS",
    "MapMethod",
    "MapResult",
    "SOFTMAX_GAMMA",
    "attention_map",
    "captum_map",
    "check_method",
    "explain",
    "explain_with_metadata",
    "patch_feature_mask",
    "pool_to_patches",
    "random_map",
    "tokens_to_grid",
]
