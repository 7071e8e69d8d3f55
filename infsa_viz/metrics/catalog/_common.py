"""Shared pieces of the built-in metric declarations: bounds and the quiet context."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from ...estimate import Estimate, Workload
from .._checks import UndefinedMetricWarning
from ..registry import Setting

__all__ = ["MAX_ROAD_STEPS", "MAX_STEPS", "SUBSAMPLE", "copies_estimate", "quiet"]

#: Upper bounds of step counts: each step is one perturbed forward per image, held in memory at once.
MAX_STEPS = 1000
MAX_ROAD_STEPS = 100

#: The image subset shared by deletion/insertion, positive/negative perturbation, the class switch and the
#: FunnyBirds checks.
SUBSAMPLE = Setting("subsample", 100, int, "deletion/insertion, positive/negative perturbation, the class "
                    "switch and the FunnyBirds checks on images with index < N (0 = off)", minimum=0, maximum=10**7)


def copies_estimate(work: Workload, batch_size: int, copies: int, *, extra: float = 0.0) -> Estimate:
    """Perturbed copies scored ``batch_size`` at a time: one forward of the copies, the copies and
    their masks, and the clean inputs; ``copies`` model passes per image (the lowering option is
    ``--batch-size``)."""
    batch = work.with_batch(min(batch_size, work.batch * copies))
    return Estimate(batch.forward() + 12.0 * batch.batch * work.pixels + 8.0 * work.batch * work.pixels + extra,
                    "one forward of batch_size perturbed copies, their masks and the clean inputs",
                    forwards=copies, lower="a smaller batch_size (perturbed copies per forward; --batch-size)")


@contextmanager
def quiet() -> Iterator[None]:
    """Undefined images are ``nan`` in the records and counted in the rows, not warned per chunk."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        yield
