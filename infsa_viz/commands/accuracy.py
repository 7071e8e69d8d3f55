"""``infsa-viz accuracy``: re-evaluate trained models on their test split (metrics/training.json)."""

from __future__ import annotations

import argparse
import json

from ._inputs import add_model_list
from .lists import output_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_list(parser, help="comma-separated model directories")
    parser.add_argument("--out", type=output_file, default=None,
                        help="write the JSON report here (e.g. metrics/training.json)")


def run(args: argparse.Namespace) -> int:
    from ..io import write_json
    from ..train.report import training_report

    if not args.models:
        raise ValueError("--models names no model directory")
    report = training_report(list(args.models))
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
