r"""Train every attention variant with several seeds on one benchmark (maintainer script).

    python scripts/train_seeds.py --benchmark cluttered-digits-hard --seeds 1,2,3 --threads 2
    python scripts/train_seeds.py --dry-run          # print the commands only

Each run is ``infsa-viz train --variant V --seed K --data-seed D --data BENCHMARK`` into
``OUT/<variant>-seed<K>`` (a model card directory). The data seed is fixed (default 0), so the
seeds of one variant differ in initial weights and data order only, and the variants of one
seed share the recipe, the initial non-attention weights and the images. A finished run (its
``card.json`` exists) is skipped and an interrupted one resumed, so the script can be rerun
until everything is done. ``OUT/seeds.json`` lists the runs with their commands and test
accuracies; the evaluation that reads them (mean ± sd across seeds beside each run's interval,
paired tests, benchmark headroom) is printed at the end:

    infsa-viz evaluate --models OUT/softmax-seed1,… --data BENCHMARK --references --out REPORT.json
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _ints(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} must be comma-separated integers") from None
    if not values or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r} must name at least one non-negative integer")
    return values


def plan(args: argparse.Namespace) -> list[tuple[str, int, Path, list[str]]]:
    """``(variant, seed, out, train argv)`` of every run, variants within seeds."""
    runs = []
    for seed in args.seeds:
        for variant in args.variants:
            out = Path(args.out) / f"{variant}-seed{seed}"
            argv = ["train", "--variant", variant, "--seed", str(seed), "--data-seed", str(args.data_seed),
                    "--data", args.benchmark, "--out", str(out)]
            for flag, value in (("--epochs", args.epochs), ("--images-per-epoch", args.images_per_epoch),
                                ("--test-size", args.test_size), ("--threads", args.threads)):
                if value is not None:
                    argv += [flag, str(value)]
            runs.append((variant, seed, out, argv))
    return runs


def main(argv: list[str] | None = None) -> int:
    from infsa_viz.data import BENCHMARKS
    from infsa_viz.model import VARIANTS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.error = lambda message: parser.exit(2, f"{parser.prog}: error: {message}\n")  # one line, no usage
    parser.add_argument("--benchmark", default="cluttered-digits-hard", choices=list(BENCHMARKS))
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        type=lambda t: [v for v in t.split(",") if v], help="comma-separated variants (default all)")
    parser.add_argument("--seeds", type=_ints, default=[1, 2, 3], help="comma-separated seeds (default 1,2,3)")
    parser.add_argument("--data-seed", type=int, default=0, help="seed of the training images, fixed (default 0)")
    parser.add_argument("--out", default=None, help="runs folder (default runs/<benchmark>)")
    parser.add_argument("--epochs", type=int, default=None, help="epochs (default: the recipe's)")
    parser.add_argument("--images-per-epoch", type=int, default=None, help="default: the recipe's")
    parser.add_argument("--test-size", type=int, default=None, help="default: the recipe's")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads per run")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, train nothing")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.variants) - set(VARIANTS))
    if unknown:
        parser.error(f"--variants: {unknown} are not variants; expected some of {list(VARIANTS)}")
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads={args.threads} must be a positive integer")
    from infsa_viz.train import TrainConfig

    recipe = {k: v for k, v in (("epochs", args.epochs), ("images_per_epoch", args.images_per_epoch),
                                ("test_size", args.test_size)) if v is not None}
    try:  # checked before the first run starts, with the bounds the training itself applies
        TrainConfig(**recipe)
    except ValueError as err:
        parser.error(f"--{str(err).replace('_', '-')}")
    args.out = args.out or str(Path("runs") / args.benchmark)

    from infsa_viz.cli import main as cli
    from infsa_viz.io import write_json

    runs = plan(args)
    manifest = []
    for variant, seed, out, train_argv in runs:
        done = (out / "card.json").is_file()
        resume = not done and (out / "checkpoint" / "progress.json").is_file()
        command = "infsa-viz " + shlex.join(train_argv + (["--resume"] if resume else []))
        print(("# done: " if done else "") + command, file=sys.stderr)
        if not done and not args.dry_run:
            code = cli(train_argv + (["--resume"] if resume else []))
            if code:
                print(f"{command} failed with exit code {code}", file=sys.stderr)
                return code
        card = json.loads((out / "card.json").read_text()) if (out / "card.json").is_file() else None
        manifest.append({"variant": variant, "seed": seed, "out": str(out), "command": command,
                         "test_accuracy": card and card["test_accuracy"],
                         "train_seconds": card and card["train_seconds"]})
    models = ",".join(str(out) for *_, out, _ in runs)
    evaluate = (f"infsa-viz evaluate --models {models} --data {args.benchmark} --references "
                f"--out metrics/seeds-{args.benchmark}.json")
    if not args.dry_run:
        write_json(Path(args.out) / "seeds.json", {"benchmark": args.benchmark, "data_seed": args.data_seed,
                                                   "runs": manifest, "evaluate": evaluate})
    print(evaluate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
