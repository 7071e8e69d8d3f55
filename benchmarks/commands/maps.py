"""``python -m benchmarks maps``: time and peak memory of each registered map method vs tokens."""

from __future__ import annotations

import argparse
import sys

from infsa_viz.commands.lists import comma_ints, comma_names
from infsa_viz.model import VARIANTS

from .. import command_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--variants", type=comma_names, default=VARIANTS, metavar="LIST",
                        help="comma-separated model variants (random weights, shipped shape)")
    parser.add_argument("--methods", type=comma_names, default=None, metavar="LIST",
                        help="comma-separated map methods (default every method map_cases() measures)")
    parser.add_argument("--sides", type=comma_ints, default=(256, 512, 1024, 2048), metavar="LIST",
                        help="image sides (patch 8: 1k…65k tokens)")
    parser.add_argument("--time-limit", type=float, default=120.0, metavar="S",
                        help="wall-clock seconds per case process (default 120)")
    parser.add_argument("--memory-limit", type=float, default=16.0, metavar="GB",
                        help="address-space cap per case process in GB (default 16)")
    parser.add_argument("--out", required=True, help="JSON report (e.g. metrics/bench-maps-cpu.json)")


def run(args: argparse.Namespace) -> int:
    import platform

    import torch
    from tqdm.auto import tqdm

    from infsa_viz.io import write_json
    from infsa_viz.model import check_variant

    from ..maps import GRADIENT_STEPS, WARMUP_SIDE, map_cases, run_map_benchmark
    from ..throughput import SHAPES, check_fit, image_bytes, memory_budget

    variants, sides, patch = args.variants, args.sides, SHAPES["shipped"].patch_size
    if not variants:
        raise ValueError(f"--variants is empty; expected some of {', '.join(VARIANTS)}")
    for variant in variants:
        check_variant(variant, name="--variants")
    measured = list(dict.fromkeys(name for name, _ in map_cases()))
    if args.methods is not None and (not args.methods or set(args.methods) - set(measured)):
        raise ValueError(f"--methods={','.join(args.methods)!r} must name some of {', '.join(measured)} (the map "
                         "methods this benchmark measures: explanations, not floors or oracles)")
    for name, value in (("--time-limit", args.time_limit), ("--memory-limit", args.memory_limit)):
        if not value > 0:
            raise ValueError(f"{name}={value:g} must be a positive number")
    if not sides or any(s < patch or s % patch for s in sides):
        raise ValueError(f"--sides={','.join(map(str, sides))!r} must be positive multiples of the patch size {patch}")
    check_fit("--sides", sides, lambda s: image_bytes(SHAPES["shipped"], s), memory_budget(),
              "a float32 image and one layer's tokens")

    def report_case(r: dict) -> None:
        tqdm.write(f"maps: {r['variant']} {r['method']} {r['options']} {r['tokens']:,} tokens: {r['status']} "
                   f"{r.get('seconds', '')} s {round(r.get('peak_rss_bytes', 0) / 1e9, 3)} GB", file=sys.stderr)

    threads = torch.get_num_threads()
    rows = run_map_benchmark(variants=variants, sides=sides, threads=threads, time_limit_s=args.time_limit,
                             memory_gb=args.memory_limit, methods=args.methods, on_case=report_case)
    protocol = {
        "model": f"random-weight ViTs ({', '.join(variants)}), shipped shape (patch 8, width 64, 4 heads, depth 4), "
                 "batch 1",
        "methods": ("benchmarks.maps.map_cases(): every registered map method but the baseline family, default "
                    f"options (n_steps={GRADIENT_STEPS} for gradient methods that take it), plus matrix='infsa' "
                    "where a method has a matrix option") + ("" if args.methods is None else
                                                             f"; only {', '.join(args.methods)} (--methods)"),
        "threads": threads,
        "timing": "one attribute() call in a fresh process, wall seconds, after one untimed warm-up call on a "
                  f"{WARMUP_SIDE}x{WARMUP_SIDE} image (warmup_seconds: imports and lazy set-up)",
        "memory": f"peak RSS (VmHWM) of the case process, address space capped at {args.memory_limit:g} GB",
        "torch": torch.__version__, "machine": platform.machine(), "command": command_line(args),
    }
    write_json(args.out, {"protocol": protocol, "cases": rows})
    return 0
