"""``python -m benchmarks profile``: torch.profiler over one forward per (variant, resolution), top operators."""

from __future__ import annotations

import argparse
import sys

from .. import command_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--case", action="append", default=[], metavar="VARIANT:RESOLUTION",
                        help="a case to profile, e.g. pure_infsa:1024 (repeatable)")
    parser.add_argument("--bench", metavar="JSON",
                        help="instead of --case: each variant at the largest resolution it completed in this "
                             "throughput report (`python -m benchmarks throughput`)")
    parser.add_argument("--shape", default="shipped", help="benchmark shape (shipped or tiny)")
    parser.add_argument("--top", type=int, default=12, help="operators listed per case")
    parser.add_argument("--out", required=True, help="JSON report (e.g. metrics/profile-cpu.json)")


def _parse_case(text: str) -> tuple[str, int]:
    from infsa_viz.attention import check_variant

    variant, sep, resolution = text.partition(":")
    if not sep or not resolution.isdigit():
        raise ValueError(f"--case={text!r} must look like VARIANT:RESOLUTION, e.g. pure_infsa:1024")
    return check_variant(variant, name="--case variant"), int(resolution)


def run(args: argparse.Namespace) -> int:
    import platform

    import torch

    from infsa_viz.attention import VARIANTS
    from infsa_viz.io import read_json, write_json

    from ..profile import largest_completed, profile_forward

    if bool(args.case) == bool(args.bench):
        raise ValueError("give either --case (one or more) or --bench, not both and not neither")
    if args.bench:
        best = largest_completed(read_json(args.bench), shape=args.shape)
        cases = [(variant, best[variant]) for variant in VARIANTS if variant in best]
    else:
        cases = [_parse_case(text) for text in args.case]
    rows = []
    for variant, resolution in cases:
        print(f"profile: {variant} {resolution}² ({args.shape})", file=sys.stderr)
        rows.append(profile_forward(variant, resolution, shape=args.shape, top=args.top))
    write_json(args.out, {
        "protocol": {"what": "torch.profiler (CPU activities) over one inference forward after one untimed "
                             "warm-up; random weights, batch 1, fused softmax SDPA, as in the throughput benchmark",
                     "percent": "share of the forward's total self CPU time (all threads)",
                     "threads": torch.get_num_threads(), "torch": torch.__version__,
                     "machine": platform.machine(), "command": command_line(args)},
        "cases": rows,
    })
    return 0
