"""``infsa-viz bench-maps``: time and peak memory of each map method vs tokens."""

from __future__ import annotations

import argparse
import sys

from ..attention import VARIANTS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated model variants (random weights, shipped shape)")
    parser.add_argument("--sides", default="256,512,1024,2048", help="image sides (patch 8: 1k…65k tokens)")
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--memory-limit", type=float, default=16.0, help="GB per case process")
    parser.add_argument("--out", required=True)


def run(args: argparse.Namespace) -> int:
    import platform

    import torch

    from ..attention import check_variant
    from ..bench.maps import WARMUP_SIDE, run_map_benchmark
    from ..io import write_json

    variants = tuple(v for v in args.variants.split(",") if v)
    if not variants:
        raise ValueError(f"--variants={args.variants!r} is empty; expected some of {', '.join(VARIANTS)}")
    for variant in variants:
        check_variant(variant, name="--variants")
    try:
        sides = tuple(int(s) for s in args.sides.split(",") if s)
    except ValueError:
        raise ValueError(f"--sides={args.sides!r} must be comma-separated integers") from None
    if not sides or any(s < 8 or s % 8 for s in sides):
        raise ValueError(f"--sides={args.sides!r} must be positive multiples of the patch size 8")
    threads = torch.get_num_threads()
    rows = run_map_benchmark(variants=variants, sides=sides, threads=threads, time_limit_s=args.time_limit,
                             memory_gb=args.memory_limit,
                             on_case=lambda r: print(f"bench-maps: {r['variant']} {r['method']} {r['options']} {r['tokens']:,} tokens: "
                                                     f"{r['status']} {r.get('seconds', '')} s "
                                                     f"{round(r.get('peak_rss_bytes', 0) / 1e9, 3)} GB", file=sys.stderr))
    write_json(args.out, {"protocol": {"model": f"random-weight ViTs ({', '.join(variants)}), shipped shape (patch 8, "
                                                "width 64, 4 heads, depth 4), batch 1", "threads": threads,
                                       "timing": "one explain() call in a fresh process, wall seconds, after one untimed "
                                                 f"warm-up call on a {WARMUP_SIDE}x{WARMUP_SIDE} image "
                                                 "(warmup_seconds: imports and lazy set-up)",
                                       "memory": "peak RSS (VmHWM) of the case process, address space capped at "
                                                 f"{args.memory_limit:g} GB", "torch": torch.__version__,
                                       "machine": platform.machine(), "command": "infsa-viz " + " ".join(args.argv)},
                          "cases": rows})
    return 0
