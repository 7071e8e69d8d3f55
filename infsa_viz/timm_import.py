"""Moved to :mod:`infsa_viz.formats.timm` (the timm format of the format registry); kept importable."""

from .formats.timm import IMAGENET, from_timm_state_dict, to_timm_state_dict

__all__ = ["IMAGENET", "from_timm_state_dict", "to_timm_state_dict"]
