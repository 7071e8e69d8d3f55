"""``infsa-viz eigencheck``: cosine between Linear-InfSA's ``a`` and the Perron vector of ``Â``.

Writes one JSON file (atomically: temp file in the same folder + ``os.replace``) with the
protocol, per layer × head statistics, overall figures, a Gaussian baseline and the resolved
settings. ``--threads`` (a common option of every command) also limits numpy's BLAS threads. A
progress bar (batches) shows on stderr when it is a terminal (see :mod:`infsa_viz.progress`).
"""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path

HELP = "cosine between Linear-InfSA's estimate a and the dense left Perron vector of Â, per layer × head"

logger = logging.getLogger(__name__)


def _layers(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--layers={text!r} must be comma-separated integers, e.g. 0,1,3"
        ) from None
    if not values or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"--layers={text!r} must list one or more indices >= 0")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, metavar="DIR",
                        help="model directory (config.json + model.safetensors)")
    parser.add_argument("--n-images", type=int, default=256, metavar="K",
                        help="generated test images to check (default 256)")
    parser.add_argument("--layers", type=_layers, default=None, metavar="L",
                        help="comma-separated layer indices, e.g. 0,2 (default all)")
    parser.add_argument("--seed", type=int, default=0, metavar="S",
                        help="seed of the generated test images (default 0)")
    parser.add_argument("--batch-size", type=int, default=32, metavar="B",
                        help="images per forward pass (default 32)")
    parser.add_argument("--out", required=True, metavar="FILE.json", help="where to write the JSON result")


def run(args: argparse.Namespace) -> int:
    from contextlib import nullcontext

    from ..data import generate_cluttered, to_tensor
    from ..io import write_json
    from ..progress import progress
    from ..spectral.eigencheck import eigencheck
    from ..vit import load_model

    if args.n_images < 1:
        raise ValueError(f"--n-images={args.n_images} must be a positive integer")
    if args.batch_size < 1:
        raise ValueError(f"--batch-size={args.batch_size} must be a positive integer")
    out = Path(args.out)
    if out.suffix.lower() != ".json":
        raise ValueError(f"--out={str(out)!r} must be a .json file")
    if not out.parent.is_dir():
        raise ValueError(f"--out={str(out)!r}: folder {str(out.parent)!r} does not exist")
    threads = getattr(args, "threads", None)
    limit = nullcontext()
    if threads is not None:
        from threadpoolctl import threadpool_limits

        limit = threadpool_limits(limits=threads)
    model = load_model(args.model)
    images = to_tensor(generate_cluttered(args.n_images, split="test", seed=args.seed).images)
    data = f"generate_cluttered(n={args.n_images}, split='test', seed={args.seed})"
    batches = math.ceil(args.n_images / args.batch_size)
    with limit:
        result = eigencheck(
            model, images, layers=args.layers, batch_size=args.batch_size, seed=args.seed, data=data,
            progress=lambda starts: progress(starts, desc="eigencheck", total=batches, unit="batch"),
        )
    result["settings"] = {
        "model": str(args.model),
        "n_images": args.n_images,
        "layers": args.layers,
        "seed": args.seed,
        "batch_size": args.batch_size,
        "threads": threads,
        "out": str(out),
        "config": model.config.to_dict(),
    }
    write_json(out, result)
    overall = result["overall"]["left"]
    logger.info("eigencheck: left-Perron cosine mean %s, median %s, p5 %s over %d values -> %s",
                overall["mean"], overall["median"], overall["p5"], overall["count"], out)
    return 0
