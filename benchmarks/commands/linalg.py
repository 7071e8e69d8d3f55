"""``python -m benchmarks linalg``: which batched dense linear-algebra calls hang, fail or pass on this build."""

from __future__ import annotations

import argparse
import json

from .. import command_line


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} must be comma-separated positive integers") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be comma-separated positive integers")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..linalg import OPS

    parser.add_argument("--ops", default=",".join(OPS), help=f"comma-separated calls (default all: {', '.join(OPS)})")
    parser.add_argument("--batches", type=_ints, default=[1, 2, 12], help="batch sizes B (default 1,2,12)")
    parser.add_argument("--sizes", type=_ints, default=[149, 150, 197], help="matrix sizes N (default 149,150,197)")
    parser.add_argument("--thread-counts", type=_ints, default=[1, 2], help="intra-op threads T (default 1,2)")
    parser.add_argument("--dtypes", default="float32,float64", help="comma-separated dtypes (default float32,float64)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per case, median (default 3)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before a case counts as a hang (default 30)")
    parser.add_argument("--out", required=True, help="JSON report (e.g. metrics/bench-linalg.json)")


def run(args: argparse.Namespace) -> int:
    from infsa_viz.io import write_json

    from ..linalg import linalg_matrix

    dtypes = [d for d in args.dtypes.split(",") if d]
    if not set(dtypes) <= {"float32", "float64"} or not dtypes:
        raise ValueError(f"--dtypes={args.dtypes!r} must name float32 and/or float64")
    if not 1 <= args.repeats <= 100 or not args.timeout > 0:
        raise ValueError(f"--repeats={args.repeats} must lie in [1, 100] and --timeout={args.timeout} be positive")
    report = linalg_matrix(ops=[o for o in args.ops.split(",") if o], batches=args.batches, sizes=args.sizes,
                           threads=args.thread_counts, dtypes=dtypes, repeats=args.repeats, timeout=args.timeout)
    report["protocol"]["command"] = command_line(args)
    write_json(args.out, report)
    for row in report["cases"]:
        cost = "" if row["seconds"] is None else f" {1000 * row['seconds']:.2f} ms"
        flag = " (oneMKL ERROR printed)" if row["mkl_error"] else ""
        print(f"{row['op']:>13} B={row['batch']:<3} N={row['size']:<5} T={row['threads']} {row['dtype']}: "
              f"{row['result']}{cost}{flag}")
    return 0
