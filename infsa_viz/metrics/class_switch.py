"""Class-switch test (ours): explain the class of a distractor digit instead of the label.

Cluttered digits carry labelled distractors. A map that explains a class should then move its
mass from the target's box to that distractor's box. Per image: the positive-mass shares
(:func:`~infsa_viz.metrics.box_mass_share`) of the target box and of the distractor's box, for
the map of the label and for the map of the distractor's class; the shift is the gain of the
distractor box minus the change of the target box, ``(d₁ − d₀) − (t₁ − t₀)`` in ``[−2, 2]``
(``0`` for a map that ignores the class).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ._checks import UndefinedMetricWarning
from .mass import box_mass_share

__all__ = ["class_switch", "switch_classes"]


def switch_classes(labels: Any, distractor_labels: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per image the first distractor whose class differs from the label: ``(index, class)``,
    ``(-1, -1)`` where none does.

    Args:
        labels: ``(B,)`` labels.
        distractor_labels: per image ``(K_i,)`` distractor classes.
    """
    index = np.full(len(labels), -1, dtype=np.int64)
    classes = np.full(len(labels), -1, dtype=np.int64)
    for i, (label, others) in enumerate(zip(labels, distractor_labels, strict=True)):
        differ = np.flatnonzero(np.asarray(others) != label)
        if differ.size:
            index[i], classes[i] = differ[0], np.asarray(others)[differ[0]]
    return index, classes


def class_switch(maps_label: Any, maps_switched: Any, target_boxes: Any, distractor_boxes: Any, *,
                 image_size: int | tuple[int, int]) -> dict[str, np.ndarray]:
    """Mass shares and shift of each image's label map and switched map.

    Args:
        maps_label: ``(B, h, w)`` maps explaining the label.
        maps_switched: ``(B, h, w)`` maps explaining the distractor's class.
        target_boxes: per image the target box(es).
        distractor_boxes: per image the chosen distractor's box.
        image_size: ``(H, W)`` the boxes refer to.

    Returns:
        ``target_before``, ``target_after``, ``distractor_before``, ``distractor_after`` and
        ``shift`` ``(B,)`` (``nan`` where a map has no positive mass).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        t0 = box_mass_share(maps_label, target_boxes, image_size=image_size)
        t1 = box_mass_share(maps_switched, target_boxes, image_size=image_size)
        d0 = box_mass_share(maps_label, distractor_boxes, image_size=image_size)
        d1 = box_mass_share(maps_switched, distractor_boxes, image_size=image_size)
    return {"target_before": t0, "target_after": t1, "distractor_before": d0, "distractor_after": d1,
            "shift": (d1 - d0) - (t1 - t0)}
