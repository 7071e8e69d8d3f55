"""``python -m benchmarks morf``: our batched MoRF curves vs quantus.RegionPerturbation (time, agreement)."""

from __future__ import annotations

import argparse
import json

from .. import command_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="models/softmax-vit4", help="model directory")
    from infsa_viz.maps.attention import AttentionMap

    parser.add_argument("--method", default=AttentionMap.name,
                        help="map method whose order is used (ties are broken differently by the two engines: "
                             "use a map without ties)")
    parser.add_argument("--n-images", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", required=True, help="JSON report (e.g. metrics/bench-morf.json)")


def run(args: argparse.Namespace) -> int:
    from infsa_viz.io import write_json

    from ..morf import morf_benchmark

    report = morf_benchmark(args.model, n_images=args.n_images, method=args.method, repeats=args.repeats)
    report["protocol"]["command"] = command_line(args)
    write_json(args.out, report)
    print(json.dumps({k: report[k] for k in ("median_seconds", "speedup", "max_abs_curve_difference")}))
    return 0
