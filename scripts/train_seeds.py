r"""Train every attention variant with several seeds on one benchmark (maintainer script).

    python scripts/train_seeds.py --benchmark cluttered-digits-hard --seeds 1,2,3 --threads 2
    python scripts/train_seeds.py --dry-run          # print the commands only

Each run is ``infsa-viz train --variant V --seed K --data-seed D --data BENCHMARK`` into
``OUT/<variant>-seed<K>`` (a model card directory). The data seed is fixed (default 0), so the
seeds of one variant differ in initial weights and data order only, and the variants of one
seed share the recipe, the initial non-attention weights and the images. A finished run (its
``card.json`` holds every field a finished run writes) is skipped and an interrupted one resumed,
so the script can be rerun until everything is done; a damaged card is refused, not overwritten.
One run at a time holds ``OUT`` (``OUT/train_seeds.lock`` with its pid): a second is refused.
``OUT/seeds.json`` lists the runs with their commands and test accuracies, written last; the
evaluation that reads them (mean ± sd across seeds beside each run's interval, paired tests,
benchmark headroom) is printed at the end:

    infsa-viz evaluate --models OUT/softmax-seed1,… --data BENCHMARK --references --out REPORT.json
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from infsa_viz.cli import script_main, script_parser

ROOT = Path(__file__).resolve().parents[1]
PROG = "train_seeds.py"


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


def _check_out(out: Path) -> None:
    """Refuse an ``--out`` that cannot be a folder (it, or a folder above it, is a file) before anything runs."""
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                raise ValueError(f"--out={str(out)!r}: {str(folder)!r} is a file; expected a folder (or a path to "
                                 "create)")
            return


@script_main(PROG)
def main(argv: list[str] | None = None) -> int:
    from infsa_viz.data import BENCHMARKS
    from infsa_viz.model import VARIANTS

    parser = script_parser(PROG, __doc__)
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
    if not args.variants:
        parser.error(f"--variants names no variant; expected some of {list(VARIANTS)}")
    unknown = sorted(set(args.variants) - set(VARIANTS))
    if unknown:
        parser.error(f"--variants: {unknown} are not variants; expected some of {list(VARIANTS)}")
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads={args.threads} must be a positive integer")
    if args.data_seed < 0:
        parser.error(f"--data-seed={args.data_seed} must be a non-negative integer")
    from infsa_viz.train import TrainConfig

    recipe = {k: v for k, v in (("epochs", args.epochs), ("images_per_epoch", args.images_per_epoch),
                                ("test_size", args.test_size)) if v is not None}
    try:  # checked before the first run starts, with the bounds the training itself applies
        TrainConfig(**recipe)
    except ValueError as err:
        parser.error(f"--{str(err).replace('_', '-')}")
    args.out = args.out or str(Path("runs") / args.benchmark)
    _check_out(Path(args.out))
    runs = plan(args)
    if args.dry_run:
        for _, _, out, train_argv in runs:
            print(("# done: " if (out / "card.json").is_file() else "") + "infsa-viz " + shlex.join(train_argv),
                  file=sys.stderr)
        print(_evaluate_command(args, runs))
        return 0

    from infsa_viz.evaluation.journal import OutputLock

    with OutputLock(Path(args.out) / "train_seeds", holder=f"another {PROG} run", option="--out"):
        return _train(args, runs)


def _evaluate_command(args: argparse.Namespace, runs: list[tuple[str, int, Path, list[str]]]) -> str:
    models = ",".join(str(out) for *_, out, _ in runs)
    return (f"infsa-viz evaluate --models {models} --data {args.benchmark} --references "
            f"--out metrics/seeds-{args.benchmark}.json")


def _train(args: argparse.Namespace, runs: list[tuple[str, int, Path, list[str]]]) -> int:
    """Every run not finished yet (``OUT`` locked by the caller), then ``OUT/seeds.json``."""
    from infsa_viz.cli import main as cli
    from infsa_viz.io import write_json
    from infsa_viz.train.report import finished_card

    def card_of(variant: str, seed: int, out: Path) -> dict | None:
        """The run's checked card; ``None`` when it has none; a damaged card or another run's is refused."""
        if not (out / "card.json").exists():
            return None
        card = finished_card(out)
        if (card["variant"], card["seed"]) != (variant, seed):
            raise ValueError(f"{out / 'card.json'}: a card of variant {card['variant']!r}, seed {card['seed']} in the "
                             f"folder of {variant}, seed {seed}; move it away to train this run")
        return card

    manifest = []
    for variant, seed, out, train_argv in runs:
        card = card_of(variant, seed, out)
        resume = card is None and (out / "checkpoint" / "progress.json").is_file()
        command = "infsa-viz " + shlex.join(train_argv + (["--resume"] if resume else []))
        print(("# done: " if card else "") + command, file=sys.stderr)
        if card is None:
            code = cli(train_argv + (["--resume"] if resume else []))
            if code:
                print(f"{PROG}: error: {command} failed with exit code {code}", file=sys.stderr)
                return code
            card = card_of(variant, seed, out)
            if card is None:
                raise ValueError(f"{command} ended without writing {out / 'card.json'}")
        manifest.append({"variant": variant, "seed": seed, "out": str(out), "command": command,
                         "test_accuracy": card["test_accuracy"], "train_seconds": card["train_seconds"]})
    evaluate = _evaluate_command(args, runs)
    write_json(Path(args.out) / "seeds.json", {"benchmark": args.benchmark, "data_seed": args.data_seed,
                                               "runs": manifest, "evaluate": evaluate})
    print(evaluate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
