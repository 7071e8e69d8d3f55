"""``infsa-viz explain IMAGE --model DIR --method M --out overlay.png``.

``--check-conservation`` (with ``--method attn_lrp``) also measures how much relevance each stage of
the AttnLRP pass conserves (:func:`infsa_viz.maps.conservation.relevance_conservation`), in float64 and
in float32: per block, the relevance in and out, what the biases and (for softmax) AttnLRP's softmax
rule absorb, the raw relative error and the error once those measured sinks are counted; it is
written to the settings JSON and printed on stdout with the summary.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from ._inputs import IMAGE_HELP, MODEL_HELP, add_map_options, add_prompt_options
from .lists import output_file

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("image", metavar="IMAGE", help=IMAGE_HELP)
    parser.add_argument("--model", required=True, metavar="MODEL", help=MODEL_HELP)
    parser.add_argument("--method", required=True, help="map method (see infsa_viz.maps.METHODS)")
    parser.add_argument("--out", type=output_file, required=True,
                        help="output PNG (a JSON with the settings is written next to it)")
    parser.add_argument("--check-conservation", action="store_true",
                        help="with --method attn_lrp: report the relative relevance conservation error of every "
                             "block and of the whole pass (float64 and float32), with what biases and softmax absorb")
    add_map_options(parser)
    add_prompt_options(parser)


def run(args: argparse.Namespace) -> int:
    from ..maps.relevance import AttnLRP
    from .compare import render

    args.models, args.methods = (args.model,), (args.method,)
    if not args.check_conservation:
        return render(args)
    if args.method != AttnLRP.name:
        raise ValueError(f"--check-conservation applies to --method {AttnLRP.name} (the relevance it checks is "
                         f"AttnLRP's), not to --method {args.method}")
    return render(args, extra=_conservation)


def _conservation(record: Any, result: Any) -> dict[str, Any]:
    """The conservation of the AttnLRP pass behind ``result`` (the record's one image), in both precisions."""
    from ..maps.conservation import relevance_conservation

    out = {}
    for dtype in ("float64", "float32"):
        report = relevance_conservation(record, dtype=dtype)
        out[dtype] = report.for_image(0)
        logger.info("AttnLRP conservation (%s): largest block error %.3g raw, %.3g with the measured sinks counted",
                    dtype, report.max_error(accounted=False), report.max_error())
    return {"conservation": out}
