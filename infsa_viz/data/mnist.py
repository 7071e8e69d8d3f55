"""The real MNIST digits shipped with infsa-viz (``mnist_subset.npz``, see ``DATA_LICENSES.md``).

The file holds 8,000 digits from MNIST's training images (800 per class) and 2,000 from its test
images (200 per class); ``scripts/extract_mnist.py`` rebuilds it byte for byte from a registry package.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Literal

import numpy as np

__all__ = ["MNIST_RESOURCE", "Split", "load_mnist_digits"]

Split = Literal["train", "test"]
MNIST_RESOURCE = "mnist_subset.npz"
_SPLITS = ("train", "test")


def _check_split(split: object) -> None:
    if split not in _SPLITS:
        raise ValueError(f"split={split!r} is not supported; expected one of {_SPLITS}")


@functools.lru_cache(maxsize=2)
def load_mnist_digits(split: Split) -> tuple[np.ndarray, np.ndarray]:
    """Loads the packaged MNIST digits of one split (cached; the arrays are read-only).

    ``"train"`` digits come only from MNIST's training images and ``"test"`` digits only from
    its test images, so the two pools never share a digit.

    Args:
        split: ``"train"`` (8,000 digits) or ``"test"`` (2,000 digits).

    Returns:
        ``(images, labels)``: ``images`` is ``(M, 28, 28) uint8`` (white ink on black, as in
        MNIST), ``labels`` is ``(M,) int64`` in ``0..9``.

    Raises:
        ValueError: If ``split`` is not ``"train"`` or ``"test"``.

    Example:
        >>> images, labels = load_mnist_digits("test")
        >>> images.shape, labels.dtype
        ((2000, 28, 28), dtype('int64'))
    """
    _check_split(split)
    resource = resources.files(__package__).joinpath(MNIST_RESOURCE)
    with resources.as_file(resource) as path, np.load(path, allow_pickle=False) as npz:
        images = np.ascontiguousarray(npz[f"{split}_images"], dtype=np.uint8)
        labels = npz[f"{split}_labels"].astype(np.int64)
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels
