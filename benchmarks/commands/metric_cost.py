"""``python -m benchmarks metric-cost``: milliseconds per image of every registered metric, side by side."""

from __future__ import annotations

import argparse
import json

from .. import command_line

#: The models timed: the shipped softmax model (48 px, 36 patches) and a hard-benchmark seed (96 px, 144).
MODELS = {"cluttered-digits (softmax-vit4)": ("models/softmax-vit4", "cluttered-digits"),
          "cluttered-digits-hard (softmax-seed1)": ("models/seeds/cluttered-digits-hard/softmax-seed1",
                                                    "cluttered-digits-hard")}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n-images", type=int, default=20, help="images per model (default 20)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per case, median (default 3)")
    parser.add_argument("--out", required=True, help="JSON report (e.g. metrics/bench-metric-cost.json)")


def run(args: argparse.Namespace) -> int:
    from infsa_viz.io import write_json

    from ..metric_cost import metric_cost

    if not 1 <= args.n_images <= 2000 or not 1 <= args.repeats <= 100:
        raise ValueError(f"--n-images={args.n_images} must lie in [1, 2000] and --repeats={args.repeats} in [1, 100]")
    report = metric_cost(MODELS, n_images=args.n_images, repeats=args.repeats)
    report["protocol"]["command"] = command_line(args)
    write_json(args.out, report)
    print(json.dumps({k: v["ms_per_image"] for k, v in report["models"].items()}, indent=1))
    return 0
