"""Shared CLI inputs: images (a file or ``test:INDEX``) and map options."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import numpy as np
from torch import Tensor


@dataclass
class InputImage:
    """A prepared model input plus what to draw: the display image and known boxes."""

    tensor: Tensor  # (1, C, S, S)
    display: np.ndarray  # uint8 (S, S) or (S, S, 3)
    boxes: np.ndarray | None
    distractor_boxes: np.ndarray | None
    label: int | None
    name: str


def add_map_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--layer", type=int, default=None, help="layer for per-layer methods (default: last)")
    parser.add_argument("--head", default=None, help="head index or 'mean' for per-layer methods")
    parser.add_argument("--gamma", type=float, default=None, help="discount for visits/neumann")
    parser.add_argument("--scale", default="shared", choices=("shared", "raw", "per-map"),
                        help="colour scale across maps (default shared: one scale after mass normalisation)")
    parser.add_argument("--alpha", type=float, default=0.5, help="overlay opacity (default 0.5)")
    parser.add_argument("--colormap", default="inferno")


def map_options(args: argparse.Namespace, method: str) -> dict[str, Any]:
    """The subset of --layer/--head/--gamma that ``method`` accepts (others are refused)."""
    from ..maps import check_method

    accepted = check_method(method).options
    given = {"layer": args.layer, "head": args.head, "gamma": args.gamma}
    options = {}
    for key, value in given.items():
        if value is None:
            continue
        if key not in accepted:
            raise ValueError(f"--{key} does not apply to method {method!r}")
        if key == "head" and value != "mean":
            try:
                value = int(value)
            except ValueError:
                raise ValueError(f"--head={value!r} must be an integer or 'mean'") from None
        options[key] = value
    return options


def load_input(spec: str, *, in_chans: int, size: int) -> InputImage:
    """``test:INDEX`` (cluttered-digits test split, with boxes) or an image file path."""
    from ..images import prepare_image, read_image

    if spec.startswith("test:"):
        from ..data import generate_cluttered
        from ..train import TEST_SEED

        try:
            index = int(spec[5:])
        except ValueError:
            raise ValueError(f"IMAGE={spec!r}: expected test:INDEX with an integer index") from None
        if not 0 <= index < 2000:
            raise ValueError(f"IMAGE={spec!r}: index must lie in [0, 2000)")
        sample = generate_cluttered(index + 1, split="test", seed=TEST_SEED)
        image = sample.images[index]
        if size != image.shape[0]:
            raise ValueError(f"IMAGE={spec!r} is {image.shape[0]}x{image.shape[0]}; the model expects {size}x{size}")
        tensor, display = prepare_image(image, in_chans=in_chans, size=size)
        return InputImage(tensor, display, sample.target_boxes[index][None], sample.distractor_boxes[index],
                          int(sample.labels[index]), spec)
    tensor, display = prepare_image(read_image(spec), in_chans=in_chans, size=size)
    return InputImage(tensor, display, None, None, None, spec)
