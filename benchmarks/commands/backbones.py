"""``python -m benchmarks backbones``: seconds per image of every map and metric on a real-size backbone."""

from __future__ import annotations

import argparse
import json

from .. import command_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from infsa_viz.evaluation import default_methods

    from ..backbones import CASES

    parser.add_argument("--case", default="vit-b16-224", choices=list(CASES), help="the backbone (default vit-b16-224)")
    parser.add_argument("--variants", default="softmax", help="comma-separated attention variants (default softmax; "
                                                               "softmax's raw attention is always the floor)")
    parser.add_argument("--methods", default=",".join(default_methods()),
                        help="comma-separated map methods (default: every method of the default report)")
    parser.add_argument("--data", default=None, metavar="folder:PATH",
                        help="photos with VOC boxes (default: Debian's labelme-examples)")
    parser.add_argument("--n-images", type=int, default=3, help="photos scored (default 3)")
    parser.add_argument("--steps", type=int, default=20, help="MoRF/LeRF steps K (default 20)")
    parser.add_argument("--step-grid", default="auto", choices=["auto", "uniform", "cosine"],
                        help="MoRF/LeRF step grid (default auto: uniform up to 100 patches, cosine with at most 10 "
                             "steps above)")
    parser.add_argument("--against", default=None, metavar="GRID:STEPS",
                        help="also time MoRF/LeRF on this older grid beside each row, in the same run (e.g. "
                             "uniform:20, the protocol before the step grid)")
    parser.add_argument("--batch-size", type=int, default=512, help="perturbed copies per forward (default 512)")
    parser.add_argument("--save-model", default=None, metavar="DIR",
                        help="also write softmax's random-weight model (the photos' class names) to DIR, to time "
                             "infsa-viz evaluate on the same photos against this report")
    parser.add_argument("--out", required=True, help="JSON report (e.g. metrics/bench-backbones.json)")


def run(args: argparse.Namespace) -> int:
    from infsa_viz.io import write_json
    from infsa_viz.model.attention import VARIANTS

    from ..backbones import backbone_cost

    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise ValueError(f"--variants={args.variants!r} must name some of {list(VARIANTS)}")
    if not 1 <= args.n_images <= 1000 or not 1 <= args.steps <= 1000 or args.batch_size < 1:
        raise ValueError(f"--n-images={args.n_images} must lie in [1, 1000], --steps={args.steps} in [1, 1000] and "
                         f"--batch-size={args.batch_size} be positive")
    methods = [m for m in args.methods.split(",") if m]
    against = None
    if args.against is not None:
        grid, _, count = args.against.partition(":")
        if grid not in ("uniform", "cosine") or not count.isdigit() or not 1 <= int(count) <= 1000:
            raise ValueError(f"--against={args.against!r} must be GRID:STEPS with GRID uniform or cosine and STEPS in "
                             "[1, 1000], e.g. uniform:20")
        against = (grid, int(count))
    report = backbone_cost(args.case, variants=variants, methods=methods, data=args.data, n_images=args.n_images,
                           steps=args.steps, step_grid=args.step_grid, batch_size=args.batch_size, against=against,
                           save_model=args.save_model)
    report["protocol"]["command"] = command_line(args)
    write_json(args.out, report)
    print(json.dumps({v: {"measured_seconds": r["measured_seconds"], "estimate_seconds": r["estimate"]["seconds"],
                          "peak_rss": r["peak_rss"]} for v, r in report["variants"].items()}, indent=1))
    return 0
