"""Datasets of infsa-viz: packaged MNIST digits, cluttered digits, bring-your-own image folders.

Box convention everywhere in this package: ``(x0, y0, x1, y1)`` in pixels with ``x1``/``y1``
exclusive, so a box covers ``image[y0:y1, x0:x1]``.
"""

from .cluttered import (
    PIXEL_MEAN,
    PIXEL_STD,
    ClutteredDigits,
    ClutteredDigitsConfig,
    ClutteredSample,
    cluttered_epoch,
    denormalize,
    generate_cluttered,
    to_tensor,
)
from .folder import FolderDataset, parse_voc_boxes
from .mnist import load_mnist_digits

__all__ = [
    "PIXEL_MEAN",
    "PIXEL_STD",
    "ClutteredDigits",
    "ClutteredDigitsConfig",
    "ClutteredSample",
    "FolderDataset",
    "cluttered_epoch",
    "denormalize",
    "generate_cluttered",
    "load_mnist_digits",
    "parse_voc_boxes",
    "to_tensor",
]
