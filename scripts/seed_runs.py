"""What the per-seed-model maintainer scripts share: their command line, its checks and the commands recorded
with their results (``scripts/meta_evaluation.py``, ``scripts/morf_ceiling.py``)."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["SEEDS_DIR", "commands", "models_of", "parse_seed_run", "run_parts", "seed_run_parser", "write_report"]

SEEDS_DIR = Path("models") / "seeds"


def seed_run_parser(description: str, *, seeds: tuple[int, ...], parts: Path, out: Path) -> argparse.ArgumentParser:
    """``--benchmarks --seeds --seeds-dir --parts --out --threads --summary-only`` with these defaults."""
    from infsa_viz.commands.lists import comma_ints
    from infsa_viz.data import BENCHMARKS

    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS), help="comma-separated benchmarks")
    parser.add_argument("--seeds", type=comma_ints, default=seeds,
                        help=f"training seeds (default {','.join(map(str, seeds))})")
    parser.add_argument("--seeds-dir", type=Path, default=SEEDS_DIR)
    parser.add_argument("--parts", type=Path, default=parts, help="per-model results (resumable)")
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--summary-only", action="store_true", help="compute nothing; gather the parts")
    return parser


def parse_seed_run(parser: argparse.ArgumentParser, argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """``(arguments, benchmarks)``, checked (exit 2 with one line otherwise); sets the torch threads."""
    from infsa_viz.data import BENCHMARKS

    args = parser.parse_args(argv)
    if not args.seeds or min(args.seeds) < 0:
        parser.error(f"--seeds={args.seeds} must name at least one non-negative integer")
    benchmarks = [b for b in args.benchmarks.split(",") if b]
    unknown = sorted(set(benchmarks) - set(BENCHMARKS))
    if unknown:
        parser.error(f"--benchmarks: {unknown} are not benchmarks; expected some of {list(BENCHMARKS)}")
    if args.threads is not None:
        if not 1 <= args.threads <= 256:
            parser.error(f"--threads={args.threads} must lie in [1, 256]")
        import torch

        torch.set_num_threads(args.threads)
    return args, benchmarks


def commands(script: str, argv: list[str] | None) -> dict[str, str]:
    """The command that computed the parts (``--summary-only`` only gathers them) and the one that ran."""
    given = list(argv if argv is not None else sys.argv[1:])
    computing = shlex.join([a for a in given if a != "--summary-only"])
    return {"command": f"{script} {computing}".rstrip(), "gathered_by": f"{script} {shlex.join(given)}".rstrip()}


def models_of(benchmark: str, seeds: list[int], seeds_dir: Path) -> list[Path]:
    """The trained seed models ``<seeds_dir>/<benchmark>/<variant>-seed<k>`` that exist, seed by seed."""
    from infsa_viz.attention import VARIANTS

    found = [seeds_dir / benchmark / f"{v}-seed{s}" for s in seeds for v in VARIANTS]
    return [m for m in found if (m / "config.json").is_file()]


def run_parts(benchmarks: list[str], args: argparse.Namespace, compute: Callable[[str, Path], dict[str, Any]], *,
              stale: Callable[[dict[str, Any]], bool] = lambda part: False) -> dict[str, dict[str, Any]]:
    """Per benchmark and seed model (``args.seeds`` in ``args.seeds_dir``): its part, read from
    ``args.parts/<benchmark>/<model>.json`` or, where missing or ``stale``, computed by
    ``compute(benchmark, model_dir)`` and written there (not with ``--summary-only``, which only gathers)."""
    from infsa_viz.io import read_json, write_json
    from infsa_viz.progress import progress

    parts: dict[str, dict[str, Any]] = {}
    for benchmark in benchmarks:
        for model_dir in progress(models_of(benchmark, list(args.seeds), args.seeds_dir), desc=benchmark,
                                  unit="model"):
            part = args.parts / benchmark / f"{model_dir.name}.json"
            if part.is_file() and stale(read_json(part)):
                part.unlink()
            if not part.is_file():
                if args.summary_only:
                    continue
                write_json(part, {"model": str(model_dir), **compute(benchmark, model_dir)})
            parts.setdefault(benchmark, {})[model_dir.name] = read_json(part)
    return parts


def write_report(out: Path, protocol: dict[str, Any], summary: dict[str, Any], parts: dict[str, Any]) -> int:
    """Write ``{protocol, summary, models}`` to ``out`` (atomically) and say so on stderr; exit status 0."""
    from infsa_viz.io import write_json

    write_json(out, {"protocol": protocol, "summary": summary, "models": parts})
    print(f"wrote {out}", file=sys.stderr)
    return 0
