"""What the per-seed-model maintainer scripts share: their command line, its checks and the commands recorded
with their results (``scripts/meta_evaluation.py``, ``scripts/morf_ceiling.py``)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["EXPLAINED", "SEEDS_DIR", "check_writable", "commands", "explained", "models_of", "parse_seed_run", "part_key",
           "run_parts", "seed_run_parser", "write_report"]

SEEDS_DIR = Path("models") / "seeds"
#: Per benchmark, the explained class and the images scored where they differ from the default (the
#: label; correctly classified images): on cued digits the maps explain each model's own prediction on
#: every image, as the verdict there does (``scripts/verdict_benchmarks.py``).
EXPLAINED: dict[str, dict[str, str]] = {"cued-digits": {"target": "predicted", "select": "all"}}


def explained(benchmark: str) -> dict[str, str]:
    """The benchmark's explained class and scored images (:data:`EXPLAINED`, else label / correct)."""
    return EXPLAINED.get(benchmark, {"target": "label", "select": "correct"})


def seed_run_parser(script: str, description: str, *, seeds: tuple[int, ...], parts: Path,
                    out: Path) -> argparse.ArgumentParser:
    """``--benchmarks --seeds --seeds-dir --parts --out --threads --summary-only`` with these defaults
    (errors in one line, exit 2: :func:`infsa_viz.cli.script_parser`)."""
    from infsa_viz.cli import script_parser
    from infsa_viz.commands.lists import comma_ints, threads
    from infsa_viz.data import BENCHMARKS

    parser = script_parser(script, description)
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS), help="comma-separated benchmarks")
    parser.add_argument("--seeds", type=comma_ints, default=seeds,
                        help=f"training seeds (default {','.join(map(str, seeds))})")
    parser.add_argument("--seeds-dir", type=Path, default=SEEDS_DIR)
    parser.add_argument("--parts", type=Path, default=parts, help="per-model results (resumable)")
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--threads", type=threads(), default=None, help="torch CPU threads")
    parser.add_argument("--summary-only", action="store_true", help="compute nothing; gather the parts")
    return parser


def check_writable(option: str, path: Path) -> None:
    """Refuse an output path that cannot be written (a folder, or under a file or a read-only folder), up front."""
    if path.is_dir():
        raise ValueError(f"{option}={str(path)!r} is an existing folder; expected a file path")
    for folder in path.parents:
        if folder.exists():
            if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
                raise ValueError(f"{option}={str(path)!r} cannot be written: {str(folder)!r} is "
                                 f"{'a file' if not folder.is_dir() else 'not writable'}")
            return


def parse_seed_run(parser: argparse.ArgumentParser, argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """``(arguments, benchmarks)``, checked (exit 2 with one line otherwise: no seed, no benchmark, an
    unknown one, an unwritable ``--out``, no trained model to read); sets the torch threads."""
    from infsa_viz.data import BENCHMARKS

    args = parser.parse_args(argv)
    if not args.seeds or min(args.seeds) < 0:
        parser.error(f"--seeds={args.seeds} must name at least one non-negative integer")
    benchmarks = [b for b in args.benchmarks.split(",") if b]
    unknown = sorted(set(benchmarks) - set(BENCHMARKS))
    if unknown:
        parser.error(f"--benchmarks: {unknown} are not benchmarks; expected some of {list(BENCHMARKS)}")
    if not benchmarks:
        parser.error(f"--benchmarks names no benchmark; expected some of {list(BENCHMARKS)}")
    try:
        check_writable("--out", args.out)
    except ValueError as error:
        parser.error(str(error))
    models = [m for b in benchmarks for _, m in models_of(b, list(args.seeds), args.seeds_dir)]
    if not models:
        parser.error(f"--seeds={','.join(map(str, args.seeds))}: no seed model <variant>-seed<k> in "
                     f"{[str(args.seeds_dir / b) for b in benchmarks]}; nothing to evaluate")
    from infsa_viz.cli import check_outputs

    check_outputs({"--out": args.out, "--parts": args.parts}, models)  # no output over a model
    check_outputs({"--out": args.out}, [args.parts])  # nor over a part
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    return args, benchmarks


def commands(script: str, argv: list[str] | None) -> dict[str, str]:
    """The command that computed the parts (``--summary-only`` only gathers them) and the one that ran."""
    given = list(argv if argv is not None else sys.argv[1:])
    computing = shlex.join([a for a in given if a != "--summary-only"])
    return {"command": f"{script} {computing}".rstrip(), "gathered_by": f"{script} {shlex.join(given)}".rstrip()}


def models_of(benchmark: str, seeds: list[int], seeds_dir: Path) -> list[tuple[str, Path]]:
    """``(name, folder)`` of the trained seed models ``<seeds_dir>/<benchmark>/[<group>/]<variant>-seed<k>`` that
    exist, seed by seed (the groups are the verdict benchmark's, :mod:`scripts.verdict_benchmarks`; a
    grouped model's name is ``<group>-<variant>-seed<k>``)."""
    from infsa_viz import VARIANTS
    from scripts.verdict_benchmarks import VERDICT_BENCHMARKS

    entry = VERDICT_BENCHMARKS.get(benchmark)
    groups = entry.groups if entry is not None else ()
    found = [(f"{g}-{v}-seed{s}" if g else f"{v}-seed{s}", seeds_dir / benchmark / g / f"{v}-seed{s}")
             for s in seeds for g in (groups or ("",)) for v in VARIANTS]
    return [(name, m) for name, m in found if (m / "config.json").is_file()]


def part_key(model_dir: Path, benchmark: str, options: dict[str, Any]) -> dict[str, Any]:
    """What made a part: the model's files (:func:`infsa_viz.io.model_files_digest`: weights, config,
    card), the benchmark (the data) and the script's options; stored in the part, compared before reuse."""
    from infsa_viz.io import model_files_digest

    return {"model_files": model_files_digest(model_dir), "benchmark": benchmark, "options": options}


def run_parts(benchmarks: list[str], args: argparse.Namespace, compute: Callable[[str, Path], dict[str, Any]], *,
              options: Callable[[str], dict[str, Any]] = lambda benchmark: {},
              valid: Callable[[Any], bool] = lambda part: isinstance(part, dict),
              what: str = "per-model result") -> dict[str, dict[str, Any]]:
    """Per benchmark and seed model (``args.seeds`` in ``args.seeds_dir``): its part, read from
    ``args.parts/<benchmark>/<model>.json`` or, where missing, not ``valid`` (a damaged file) or made by
    something else than its :func:`part_key` says now (a retrained or edited model, other data or
    ``options(benchmark)``), computed by ``compute(benchmark, model_dir)`` and written there with its key.
    With ``--summary-only``, which only gathers, a damaged or stale part is an error naming what differs."""
    from infsa_viz.io import read_json, write_json
    from infsa_viz.progress import progress

    parts: dict[str, dict[str, Any]] = {}
    for benchmark in benchmarks:
        for name, model_dir in progress(models_of(benchmark, list(args.seeds), args.seeds_dir), desc=benchmark,
                                        unit="model"):
            part = args.parts / benchmark / f"{name}.json"
            key = part_key(model_dir, benchmark, options(benchmark))
            found = None
            if part.is_file():
                try:
                    found = read_json(part)
                    if not valid(found):
                        raise ValueError(f"{part}: not a {what}")
                except ValueError as error:  # our own file, damaged (a killed write): computed again
                    if args.summary_only:
                        raise ValueError(f"{error}; run without --summary-only to compute it again") from None
                    print(f"{error}; computing it again", file=sys.stderr)
                    found = None
                differs = None if found is None else _differs(found.get("key"), key)
                if differs:
                    why = f"{part}: made by another {differs} than {model_dir} and these options now"
                    if args.summary_only:
                        raise ValueError(f"{why}; run without --summary-only to compute it again")
                    print(f"{why}; computing it again", file=sys.stderr)
                    found = None
            if found is None:
                if args.summary_only:
                    continue
                found = {"model": str(model_dir), "key": key, **compute(benchmark, model_dir)}
                write_json(part, found)
            parts.setdefault(benchmark, {})[name] = found
    if not parts:
        raise ValueError(f"no per-model result in {args.parts} for --seeds={','.join(map(str, args.seeds))}; run "
                         "without --summary-only to compute them")
    return parts


def _differs(stored: Any, key: dict[str, Any]) -> str | None:
    """What a part's stored key says differently from ``key`` (``None``: the same)."""
    if not isinstance(stored, dict):
        return "version of the script (the part records no key)"
    names = {"model_files": "model (its weights, config or card changed)", "benchmark": "benchmark",
             "options": "set of options"}
    found = [names.get(k, k) for k in key if stored.get(k) != key[k]]
    return " and ".join(found) or None


def write_report(out: Path, protocol: dict[str, Any], summary: dict[str, Any], parts: dict[str, Any]) -> int:
    """Write ``{protocol, summary, models}`` to ``out`` (atomically) and say so on stderr; exit status 0."""
    from infsa_viz.io import write_json

    write_json(out, {"protocol": protocol, "summary": summary, "models": parts})
    print(f"wrote {out}", file=sys.stderr)
    return 0
