"""Shared pieces of the built-in metric declarations: bounds and the quiet context."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from .._checks import UndefinedMetricWarning
from ..registry import Setting

__all__ = ["MAX_ROAD_STEPS", "MAX_STEPS", "SUBSAMPLE", "quiet"]

#: Upper bounds of step counts: each step is one perturbed forward per image, held in memory at once.
MAX_STEPS = 1000
MAX_ROAD_STEPS = 100

#: The image subset shared by deletion/insertion, positive/negative perturbation, the class switch and the
#: FunnyBirds checks.
SUBSAMPLE = Setting("subsample", 100, int, "deletion/insertion, positive/negative perturbation, the class "
                    "switch and the FunnyBirds checks on images with index < N (0 = off)", minimum=0, maximum=10**7)


@contextmanager
def quiet() -> Iterator[None]:
    """Undefined images are ``nan`` in the records and counted in the rows, not warned per chunk."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        yield
