"""``infsa-viz accuracy``: re-evaluate trained models on their test split (metrics/training.json)."""

from __future__ import annotations

import argparse
import json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models", required=True, help="comma-separated model directories")
    parser.add_argument("--out", default=None, help="write the JSON report here (e.g. metrics/training.json)")


def run(args: argparse.Namespace) -> int:
    from ..io import write_json
    from ..train import training_report

    dirs = [d for d in args.models.split(",") if d]
    if not dirs:
        raise ValueError(f"--models={args.models!r} names no model directory")
    report = training_report(dirs)
    report["command"] = "infsa-viz " + " ".join(args.argv)
    if args.out:
        write_json(args.out, report)
    for row in report["results"]:
        print(f"{row['variant']:>13}  test accuracy {100 * row['test_accuracy']:.2f} % "
              f"(card {100 * row['card_test_accuracy']:.2f} %), {row['parameters']:,} parameters, "
              f"{row['train_seconds']:.0f} s training")
    if not args.out:
        print(json.dumps(report, indent=2))
    return 0
