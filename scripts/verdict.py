r"""Are InfSA maps better than softmax maps? Every benchmark's seeds evaluated, tested, summarised (maintainer script).

    python scripts/verdict.py --threads 2        # evaluate every seed set, then write the summary
                                                 # (the committed reports; N_IMAGES images each)
    python scripts/verdict.py --summary-only     # rebuild the summary from the committed reports
    python scripts/verdict.py --journal runs/journal --threads 2
                                                 # keep finished chunks: later seeds add only their own
    python scripts/verdict.py --metrics /tmp/again --threads 2 && python scripts/verdict.py --compare /tmp/again
                                                 # reproduce: every figure within 0.5 points?

For each benchmark of the verdict (:data:`scripts.verdict_benchmarks.VERDICT_BENCHMARKS`: name,
data, seed folder, images, groups of models) with trained seeds in
``models/seeds/<folder>/[<group>/]<variant>-seed<k>/`` this runs (resumable: a killed run continues)

    infsa-viz evaluate --models <every seed model> --data DATA --methods METHODS --references
        --n-images N --subsample 0 --road-images 0 --sanity-images 0 --threads T
        --out metrics/verdict-<benchmark>.json

whose report holds every row with its 95 % bootstrap intervals, the paired tests (same images,
models of one seed: statements about those trained models), ``benchmark_quality`` (per model and
``across_seeds``), ``seeds`` (mean ± sd over seeds) and ``verdict`` (each variant against softmax
with the trained model as the unit, :mod:`infsa_viz.stats.verdict`: per seed, the mean
difference on the images both models classify correctly; the seed differences' t-test,
Holm-adjusted over figures × maps × variants, makes the call; t-, simultaneous and
hierarchical-bootstrap intervals, the detectable difference and the call under each image set).
``metrics/verdict.json`` gathers what the README shows from every benchmark's report (for every
variant × map × figure: the seed-level difference in points, its intervals, raw and Holm p, the
detectable difference, seeds, matched images and the image-set sensitivity; a report written
before those fields gets them recomputed from its seed differences and rows, as far as it stores
them), ``metrics/verdict.html`` plots the seed means with their spread, and the
``verdict-tables`` and ``verdict-image-sets`` sections of ``docs/verdict.md``
(:mod:`scripts.verdict_text`) are rewritten from it.
The protocols beyond MoRF-AOC and box PR-AUC (deletion/insertion, ROAD, sanity) are off here:
``metrics/attention-quality.json`` runs them on the shipped models.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):  # run as a file (python scripts/x.py): make "scripts" importable
    sys.path.insert(0, str(ROOT))
from infsa_viz.cli import check_outputs, script_main, script_parser  # noqa: E402
from scripts.verdict_benchmarks import VERDICT_BENCHMARKS, seed_models  # noqa: E402

SEEDS_DIR = Path("models") / "seeds"
METRICS = Path("metrics")
DOCS = Path("docs") / "verdict.md"
#: The maps of the verdict: the attention-type maps InfSA is about, and Chefer 2021 (the best box
#: PR-AUC of the published evaluation) as the state-of-the-art attention-gradient baseline.
METHODS = ("attention", "rollout", "visits", "perron", "chefer2021")
#: Figures of the verdict and the factor that turns each into points: faithfulness by evidence (the
#: evidence mass accuracy x 100: the one figure the controlled meta-evaluation trusts for every model,
#: docs/metrics.md), MoRF-AOC (in % already) and plausibility (box PR-AUC x 100).
FIGURES = {"evidence_mass_accuracy": 100.0, "morf_aoc": 1.0, "box_pr_auc": 100.0}
#: Row entries that are shares in [0, 1] (× 100 for points) besides the registry's percent figures.
SHARES = ("accuracy", "chain_valid_images", "chain_valid_rows")
#: The reproduction tolerance of issue #15, in points.
TOLERANCE = 0.5
#: Test images per benchmark (the first N), from the benchmarks' entries.
N_IMAGES = {b.name: b.n_images for b in VERDICT_BENCHMARKS.values()}


def evaluate_argv(benchmark: str, models: list[str], args: argparse.Namespace) -> list[str]:
    entry = VERDICT_BENCHMARKS[benchmark]
    n_images = entry.n_images if args.n_images is None else args.n_images
    argv = ["evaluate", "--models", ",".join(models), "--data", entry.data, "--methods", ",".join(METHODS),
            "--references", "--n-images", str(n_images), "--subsample", "0", "--road-images", "0",
            "--sanity-images", "0", "--out", str(args.metrics / f"verdict-{benchmark}.json")]
    if args.journal is not None:
        argv += ["--journal", str(args.journal / benchmark)]
    return argv + list(entry.options) + (["--threads", str(args.threads)] if args.threads else [])


def greedy_argv(benchmark: str, models: list[str], args: argparse.Namespace) -> list[str]:
    """The MoRF ceiling run: the verdict's maps, the random map and the greedy deletion oracle, MoRF only,
    on the benchmark's ``greedy_images`` (``metrics/verdict-<benchmark>-greedy.json``)."""
    entry = VERDICT_BENCHMARKS[benchmark]
    n_images = entry.greedy_images if args.n_images is None else min(entry.greedy_images, args.n_images)
    argv = ["evaluate", "--models", ",".join(models), "--data", entry.data, "--methods",
            ",".join([*METHODS, "random", "greedy_deletion"]), "--metrics", "perturbation", "--n-images",
            str(n_images), "--sanity-images", "0", "--out", str(args.metrics / f"verdict-{benchmark}-greedy.json")]
    if args.journal is not None:
        argv += ["--journal", str(args.journal / f"{benchmark}-greedy")]
    return argv + list(entry.options) + (["--threads", str(args.threads)] if args.threads else [])


def morf_ceiling(report: dict[str, Any]) -> dict[str, Any]:
    """Per variant, mean ± sd over seeds of MoRF-AOC's headroom on the greedy run's images: the greedy
    oracle, the best attention-type map and the random map (points), and oracle − best attention."""
    from infsa_viz.stats import benchmark_quality, quality_across_seeds
    from infsa_viz.stats.verdict import split_seed

    across = quality_across_seeds(benchmark_quality(report["results"]))
    variant_of = {split_seed(r["model"])[0]: r["variant"] for r in report["results"]}
    keys = ("oracle", "random", "best_attention_value", "oracle_minus_random", "oracle_minus_best_attention")
    return {"n_images": report["dataset"].get("n_images"), "command": report["protocol"].get("command"),
            "per_variant": by_variant(across, variant_of, lambda q: {k: q["morf_aoc"].get(k) for k in keys})}


def by_variant(across: dict[str, Any], variant_of: dict[str, str], entry: Any = lambda q: q) -> dict[str, Any]:
    """``quality_across_seeds`` entries keyed by variant; where the models sit in several folders (groups,
    e.g. training settings) by ``"<variant> · <folder name>"``; each names its ``variant`` and ``group``."""
    from infsa_viz.stats.verdict import model_group

    several = len({model_group(base) for base in across}) > 1
    out = {}
    for base, q in across.items():
        variant, group = variant_of.get(base, base), model_group(base)
        out[f"{variant} · {group.rsplit('/', 1)[-1]}" if several else variant] = {
            **entry(q), "variant": variant, "group": group}
    return out


def _points(spread: dict[str, Any] | None, scale: float) -> dict[str, Any] | None:
    if spread is None:
        return None
    out = {k: None if spread.get(k) is None else round(spread[k] * scale, 3) for k in ("mean", "sd", "min", "max")}
    if "per_seed" in spread:
        out["per_seed"] = [None if v is None else round(v * scale, 3) for v in spread["per_seed"]]
        out["per_seed_ci"] = [None if ci is None else [round(c * scale, 3) for c in ci]
                              for ci in spread.get("per_seed_ci", [])]
    return out


def _scaled(value: float | None, scale: float, digits: int = 3) -> float | None:
    return None if value is None else round(value * scale, digits)


def _interval(pair: list[float | None] | None, scale: float) -> list[float | None] | None:
    return None if pair is None else [_scaled(v, scale) for v in pair]


def seed_level(comparison: dict[str, Any], scale: float) -> dict[str, Any]:
    """One comparison of the report's seed-level ``verdict`` in points (differences, intervals, means)."""
    per_seed = []
    for s in comparison["per_seed"]:
        image = s.get("image_level") or {}
        per_seed.append({
            "seed": s["seed"], "n_images": s["n_images"], "difference": _scaled(s.get("difference"), scale),
            "variant_mean": _scaled(s.get("variant_mean"), scale), "baseline_mean": _scaled(s.get("baseline_mean"), scale),
            "variant_accuracy": _scaled(s["variant_accuracy"], 100.0), "baseline_accuracy": _scaled(s["baseline_accuracy"], 100.0),
            "image_level": {"difference_ci": _interval(image.get("difference_ci"), scale),
                            "p_bootstrap_holm": image.get("p_bootstrap_holm"),
                            "p_wilcoxon_holm": image.get("p_wilcoxon_holm")} if image else None})
        per_seed[-1]["image_sets"] = {name: _scaled(entry["difference"], scale)
                                      for name, entry in s.get("image_sets", {}).items()}
    image_sets = {name: {**entry, **{k: _scaled(entry.get(k), scale) for k in ("difference", "sd_seeds") if k in entry}}
                  for name, entry in comparison.get("image_sets", {}).items()}
    return {key: comparison.get(key) for key in ("group", "figure", "method", "variant", "baseline", "seeds", "n_seeds",
                                                 "t", "p", "p_holm", "call", "reason", "family", "accuracy_gap",
                                                 "accuracy_flag")} | {
        "difference": _scaled(comparison["difference"], scale), "ci": _interval(comparison["ci"], scale),
        "ci_t": _interval(comparison["ci_t"], scale), "ci_simultaneous": _interval(comparison["ci_simultaneous"], scale),
        "detectable_difference": _scaled(comparison["detectable_difference"], scale),
        "sd_seeds": _scaled(comparison["sd_seeds"], scale), "matched_images": comparison["matched_images"],
        "image_sets": image_sets, "per_seed": per_seed}


def summarise(report: dict[str, Any], path: str, greedy: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the README and ``docs/verdict.md`` read from one benchmark's report, figures in points (% for both).

    ``verdict`` holds the report's seed-level comparisons (:func:`infsa_viz.stats.variant_verdict`);
    a report written before them (issue #28) gives none and says so in ``verdict_note``.
    """
    from infsa_viz.stats import benchmark_quality, quality_across_seeds
    from infsa_viz.stats.comparisons import seed_summary
    from infsa_viz.stats.verdict import completed_verdict, model_group, model_ignorant_controls, split_seed

    # recomputed from the rows, so a report whose seeds section predates a figure of FIGURES has it too
    seeds = seed_summary(report["results"], figures=("accuracy", *FIGURES))
    figures = [{"variant": s["variant"], "group": model_group(s["model"]), "method": s["method"], "seeds": s["seeds"],
                "accuracy": _points(s["figures"].get("accuracy"), 100.0),
                **{f: _points(s["figures"].get(f), scale) for f, scale in FIGURES.items()}} for s in seeds]
    verdict = report.get("verdict", {})
    complete, sets_note, same = completed_verdict(report)
    comparisons = [seed_level(c, FIGURES[c["figure"]]) for c in complete if c["figure"] in FIGURES]
    note = None if comparisons or not verdict.get("comparisons") else (
        "the report predates the seed-level verdict (issue #28); rerun python scripts/verdict.py")
    variant_of = {split_seed(r["model"])[0]: r["variant"] for r in report["results"]}
    # Recomputed from the report's rows and method-vs-method tests (the same function the report's
    # own section comes from), so a report written before adjacent pairs were counted has them too.
    method_tests = report.get("paired_tests", {}).get("method_vs_method")
    across = quality_across_seeds(benchmark_quality(report["results"], method_tests))
    # keyed by variant; where the models sit in several folders (groups, e.g. training settings), by
    # "<variant> · <folder name>", each entry naming its variant and group
    quality = by_variant(across, variant_of)
    return {"report": path, "dataset": report["dataset"].get("name"), "n_images": report["dataset"].get("n_images"),
            "command": report["protocol"].get("command"), "models": list(dict.fromkeys(r["model"] for r in report["results"])),
            "figures": figures, "verdict": comparisons, "verdict_protocol": verdict.get("protocol"),
            "identical_maps": same, "controls": model_ignorant_controls(report["results"], FIGURES),
            **({"verdict_note": note} if note else {}), **({"image_sets_note": sets_note} if sets_note else {}),
            "benchmark_quality": quality,
            "morf_ceiling": None if greedy is None else morf_ceiling(greedy),
            "quality_goals": report.get("benchmark_quality", {}).get("goals")}


def summary(reports: dict[str, Path], command: str) -> dict[str, Any]:
    from infsa_viz.stats.verdict import PAPER_FIGURES
    from infsa_viz.evaluation.writer import read_report

    benchmark_of = {p: b for b, p in reports.items()}

    def greedy(path: Path) -> dict[str, Any] | None:
        twin = path.with_name(path.stem + "-greedy.json")
        return read_report(twin, dataset=VERDICT_BENCHMARKS[benchmark_of[path]].data) if twin.is_file() else None

    return {"protocol": {"command": command, "methods": list(METHODS), "figures": list(FIGURES),
                         "unit": "points: evidence rank correlation x 100, MoRF-AOC in %, box PR-AUC x 100, "
                                 "accuracy in %",
                         "spread": "mean, sample sd (ddof 1), min and max over training seeds; per_seed_ci: each "
                                   "seed's own 95 % bootstrap interval over images",
                         "images": {"figures": "each model's table row: evidence rank correlation and box PR-AUC over "
                                               "every image where defined, MoRF-AOC over the model's correctly "
                                               "classified images",
                                    "verdict": "differences, intervals and calls: the images both models of a seed "
                                               "classify correctly (matched); per_seed baseline_mean / variant_mean "
                                               "on the same images; image_sets: the call under each image set"}},
            "paper": PAPER_FIGURES,
            "benchmarks": {b: summarise(read_report(p, dataset=VERDICT_BENCHMARKS[b].data), str(p), greedy(p))
                           for b, p in reports.items()}}


def html(record: dict[str, Any]) -> str:
    """Seed means with ± sd error bars, per benchmark and figure, one bar colour per variant (the same in
    every panel)."""
    import plotly.graph_objects as go
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    from infsa_viz.model import VARIANTS

    # one row of panels per benchmark and group of models (a training setting): never two groups in one panel
    panels = []
    for b, bench in record["benchmarks"].items():
        groups = list(dict.fromkeys(e.get("group") for e in bench["figures"]))
        panels += [(b, g, b if len(groups) == 1 else f"{b} · {(g or '').rsplit('/', 1)[-1]}") for g in groups]
    labels = {"evidence_mass_accuracy": "evidence mass accuracy x 100", "morf_aoc": "MoRF-AOC %",
              "box_pr_auc": "box PR-AUC %"}
    titles = [f"{name}: {labels.get(f, f)} (row means ± sd over seeds)" for *_, name in panels for f in FIGURES]
    fig = make_subplots(rows=max(1, len(panels)), cols=len(FIGURES), subplot_titles=titles)
    shown = set()
    for row, (benchmark, group, _) in enumerate(panels, start=1):
        entries = [e for e in record["benchmarks"][benchmark]["figures"] if e.get("group") == group]
        for col, figure in enumerate(FIGURES, start=1):
            for variant in dict.fromkeys(e["variant"] for e in entries):
                mine = [e for e in entries if e["variant"] == variant and e[figure] and e[figure]["mean"] is not None]
                fig.add_trace(go.Bar(
                    x=[e["method"] for e in mine], y=[e[figure]["mean"] for e in mine], name=variant,
                    legendgroup=variant, showlegend=variant not in shown,
                    marker_color=qualitative.Plotly[(VARIANTS.index(variant) if variant in VARIANTS else len(VARIANTS))
                                                    % len(qualitative.Plotly)],
                    error_y={"type": "data", "array": [e[figure]["sd"] or 0.0 for e in mine]},
                    customdata=[[len(e["seeds"]), e[figure]["min"], e[figure]["max"]] for e in mine],
                    hovertemplate="%{x}: %{y:.1f} ± %{error_y.array:.1f} over %{customdata[0]} seeds "
                                  "(min %{customdata[1]:.1f}, max %{customdata[2]:.1f})<extra>" + variant + "</extra>"),
                    row, col)
                shown.add(variant)
    fig.update_layout(barmode="group", height=420 * max(1, len(panels)),
                      title="Are InfSA maps better than softmax maps? (python scripts/verdict.py)")
    return fig.to_html(include_plotlyjs="directory", full_html=True)


def largest_difference(report: dict[str, Any], other: dict[str, Any]) -> tuple[float, str | None, int]:
    """Largest difference in points over every numeric figure of the rows both reports hold.

    Returns:
        ``(difference, "model · method · figure", figures compared)``; MoRF/LeRF/AOPC-type
        figures are in % already, shares (accuracy, the registry's percent figures) count × 100.
    """
    from infsa_viz.metrics.registry import FIGURES as REGISTERED

    rows = {(r["model"], r["method"]): r for r in other["results"]}
    worst, where, compared = 0.0, None, 0
    for row in report["results"]:
        twin = rows.get((row["model"], row["method"]))
        for key, value in row.items() if twin else ():
            theirs = twin.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not isinstance(theirs, (int, float)):
                continue
            if not (math.isfinite(value) and math.isfinite(theirs)):
                continue
            scale = 100.0 if key in SHARES or (key in REGISTERED and REGISTERED[key].percent) else 1.0
            compared += 1
            if abs(value - theirs) * scale > worst:
                worst, where = abs(value - theirs) * scale, f"{row['model']} · {row['method']} · {key}"
    return worst, where, compared


def compare(args: argparse.Namespace) -> int:
    """``--compare DIR``: each ``metrics/verdict-<benchmark>.json`` against ``DIR``'s (writes nothing)."""
    from infsa_viz.evaluation.writer import read_report

    worst, found = 0.0, 0
    for benchmark in args.benchmarks:
        ours, other = args.metrics / f"verdict-{benchmark}.json", args.compare / f"verdict-{benchmark}.json"
        if not (ours.is_file() and other.is_file()):
            print(f"# {benchmark}: {ours if not ours.is_file() else other} does not exist", file=sys.stderr)
            continue
        data = VERDICT_BENCHMARKS[benchmark].data
        difference, where, compared = largest_difference(read_report(ours, parts=("results",), dataset=data),
                                                         read_report(other, parts=("results",), dataset=data))
        found += compared
        print(f"{benchmark}: {compared} figures compared, largest difference {difference:.4g} points"
              + (f" ({where})" if where else ""), file=sys.stderr)
        worst = max(worst, difference)
    if not found:
        print("no figure to compare", file=sys.stderr)
        return 2
    return 0 if worst <= TOLERANCE else 1


@script_main("verdict.py")
def main(argv: list[str] | None = None) -> int:
    from infsa_viz.commands.lists import threads
    from scripts.verdict_benchmarks import RETIRED, VERDICT_BENCHMARKS as BENCHMARKS

    parser = script_parser("verdict.py", __doc__)
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS),
                        type=lambda t: [b for b in t.split(",") if b], help="comma-separated (default all)")
    parser.add_argument("--n-images", type=int, default=None,
                        help=f"first N test images of every benchmark (default per benchmark: {N_IMAGES})")
    parser.add_argument("--threads", type=threads(), default=None, help="torch CPU threads")
    parser.add_argument("--seeds-dir", type=Path, default=SEEDS_DIR, help=f"default {SEEDS_DIR}")
    parser.add_argument("--metrics", type=Path, default=METRICS, help=f"reports folder (default {METRICS})")
    parser.add_argument("--journal", type=Path, default=None, metavar="DIR",
                        help="keep each benchmark's finished chunks in DIR/<benchmark> (e.g. runs/journal), so "
                             "a rerun after more seeds finish training evaluates only the new models")
    parser.add_argument("--summary-only", action="store_true", help="evaluate nothing; summarise the reports")
    parser.add_argument("--docs", type=Path, default=DOCS, help=f"markdown file with the verdict-tables section "
                                                                  f"(default {DOCS})")
    parser.add_argument("--compare", type=Path, default=None, metavar="DIR",
                        help="evaluate and write nothing: compare each report with DIR/verdict-<benchmark>.json "
                             f"(rows both hold); exit 1 if a figure differs by more than {TOLERANCE} points")
    args = parser.parse_args(argv)
    unknown = [b for b in args.benchmarks if b not in BENCHMARKS]
    if unknown:
        why = "".join(f"; {b} left the verdict: {RETIRED[b]}" for b in unknown if b in RETIRED)
        parser.error(f"--benchmarks: {unknown} are not benchmarks of the verdict; expected some of {list(BENCHMARKS)}"
                     + why)
    if not args.benchmarks:
        parser.error(f"--benchmarks names no benchmark; expected some of {list(BENCHMARKS)}")
    for name in ("n_images", "threads"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}={getattr(args, name)} must be a positive integer")

    if args.compare is not None:
        return compare(args)

    from infsa_viz.cli import main as cli
    from infsa_viz.evaluation.writer import write_plotly_js
    from infsa_viz.io import atomic_write, write_json
    from scripts import verdict_text
    from scripts.doc_sections import read_section, write_section

    def check_docs() -> None:
        """The docs file and its section exist: checked before an evaluation runs or a file is written."""
        if not args.docs.is_file():
            raise ValueError(f"--docs={str(args.docs)!r} does not exist; expected a markdown file with the "
                             "verdict-tables section")
        for section in ("verdict-tables", "verdict-image-sets"):
            read_section(args.docs, section)

    reports = {}
    for benchmark in args.benchmarks:
        models = seed_models(benchmark, args.seeds_dir)
        out = args.metrics / f"verdict-{benchmark}.json"
        if not models:
            print(f"# {benchmark}: no seed models in {args.seeds_dir / benchmark}", file=sys.stderr)
            continue
        if not args.summary_only:
            check_docs()
            for command in (evaluate_argv(benchmark, models, args), greedy_argv(benchmark, models, args)):
                print("infsa-viz " + shlex.join(command), file=sys.stderr)
                code = cli(command)
                if code:
                    return code
        if out.is_file():
            reports[benchmark] = out
    if not reports:
        print("no report to summarise", file=sys.stderr)
        return 2
    record = summary(reports, "python scripts/verdict.py " + shlex.join(sys.argv[1:] if argv is None else argv))
    sections = {"verdict-tables": verdict_text.verdict_tables(record),  # everything is made before the first
                "verdict-image-sets": verdict_text.image_set_table(record)}  # file is written
    try:
        page = html(record)
    except ImportError:
        page = None
        print("plotly is not installed: verdict.html not written", file=sys.stderr)
    check_docs()
    written = {"--metrics (its verdict.json)": args.metrics / "verdict.json", "--docs": args.docs,
               "--metrics (its verdict.html)": args.metrics / "verdict.html"}
    check_outputs(written, [*reports.values(), *(m for b in reports for m in seed_models(b, args.seeds_dir))])
    write_json(args.metrics / "verdict.json", record)
    for section, table in sections.items():
        write_section(args.docs, section, table)
    if page is not None:
        write_plotly_js(args.metrics)
        atomic_write(args.metrics / "verdict.html", page)
    print(f"wrote {args.metrics / 'verdict.json'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
