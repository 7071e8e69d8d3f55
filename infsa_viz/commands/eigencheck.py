"""``infsa-viz eigencheck``: cosine between Linear-InfSA's ``a`` and the Perron vector of ``Â``.

Writes one JSON file (atomically) with the protocol, per layer × head statistics (undefined
cosines counted by reason), overall figures, a Gaussian baseline and the resolved settings, on
the first ``--n-images`` images of ``--data`` (default the cluttered-digits test split). ``--threads`` (a common
option of every command) also limits numpy's BLAS threads.
"""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path

from ._inputs import MODEL_HELP, add_data_options, load_data
from .lists import comma_ints, output_file

logger = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, metavar="MODEL", help=MODEL_HELP)
    add_data_options(parser, n_images=256)
    parser.add_argument("--layers", type=comma_ints, default=None, metavar="L",
                        help="comma-separated layer indices, e.g. 0,2 (default all)")
    parser.add_argument("--batch-size", type=int, default=32, metavar="B",
                        help="images per forward pass (default 32)")
    parser.add_argument("--out", type=output_file, required=True, metavar="FILE.json",
                        help="where to write the JSON result")


def run(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from ..estimate import Estimate, Workload
    from ..evaluation.budget import check_call, cli_option
    from ..formats import load_model
    from ..io import write_json
    from ..preprocess import preprocess
    from ..progress import progress
    from ..spectral.eigencheck import eigencheck

    if args.batch_size < 1:
        raise ValueError(f"--batch-size={args.batch_size} must be a positive integer")
    if args.layers is not None and (not args.layers or min(args.layers) < 0):
        raise ValueError(f"--layers={args.layers} must list one or more indices >= 0")
    out = Path(args.out)
    if out.suffix.lower() != ".json":
        raise ValueError(f"--out={str(out)!r} must be a .json file")
    if not out.parent.is_dir():
        raise ValueError(f"--out={str(out)!r}: folder {str(out.parent)!r} does not exist")
    limit = nullcontext()
    if args.threads is not None:
        from threadpoolctl import threadpool_limits

        limit = threadpool_limits(limits=args.threads)
    model = load_model(args.model)
    work = Workload.of(model, batch=min(args.batch_size, max(args.n_images, 1)))
    if work is not None:  # before the images are read: dense float64 Â and two eigenproblems per batch
        check_call(lambda w: Estimate(w.forward() + w.capture() + w.square(4, itemsize=8),
                                      "every layer's q, k and a dense float64 (B, H, N, N) A_hat with its left and "
                                      "right eigenproblems", lower="a smaller input (fewer tokens)"),
                   work, f"eigencheck of {args.model!r}", cli_option, option="batch_size")
    data = load_data(args, [(args.model, model)])
    batches = math.ceil(len(data) / args.batch_size)
    with limit:
        result = eigencheck(
            model, preprocess(model, data.images), layers=args.layers, batch_size=args.batch_size,
            data=data.description,
            progress=lambda starts: progress(starts, desc="eigencheck", total=batches, unit="batch"),
        )
    result["settings"] = {"model": str(args.model), "data": args.data, "n_images": len(data), "layers": args.layers,
                          "batch_size": args.batch_size, "threads": args.threads, "out": str(out),
                          "config": model.config.to_dict(), "command": "infsa-viz " + " ".join(args.argv)}
    write_json(out, result)
    overall = result["overall"]["left"]
    logger.info("eigencheck: left-Perron cosine mean %s (%s undefined: %s) -> %s",
                overall["mean"], overall["nan"], overall["undefined"], out)
    return 0
