"""``python -m benchmarks throughput``: throughput, latency and peak memory vs resolution, one process per case."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from infsa_viz.commands.lists import comma_ints, comma_names
from infsa_viz.model import VARIANTS

from .. import command_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..throughput import DTYPES, SECTIONS, SHAPES, BenchSettings

    d = BenchSettings()
    parser.add_argument("--out", required=True, help="JSON report path (e.g. metrics/bench-cpu.json); "
                        "the plots go next to it with the same stem and .html")
    parser.add_argument("--variants", type=comma_names, default=d.variants, metavar="LIST",
                        help=f"comma-separated attention variants (default {','.join(VARIANTS)})")
    parser.add_argument("--shape", choices=(*SHAPES, "both"), default="both",
                        help="model shape: the shipped models' architecture (patch 8, width 64, 4 heads), "
                             "a ViT-Tiny-like one (patch 16, width 192, 3 heads, RGB), or both (default)")
    parser.add_argument("--sections", type=comma_names, default=d.sections, metavar="LIST",
                        help=f"what to measure, some of {','.join(SECTIONS)}: whole models vs resolution, one "
                             "attention layer vs tokens (log-log slope), the paper's formulas written out densely, "
                             "the shipped models' visits/Perron maps; default all")
    parser.add_argument("--resolutions", type=comma_ints, default=d.resolutions, metavar="LIST",
                        help=f"image sides for the model section (default "
                             f"{','.join(map(str, d.resolutions))})")
    parser.add_argument("--attention-tokens", type=comma_ints, default=d.attention_tokens, metavar="LIST",
                        help="token counts, attention section (default 1024 … 262144, powers of 2)")
    parser.add_argument("--naive-tokens", type=comma_ints, default=d.naive_tokens, metavar="LIST",
                        help="token counts of the naive dense formulas beside our layer (default "
                             f"{','.join(map(str, d.naive_tokens))}; add them to --attention-tokens too)")
    parser.add_argument("--spectral-resolutions", type=comma_ints, default=d.spectral_resolutions, metavar="LIST",
                        help="image sides of the shipped models' spectral maps (default "
                             f"{','.join(map(str, d.spectral_resolutions))})")
    parser.add_argument("--spectral-methods", type=comma_names, default=d.spectral_methods, metavar="LIST",
                        help=f"map methods of the spectral section (default {','.join(d.spectral_methods)})")
    parser.add_argument("--spectral-variants", type=comma_names, default=d.spectral_variants, metavar="LIST",
                        help=f"shipped models of the spectral section (default {','.join(d.spectral_variants)})")
    parser.add_argument("--patch", type=int, default=None, help="override the shapes' patch size")
    parser.add_argument("--width", type=int, default=None, help="override the shapes' width (embed dim)")
    parser.add_argument("--depth", type=int, default=None, help="override the shapes' depth (both 4)")
    parser.add_argument("--heads", type=int, default=None, help="override the shapes' number of heads")
    parser.add_argument("--batch", type=int, default=d.batch, help=f"images per forward (default {d.batch})")
    parser.add_argument("--repeats", type=int, default=d.repeats, help=f"timings per case (default {d.repeats})")
    parser.add_argument("--warmup", type=int, default=d.warmup, help=f"untimed forwards (default {d.warmup})")
    parser.add_argument("--time-limit", type=float, default=d.time_limit_s, metavar="S",
                        help=f"wall-clock seconds per case process (default {d.time_limit_s:g})")
    parser.add_argument("--spectral-time-limit", type=float, default=d.spectral_time_limit_s, metavar="S",
                        help=f"wall-clock seconds per spectral case (default {d.spectral_time_limit_s:g})")
    parser.add_argument("--memory-limit", type=float, default=d.memory_limit_gb, metavar="GB",
                        help="cap per case process in GB (10^9 bytes): address space on CPU, CUDA "
                             f"allocations on GPU (default {d.memory_limit_gb:g})")
    parser.add_argument("--device", choices=("cpu", "cuda"), default=d.device, help="default cpu")
    parser.add_argument("--dtype", choices=DTYPES, default=d.dtype,
                        help="precision of the model, attention and naive sections (default float32; a GPU "
                             "run is made once per dtype: float32 and bfloat16)")
    parser.add_argument("--seed", type=int, default=d.seed, help=f"weights and inputs seed (default {d.seed})")


def _size(row: dict[str, Any]) -> str:
    if row["section"] == "spectral":
        return f"{row['method']} {row['resolution']}² ({row['tokens']:,} tokens)"
    if row["section"] == "model":
        return f"{row['resolution']}² ({row['tokens']:,} tokens)"
    return f"{row['tokens']:,} tokens"


def case_line(row: dict[str, Any]) -> str:
    """One stderr line for a finished case."""
    head = f"throughput: {row['section']} {row['shape']} {row['variant']} {_size(row)}: {row['status']}"
    if row["status"] != "ok":
        return f"{head} ({row['message']})"
    rate = f", {row['images_per_s']:.3g} images/s" if "images_per_s" in row else ""
    note = " (warmup forward only)" if row.get("latency_from_warmup") else ""
    return (f"{head}, {row['latency_s'] * 1e3:.4g} ms{note} (CPU {row['cpu_s'] * 1e3:.4g} ms){rate}, "
            f"peak {row['peak_memory_bytes'] / 1e9:.3g} GB, {row['wall_s']:.0f} s")


#: BenchSettings fields → the options that set them, for messages.
_OPTION_OF = {"resolutions": "--resolutions", "attention_tokens": "--attention-tokens",
              "naive_tokens": "--naive-tokens", "spectral_resolutions": "--spectral-resolutions"}


def _as_option(message: str) -> str:
    """A settings error as the user typed the option (``attention_tokens: …`` → ``--attention-tokens: …``)."""
    field = message.split(":", 1)[0].split("=", 1)[0].split(" ", 1)[0]
    return _OPTION_OF[field] + message[len(field):] if field in _OPTION_OF else message


def run(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from ..report import write_report
    from ..throughput import SHAPES, BenchSettings, run_benchmark

    try:
        settings = BenchSettings(
            variants=args.variants, shapes=tuple(SHAPES) if args.shape == "both" else (args.shape,),
            sections=args.sections, resolutions=args.resolutions, attention_tokens=args.attention_tokens,
            naive_tokens=args.naive_tokens, spectral_resolutions=args.spectral_resolutions,
            spectral_methods=args.spectral_methods, spectral_variants=args.spectral_variants,
            spectral_time_limit_s=args.spectral_time_limit,
            patch_size=args.patch, embed_dim=args.width, depth=args.depth, num_heads=args.heads,
            batch=args.batch, repeats=args.repeats, warmup=args.warmup, time_limit_s=args.time_limit,
            memory_limit_gb=args.memory_limit, device=args.device, dtype=args.dtype, threads=args.threads,
            seed=args.seed,
        )
    except ValueError as err:
        raise ValueError(_as_option(str(err))) from None
    report = run_benchmark(settings, out=args.out, extra_protocol={"command": command_line(args)},
                           on_case=lambda row: tqdm.write(case_line(row), file=sys.stderr))
    json_path, html_path = write_report(report, args.out)
    print(f"wrote {json_path} and {html_path}; statuses {report['summary']['statuses']}")
    for goal in report["summary"]["goals"]:
        met = {True: "met", False: "NOT met", None: "not measured"}[goal["met"]]
        print(f"  {goal['goal']}: {met} (value {goal['value']})")
    return 0
