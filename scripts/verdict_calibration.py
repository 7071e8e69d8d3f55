r"""The verdict rule's error rates by simulation: false calls, power, interval coverage (maintainer script).

    nice -n 10 python scripts/verdict_calibration.py            # metrics/verdict-calibration.json + docs/verdict.md
    python scripts/verdict_calibration.py --tables-only         # the docs table from the committed JSON

Simulated per-image scores (:mod:`infsa_viz.evaluation.calibration`: 500 images, 3 variants,
3 or 6 seeds, seed-to-seed SD 0, 3, 6 or 12 points) go through the verdict's own steps (matched
images, seed differences, t-test, Holm, the call rule). For each setting:

* the false-call rate under the variant null, per comparison and family-wise, in a family of 2
  comparisons (one map and figure, two variants against softmax) and of 20 (the verdict's
  5 maps × 2 figures × 2 variants), with its Monte-Carlo standard error;
* the power to call a true difference of 2 and of 5 points in one comparison (the others
  null), in both families;
* the coverage of the 95 % intervals of that difference (hierarchical bootstrap; t-interval).

The test suite (``tests/evaluation/test_calibration.py``) runs the null part with fewer
replications.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from infsa_viz.cli import script_main, script_parser

if __package__ in (None, ""):  # run as a file (python scripts/x.py): make "scripts" importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.verdict import DOCS, METRICS  # noqa: E402  (the verdict's folders and page)

SEEDS = (6, 3)
SEED_SDS = (0.0, 3.0, 6.0, 12.0)
DIFFERENCES = (2.0, 5.0)
#: Map × figure cells: 1 (a family of 2 comparisons) and 10 (the verdict's 5 maps × 2 figures: 20).
CELLS = (1, 10)
SECTION = "verdict-calibration"


def run(args: argparse.Namespace) -> dict[str, Any]:
    from infsa_viz.evaluation.calibration import Scenario, interval_coverage, simulate
    from infsa_viz.progress import progress

    settings = [(s, sd) for s in SEEDS for sd in SEED_SDS]
    rows = []
    for k, (n_seeds, seed_sd) in enumerate(progress(settings, desc="calibration", unit="setting")):
        row: dict[str, Any] = {"n_seeds": n_seeds, "seed_sd": seed_sd, "null": {}, "power": {}, "coverage": {}}
        for cells in CELLS:
            scenario = Scenario(n_seeds=n_seeds, seed_sd=seed_sd, n_cells=cells, n_images=args.n_images)
            row["null"][str(scenario.family)] = simulate(scenario, replications=args.replications, seed=1000 + k)
            for difference in DIFFERENCES:
                power = simulate(Scenario(n_seeds=n_seeds, seed_sd=seed_sd, n_cells=cells, n_images=args.n_images,
                                          difference=difference), replications=args.power_replications, seed=2000 + k)
                row["power"][f"{scenario.family}/{difference:g}"] = power
        for difference in DIFFERENCES:
            row["coverage"][f"{difference:g}"] = interval_coverage(
                Scenario(n_seeds=n_seeds, seed_sd=seed_sd, n_images=args.n_images, difference=difference),
                replications=args.coverage_replications, seed=3000 + k)
        rows.append(row)
        print(f"# {n_seeds} seeds, sd {seed_sd:g}: family-wise false calls (2 / 20) "
              f"{row['null']['2']['familywise_false_call_rate']:.4f} / {row['null']['20']['familywise_false_call_rate']:.4f}",
              file=sys.stderr)
    return {"protocol": {"model": "infsa_viz.evaluation.calibration (module docstring)",
                         "n_images": args.n_images, "variants": 3, "alpha": 0.05, "min_seeds": 3,
                         "replications": {"null": args.replications, "power": args.power_replications,
                                          "coverage": args.coverage_replications},
                         "families": {"2": "1 map x 1 figure x 2 variants", "20": "5 maps x 2 figures x 2 variants"},
                         "power": "share of replications calling the one true difference in its direction, the other "
                                  "comparisons of the family null",
                         "mcse": "Monte-Carlo standard error: sd of the per-replication outcome / sqrt(replications)",
                         "command": args.command},
            "rows": rows}


def _rate(entry: dict[str, Any], name: str) -> str:
    return f"{100 * entry[name]:.1f} ± {100 * entry[f'{name}_mcse']:.1f}"


def table(record: dict[str, Any]) -> str:
    """The calibration table of ``docs/verdict.md`` (rates in %, ± one Monte-Carlo standard error)."""
    reps = record["protocol"]["replications"]
    lines = [f"Rates in % ± one Monte-Carlo standard error ({reps['null']:,} replications under the null, "
             f"{reps['power']:,} per power setting, {reps['coverage']:,} for coverage; "
             f"{record['protocol']['n_images']} images, 3 variants).", "",
             "| seeds | seed-to-seed SD | false calls, family of 2: per comparison | family-wise | "
             "family of 20: family-wise | power, family of 2: 2 / 5 points | power, family of 20: 2 / 5 points | "
             "95 % coverage at 5 points: bootstrap / t |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in record["rows"]:
        power = {key: f"{100 * p['power']:.1f}" for key, p in row["power"].items()}
        cover = row["coverage"]["5"]
        lines.append(f"| {row['n_seeds']} | {row['seed_sd']:g} | {_rate(row['null']['2'], 'false_call_rate')} | "
                     f"{_rate(row['null']['2'], 'familywise_false_call_rate')} | "
                     f"{_rate(row['null']['20'], 'familywise_false_call_rate')} | "
                     f"{power['2/2']} / {power['2/5']} | {power['20/2']} / {power['20/5']} | "
                     f"{100 * cover['hierarchical']:.0f} / {100 * cover['t']:.0f} |")
    return "\n".join(lines)


@script_main("verdict_calibration.py")
def main(argv: list[str] | None = None) -> int:
    parser = script_parser("verdict_calibration.py", __doc__)
    parser.add_argument("--replications", type=int, default=10000, help="under the null (default 10000)")
    parser.add_argument("--power-replications", type=int, default=4000, help="per power setting (default 4000)")
    parser.add_argument("--coverage-replications", type=int, default=400, help="per coverage setting (default 400)")
    parser.add_argument("--n-images", type=int, default=500, help="simulated test images (default 500)")
    parser.add_argument("--metrics", type=Path, default=METRICS, help=f"JSON folder (default {METRICS})")
    parser.add_argument("--docs", type=Path, default=DOCS, help=f"markdown file with the table (default {DOCS})")
    parser.add_argument("--tables-only", action="store_true", help="simulate nothing: rewrite the table")
    args = parser.parse_args(argv)
    args.command = "python scripts/verdict_calibration.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    for name in ("replications", "power_replications", "coverage_replications", "n_images"):
        if getattr(args, name) < 2:
            parser.error(f"--{name.replace('_', '-')}={getattr(args, name)} must be at least 2")

    from scripts.doc_sections import study_to_docs

    return study_to_docs(args.metrics / "verdict-calibration.json", args.docs, lambda record: {SECTION: table(record)},
                         None if args.tables_only else lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
