"""Shared CLI inputs: one image (a file or ``test:INDEX``), map selectors and drawing options."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from .lists import comma_names


def add_map_options(parser: argparse.ArgumentParser) -> None:
    """``--layer``, ``--head``, ``--gamma``, ``--target`` and the drawing options."""
    from ..overlay import COLORMAPS, SCALES

    parser.add_argument("--layer", type=int, default=None, help="layer for per-layer methods (default: last)")
    parser.add_argument("--head", default=None, help="head index or 'mean' for per-layer methods")
    parser.add_argument("--gamma", type=float, default=None, help="discount for visits/neumann")
    parser.add_argument("--target", default="predicted", metavar="predicted|label|CLASS",
                        help="class explained by gradient methods (default: the prediction; label needs "
                             "a test:INDEX image)")
    parser.add_argument("--scale", default="shared", choices=SCALES,
                        help="colour scale across maps (default shared: one scale after dividing each map "
                             "by its absolute mass)")
    parser.add_argument("--alpha", type=float, default=0.5, help="overlay opacity (default 0.5)")
    parser.add_argument("--colormap", default="inferno", choices=COLORMAPS)


def add_model_list(parser: argparse.ArgumentParser, *, help: str) -> None:
    parser.add_argument("--models", required=True, type=comma_names, metavar="DIR[,DIR…]", help=help)


def resolve_target(text: str, label: int) -> int | None:
    """``--target``: ``None`` (explain the prediction), the image's label, or a class index."""
    if text == "predicted":
        return None
    if text == "label":
        if label < 0:
            raise ValueError("--target=label needs an image with a label (test:INDEX); this one has none")
        return label
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--target={text!r} must be 'predicted', 'label' or a class index") from None


def load_input(spec: str) -> Any:
    """``test:INDEX`` (the cluttered-digits test split, with label and boxes) or an image file."""
    from ..data import TEST_SIZE, LabelledImages, test_split
    from ..images import read_image

    if spec.startswith("test:"):
        try:
            index = int(spec[5:])
        except ValueError:
            raise ValueError(f"IMAGE={spec!r}: expected test:INDEX with an integer index") from None
        if not 0 <= index < TEST_SIZE:
            raise ValueError(f"IMAGE={spec!r}: index must lie in [0, {TEST_SIZE})")
        return test_split().subset([index])
    return LabelledImages(images=[read_image(spec)], labels=np.array([-1]), boxes=[np.zeros((0, 4), np.int64)],
                          names=[spec], description={"name": "file", "path": spec})
