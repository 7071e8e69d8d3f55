"""``infsa-viz explain IMAGE --model DIR --method M --out overlay.png``."""

from __future__ import annotations

import argparse

from ._inputs import MODEL_HELP, add_map_options
from .lists import output_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("image", metavar="IMAGE", help="image file, or test:INDEX for the cluttered-digits test split")
    parser.add_argument("--model", required=True, metavar="MODEL", help=MODEL_HELP)
    parser.add_argument("--method", required=True, help="map method (see infsa_viz.maps.METHODS)")
    parser.add_argument("--out", type=output_file, required=True,
                        help="output PNG (a JSON with the settings is written next to it)")
    add_map_options(parser)


def run(args: argparse.Namespace) -> int:
    from .compare import render

    args.models, args.methods = (args.model,), (args.method,)
    return render(args)
