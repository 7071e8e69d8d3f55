"""``python -m benchmarks profile``: torch.profiler over one forward per (variant, resolution), top operators."""

from __future__ import annotations

import argparse
import sys

from .. import command_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--case", action="append", default=[], metavar="VARIANT:RESOLUTION",
                        help="a case to profile, e.g. pure_infsa:1024 (repeatable)")
    parser.add_argument("--attention", action="append", default=[], metavar="VARIANT:TOKENS",
                        help="one attention layer on TOKENS random tokens, e.g. linear_infsa:262144 (repeatable; "
                             "several sizes of a variant give each operator's slope vs tokens)")
    parser.add_argument("--bench", metavar="JSON",
                        help="instead of --case: each variant at the largest resolution it completed in this "
                             "throughput report (`python -m benchmarks throughput`)")
    parser.add_argument("--shape", default="shipped", help="benchmark shape (shipped or tiny)")
    parser.add_argument("--top", type=int, default=12, help="operators listed per case")
    parser.add_argument("--out", required=True, help="JSON report (e.g. metrics/profile-cpu.json)")


def _parse_case(text: str, option: str = "--case", size: str = "RESOLUTION", example: str = "pure_infsa:1024"
                ) -> tuple[str, int]:
    from infsa_viz.model import check_variant

    variant, sep, number = text.partition(":")
    if not sep or not number.isdigit() or int(number) < 1:
        raise ValueError(f"{option}={text!r} must look like VARIANT:{size}, e.g. {example}")
    return check_variant(variant, name=f"{option} variant"), int(number)


def run(args: argparse.Namespace) -> int:
    import platform

    import torch

    from infsa_viz.io import read_json, write_json
    from infsa_viz.model import VARIANTS

    from ..profile import largest_completed, op_slopes, profile_forward
    from ..throughput import BenchSettings, check_fit, image_bytes, memory_budget, shape_config

    if args.top < 1:
        raise ValueError(f"--top={args.top} must be a positive integer")
    if args.case and args.bench:
        raise ValueError("give either --case (one or more) or --bench, not both")
    if not (args.case or args.bench or args.attention):
        raise ValueError("nothing to profile: give --case, --bench or --attention")
    if args.bench:
        best = largest_completed(read_json(args.bench), shape=args.shape)
        cases = [(variant, best[variant]) for variant in VARIANTS if variant in best]
    else:
        cases = [_parse_case(text) for text in args.case]
    layers = [_parse_case(text, "--attention", "TOKENS", "linear_infsa:262144") for text in args.attention]
    budget = memory_budget()  # every size checked before the first case runs
    for variant, resolution in cases:
        config = shape_config(args.shape, BenchSettings(), variant)
        check_fit("--case", (resolution,), lambda s, c=config: image_bytes(c, s), budget,
                  f"float32 image and one layer's tokens, {args.shape} shape")
    for variant, tokens in layers:
        config = shape_config(args.shape, BenchSettings(), variant)
        check_fit("--attention", (tokens,), lambda n, c=config: 12.0 * n * c.embed_dim, budget,
                  f"float32 q, k, v of {config.embed_dim} channels")
    rows = []
    for variant, resolution in cases:
        print(f"profile: {variant} {resolution}² ({args.shape})", file=sys.stderr)
        rows.append(profile_forward(variant, resolution, shape=args.shape, top=args.top))
    for variant, tokens in layers:
        print(f"profile: {variant} attention layer, {tokens:,} tokens ({args.shape})", file=sys.stderr)
        rows.append(profile_forward(variant, tokens=tokens, shape=args.shape, top=args.top))
    write_json(args.out, {
        "protocol": {"what": "torch.profiler (CPU activities) over inference forwards (enough to last about "
                             "0.2 s, times per forward) after one untimed warm-up; random weights, batch 1, fused "
                             "softmax SDPA, as in the throughput benchmark (model or attention section)",
                     "op_slopes": "per section/variant profiled at several sizes: log-log slope of each operator's "
                                  "self CPU time per forward vs tokens",
                     "percent": "share of the forward's total self CPU time (all threads)",
                     "threads": torch.get_num_threads(), "torch": torch.__version__,
                     "machine": platform.machine(), "command": command_line(args)},
        "cases": rows,
        "op_slopes": op_slopes(rows),
    })
    return 0
