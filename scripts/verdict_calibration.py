r"""The verdict rule's error rates by simulation: false calls, power, interval coverage (maintainer script).

    nice -n 10 python scripts/verdict_calibration.py            # metrics/verdict-calibration.json + docs/verdict.md
    python scripts/verdict_calibration.py --tables-only         # the docs table from the committed JSON

Simulated per-image scores (:mod:`infsa_viz.stats.calibration`: 300 images, 3 variants,
12 or 6 seeds, seed-to-seed SD 0, 1, 3 or 6 points) go through the verdict's own steps (matched
images, seed differences, t-test, Holm, the call rule). For each setting:

* the false-call rate under the variant null, family-wise in a family of 2 comparisons (one map
  and figure, two variants against softmax) and per comparison and family-wise in the verdict's
  family of 30 (3 figures × 5 maps × 2 variants), whose cells are correlated as the verdict's
  seed differences are (:func:`measured_correlations`, from ``metrics/verdict.json``: two maps of
  one figure, and two figures, of one model), with its Monte-Carlo standard error, and how often
  all 30 simultaneous intervals cover;
* the power to call a true difference of 2 and of 5 points in one comparison of the family of
  30 (the others null), and at the detectable difference the verdict reports for that SD of the
  seed differences (:func:`infsa_viz.stats.seed_stats.detectable_difference`: a bound from
  Holm's first step, so Holm's simulated power there should be at least 80 %);
* the coverage of the 95 % intervals of a 5-point difference (hierarchical bootstrap; t-interval).

The test suite (``tests/evaluation/test_calibration.py``) runs the null part with fewer
replications and images.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from pathlib import Path
from typing import Any

from infsa_viz.cli import script_main, script_parser

if __package__ in (None, ""):  # run as a file (python scripts/x.py): make "scripts" importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripts.verdict import DOCS, METRICS  # noqa: E402  (the verdict's folders and page)

SEEDS = (12, 6)
#: Seed-to-seed SDs of a model's figure (points); the measured SDs of the seed differences (0.5-4
#: points on cluttered-digits) correspond to 0.35-2.8.
SEED_SDS = (0.0, 1.0, 3.0, 6.0)
DIFFERENCES = (2.0, 5.0)
#: The verdict's family: 3 figures x 5 maps x 2 variants = 30 comparisons.
FIGURES, MAPS = 3, 5
SECTION = "verdict-calibration"


def _comparisons_by_variant(record: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The comparisons of one variant and one group of models (a training setting), benchmark by benchmark:
    their seed differences come from the same models, so only they can correlate across seeds."""
    out = []
    for bench in record["benchmarks"].values():
        for key in dict.fromkeys((c["variant"], c.get("group")) for c in bench["verdict"]):
            out.append([c for c in bench["verdict"] if (c["variant"], c.get("group")) == key and c.get("per_seed")])
    return out


def measured_correlations(record: dict[str, Any]) -> dict[str, Any]:
    """How the seed differences of one variant's comparisons correlate in ``metrics/verdict.json``: the
    mean Pearson correlation (across seeds) of two comparisons that share the figure (two maps) and of
    two that do not, over every variant and benchmark; clipped to ``0 <= across <= within <= 1``."""
    import numpy as np

    within, across = [], []
    for comparisons in _comparisons_by_variant(record):
        rows = np.array([[s["difference"] for s in c["per_seed"]] for c in comparisons], dtype=np.float64)
        corr = np.corrcoef(rows)
        for i in range(len(comparisons)):
            for j in range(i + 1, len(comparisons)):
                if np.isfinite(corr[i, j]):
                    (within if comparisons[i]["figure"] == comparisons[j]["figure"] else across).append(corr[i, j])
    if not within or not across:
        raise ValueError("metrics/verdict.json holds no comparisons to measure correlations from; expected the "
                         "seed-level verdict (python scripts/verdict.py)")
    figure = float(np.clip(np.mean(within), 0.0, 1.0))
    model = float(np.clip(np.mean(across), 0.0, figure))
    return {"figure_correlation": round(figure, 3), "model_correlation": round(model, 3),
            "pairs": {"same_figure": len(within), "across_figures": len(across)},
            "seeds": sorted({len(c[0]["per_seed"]) for c in _comparisons_by_variant(record)})}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from infsa_viz.stats.calibration import Scenario, interval_coverage, simulate
    from infsa_viz.stats.seed_stats import detectable_difference
    from infsa_viz.io import read_json
    from infsa_viz.progress import progress

    measured = measured_correlations(read_json(args.metrics / "verdict.json"))
    correlation = {k: measured[k] for k in ("figure_correlation", "model_correlation")}
    settings = [(s, sd) for s in SEEDS for sd in SEED_SDS]
    rows = []
    for k, (n_seeds, seed_sd) in enumerate(progress(settings, desc="calibration", unit="setting")):
        small = Scenario(n_seeds=n_seeds, seed_sd=seed_sd, n_images=args.n_images)
        family = Scenario(n_seeds=n_seeds, seed_sd=seed_sd, n_images=args.n_images, n_maps=MAPS, n_figures=FIGURES,
                          **correlation)
        sd = family.seed_difference_sd()
        detectable = detectable_difference(sd, n_seeds, alpha=0.05 / family.family)
        row: dict[str, Any] = {"n_seeds": n_seeds, "seed_sd": seed_sd, "seed_difference_sd": round(sd, 4),
                               "detectable_difference": round(detectable, 4), "power": {}}
        row["null"] = {str(sc.family): simulate(sc, replications=args.replications, seed=1000 + k)
                       for sc in (small, family)}
        for difference in (*DIFFERENCES, detectable):
            key = "detectable" if difference == detectable else f"{difference:g}"
            row["power"][key] = simulate(dataclasses.replace(family, difference=difference),
                                         replications=args.power_replications, seed=2000 + k)
        row["coverage"] = interval_coverage(dataclasses.replace(small, difference=5.0),
                                            replications=args.coverage_replications, seed=3000 + k)
        rows.append(row)
        print(f"# {n_seeds} seeds, sd {seed_sd:g}: family-wise false calls (2 / {family.family}) "
              f"{row['null']['2']['familywise_false_call_rate']:.4f} / "
              f"{row['null'][str(family.family)]['familywise_false_call_rate']:.4f}", file=sys.stderr)
    return {"protocol": {"model": "infsa_viz.stats.calibration (module docstring)",
                         "n_images": args.n_images, "variants": 3, "alpha": 0.05, "min_seeds": 3,
                         "replications": {"null": args.replications, "power": args.power_replications,
                                          "coverage": args.coverage_replications},
                         "families": {"2": "1 map x 1 figure x 2 variants",
                                      "30": f"{MAPS} maps x {FIGURES} figures x 2 variants, the cells of one model "
                                            "correlated as measured in metrics/verdict.json (correlations)"},
                         "correlations": measured,
                         "power": "share of replications calling the one true difference in its direction, the other "
                                  "comparisons of the family of 30 null; 'detectable': at the detectable difference "
                                  "(80 % power of Holm's first, Bonferroni step, noncentral t) for the scenario's SD of "
                                  "seed differences",
                         "coverage": "95 % intervals of a 5-point difference tested alone (bootstrap, t)",
                         "mcse": "Monte-Carlo standard error: sd of the per-replication outcome / sqrt(replications)",
                         "command": args.command},
            "rows": rows}


def _rate(entry: dict[str, Any], name: str) -> str:
    return f"{100 * entry[name]:.1f} ± {100 * entry[f'{name}_mcse']:.1f}"


def table(record: dict[str, Any]) -> str:
    """The calibration table of ``docs/verdict.md`` (rates in %, ± one Monte-Carlo standard error)."""
    reps, corr = record["protocol"]["replications"], record["protocol"]["correlations"]
    lines = [f"Rates in % ± one Monte-Carlo standard error ({reps['null']:,} replications under the null, "
             f"{reps['power']:,} per power setting, {reps['coverage']:,} for coverage; "
             f"{record['protocol']['n_images']} images, 3 variants; the family of 30 correlated as measured: "
             f"{corr['figure_correlation']:.2f} between two maps of one figure, {corr['model_correlation']:.2f} "
             "across figures).", "",
             "| seeds | seed-to-seed SD | SD of seed differences | family of 2: family-wise false calls | "
             "family of 30: per comparison | family-wise | all 30 simultaneous intervals cover | "
             "power in the family of 30: 2 / 5 points | detectable difference (80 %, Bonferroni bound) | "
             "Holm's power there | 95 % coverage at 5 points: bootstrap / t |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row in record["rows"]:
        null, power, cover = row["null"]["30"], row["power"], row["coverage"]
        lines.append(f"| {row['n_seeds']} | {row['seed_sd']:g} | {row['seed_difference_sd']:.2f} | "
                     f"{_rate(row['null']['2'], 'familywise_false_call_rate')} | {_rate(null, 'false_call_rate')} | "
                     f"{_rate(null, 'familywise_false_call_rate')} | {_rate(null, 'simultaneous_coverage')} | "
                     f"{100 * power['2']['power']:.1f} / {100 * power['5']['power']:.1f} | "
                     f"{row['detectable_difference']:.2f} | {_rate(power['detectable'], 'power')} | "
                     f"{100 * cover['hierarchical']:.0f} / {100 * cover['t']:.0f} |")
    return "\n".join(lines)


@script_main("verdict_calibration.py")
def main(argv: list[str] | None = None) -> int:
    parser = script_parser("verdict_calibration.py", __doc__)
    parser.add_argument("--replications", type=int, default=4000, help="under the null (default 4000)")
    parser.add_argument("--power-replications", type=int, default=2000, help="per power setting (default 2000)")
    parser.add_argument("--coverage-replications", type=int, default=200, help="per coverage setting (default 200)")
    parser.add_argument("--n-images", type=int, default=300, help="simulated test images (default 300)")
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
