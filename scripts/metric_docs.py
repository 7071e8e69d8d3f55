r"""docs/metrics.md from the metric registry and the committed reports (maintainer script).

    python scripts/metric_docs.py           # write docs/metrics.md
    python scripts/metric_docs.py --check   # exit 1 when docs/metrics.md is out of date

One section per registered metric (its paragraph, figures, settings, cost and reference), the
reference maps (every registered floor and ceiling), the measured cost per image
(``metrics/bench-metric-cost.json``, ``python -m benchmarks metric-cost``) and the meta-evaluation
(``metrics/meta-evaluation.json``, ``python scripts/meta_evaluation.py``). Nothing here is typed
twice: the text is the registry's.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

from infsa_viz.cli import script_main, script_parser

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "metrics.md"
COST = ROOT / "metrics" / "bench-metric-cost.json"
META = ROOT / "metrics" / "meta-evaluation.json"
CEILING = ROOT / "metrics" / "morf-ceiling.json"


def _paragraph(obj: Any) -> str:
    return " ".join(inspect.cleandoc(obj.__doc__ or "").split())


def metric_sections() -> list[str]:
    from infsa_viz.metrics.registry import METRICS, RowMetric

    out = []
    for name, metric in METRICS.items():
        lines = [f"### {name} ({metric.category})", "", _paragraph(type(metric)), ""]
        lines += ["| figure | label | direction | unit | images | ceiling |", "|---|---|---|---|---|---|"]
        for f in metric.figures:
            images = "the curve selection (`--select`)" if f.images == "scored" else "where defined"
            lines.append(f"| `{f.name}` | {f.label} | {f.direction} | {f.unit}{' (shown in %)' if f.percent else ''} "
                         f"| {images} | {f'`{f.ceiling}`' if f.ceiling else '–'} |")
        settings = [f"`{s.flag}` (default {s.default}{'' if s.maximum is None else f', at most {s.maximum:g}'})"
                    for s in metric.settings]
        lines += ["", f"- Rule stored with every result: {metric.rule}."]
        if settings:
            lines.append(f"- Settings: {', '.join(settings)}.")
        if metric.subset:
            lines.append(f"- Runs on the images whose index is below `{metric.subset}`.")
        if isinstance(metric, RowMetric):
            lines.append("- Computed once per (model, method), not per image.")
        if metric.cost:
            lines.append(f"- Cost: {metric.cost}.")
        if metric.citation:
            lines.append(f"- Reference: {metric.citation}.")
        out.append("\n".join(lines))
    return out


def reference_table() -> str:
    from infsa_viz.maps import METHODS

    lines = ["| map | role | what it is | added by `--references` | cost |", "|---|---|---|---|---|"]
    for name, m in METHODS.items():
        if m.role != "explanation":
            lines.append(f"| `{name}` | {m.role} | {m.description} | {'yes' if m.with_references else 'no: name it'} "
                         f"| {m.cost} |")
    return "\n".join(lines)


def cost_table() -> str:
    if not COST.is_file():
        return "_Not measured yet: run `python -m benchmarks metric-cost --out metrics/bench-metric-cost.json`._"
    report = json.loads(COST.read_text())
    models = report["models"]
    labels = list(models)
    rows = list(next(iter(models.values()))["ms_per_image"])
    lines = ["| ms per image | " + " | ".join(f"{k} ({v['image_side']} px, {v['patches']} patches)"
                                               for k, v in models.items()) + " |",
             "|---|" + "---:|" * len(labels)]
    for row in rows:
        lines.append(f"| {row} | " + " | ".join(f"{models[k]['ms_per_image'][row]:.1f}" for k in labels) + " |")
    p = report["protocol"]
    lines += ["", f"Median of {p['repeats']} runs over {p['n_images']} images, {p['threads']} thread(s); "
                  f"command: `{p['command']}`."]
    return "\n".join(lines)


def _cell(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "–"
    fmt = lambda v, spec: "n/a" if v is None else format(v, spec)  # noqa: E731
    broken = "none" if entry.get("noise_breakdown_min") is None else (
        f"{entry['noise_breakdown_min']:g} (ε {entry['noise_breakdown_epsilon_min']:.3g})")
    return (f"{entry['trustworthy']} / {entry['models']} ({fmt(entry['spearman_max'], '+.2f')}, "
            f"{fmt(entry['stability_min'], '.2f')}, {fmt(entry.get('reactivity_min'), '.2f')}, {broken})")


def meta_table() -> str:
    if not META.is_file():
        return "_Not measured yet: run `python scripts/meta_evaluation.py`._"
    report = json.loads(META.read_text())
    summary = report["summary"]
    benchmarks = list(summary)
    figures = list(dict.fromkeys(f for b in benchmarks for f in summary[b]["figures"]))
    header = ("| figure | " + " | ".join(f"{b}: trusted / models (max ρ, min stability, min reactivity, smallest "
                                           "noise c where stability < 0.9 or undefined)" for b in benchmarks) + " |")
    lines = [header, "|---|" + "---|" * len(benchmarks)]
    for figure in figures:
        role = next((summary[b]["figures"][figure]["role"] for b in benchmarks if figure in summary[b]["figures"]),
                    "metric")
        label = f"`{figure}`" + ("" if role == "metric" else f" ({role})")
        lines.append(f"| {label} | " + " | ".join(_cell(summary[b]["figures"].get(figure)) for b in benchmarks) + " |")
    checks = []
    for b in benchmarks:
        c = summary[b]["controls"]
        checks.append(f"{b}: every negative control untrusted on every model: "
                      f"{'yes' if c['negatives_never_trusted'] else 'NO'}; positive control trusted on every model: "
                      f"{'yes' if c['positive_trusted_for_every_model'] else 'NO'}; metrics trusted on every model: "
                      + (", ".join(f"`{f}`" for f in summary[b]["trusted_for_every_model"]) or "none"))
    p = report["protocol"]
    lines += ["", *[f"- {c}." for c in checks], "",
              f"Images per model: {p['n_images']} (ROAD: {p['road_images']}); seeds {p['seeds']}. "
              f"Rule: {p['rule']}. Command: `{p['command']}`."]
    return "\n".join(lines)


def ceiling_table() -> str:
    if not CEILING.is_file():
        return "_Not measured yet: run `python scripts/morf_ceiling.py`._"
    report = json.loads(CEILING.read_text())
    lines = ["| benchmark | models × images × maps | above the greedy oracle (largest excess) | above the beam "
             "search (largest excess) | above the best of the searches (largest excess) | beam − greedy | "
             "forwards per image: greedy, beam | beam s per image |",
             "|---|---|---|---|---|---|---|---:|"]
    for b, e in report["summary"].items():
        best = (f"{e['above_best_of_searches']} of {e['pairs']} ({e['max_excess_best_of_searches']:+.2f})"
                if "above_best_of_searches" in e else "not measured (one beam search in this report)")
        lines.append(
            f"| {b} | {e['models']} × {'/'.join(map(str, e['images_per_model']))} × {len(report['protocol']['maps'])} "
            f"| {e['above_greedy_deletion']} of {e['pairs']} ({e['max_excess_greedy_deletion']:+.2f}) "
            f"| {e['above_beam_deletion']} of {e['pairs']} ({e['max_excess_beam_deletion']:+.2f}) | {best} "
            f"| {e['beam_minus_greedy_mean']:+.2f} | {', '.join(f'{v:,}' for v in e['greedy_forwards_per_image'])}, "
            f"{e['beam_forwards_per_image_mean']:,.0f} | {e['beam_seconds_per_image_mean']:.1f} |")
    p = report["protocol"]
    lines += ["", f"Maps: {', '.join(p['maps'])}; seeds {p['seeds']} (one model per variant); excess in points of "
                  "MoRF-AOC (negative: the closest any map came); seconds on the shared 2-core machine, one thread. "
                  f"Rule: {p['rule']}. Command: `{p['command']}`."]
    return "\n".join(lines)


def document() -> str:
    return "\n\n".join([
        "# Metrics",
        "Every figure the evaluation computes is declared once in the metric registry "
        "(`infsa_viz/metrics/registry.py`; the built-ins in `infsa_viz/metrics/catalog/`, one module per group). This page is "
        "generated from it by `python scripts/metric_docs.py`; a test fails when it is out of date. "
        "Faithfulness (does the map point at what the model used?) is measured by the evidence metrics "
        "against in-distribution interventions and by MoRF/LeRF, deletion/insertion and ROAD; plausibility "
        "(does it point where a person would?) by the box and mask localisation metrics.",
        "## The metrics", *metric_sections(),
        "## Reference maps",
        "A metric's floor is the seeded random map; its ceiling the reference map its figures name. They are "
        "registered map methods with a role, so reports and rankings tell them apart by role.",
        reference_table(),
        "## MoRF's best achievable area: lower bounds by search",
        "The greedy deletion oracle removes, at each step, the patches whose single removal lowers the class most: "
        "it minimises the next probability, not the area, and cannot see patches that matter only together, so "
        "maps can beat it. `beam_deletion` (`infsa_viz/metrics/beam_deletion.py`) keeps the 4 best partial orders "
        "by the area so far, tries groups of patches (best singles, substitutions, compact windows) at each step "
        "and keeps the greedy path, so it is never below the greedy oracle. Every search's area is the area of an "
        "order it found: a **lower bound of the best achievable area**, not an upper bound (a \"ceiling\" only in "
        "the sense of the best order known); another search can beat it. `scripts/morf_ceiling.py` therefore runs "
        "a second, differently shaped beam (width 8, expand 4) and counts a map's exceedances against the best of "
        "the searches. Image × map pairs whose MoRF-AOC is above each, on the stated subset "
        "(`python scripts/morf_ceiling.py`, `metrics/morf-ceiling.json`):",
        ceiling_table(),
        "## What each metric costs",
        "Each metric alone on the same images and map, minus a run with no metric "
        "(`python -m benchmarks metric-cost`). The evidence protocol's interventions (one forward per scene "
        "object and image) are paid once per model and image and shared by every map; its figures are mask sums.",
        cost_table(),
        "## Which metrics can be trusted where: the meta-evaluation",
        "After MetaQuantus (Hedström et al., TMLR 2023: noise resilience and adversarial reactivity), with controls "
        "(`infsa_viz/stats/meta/`). Per model: the evidence oracle is blended with a random map at α = 0 … 1; a "
        "figure is *monotone* when its mean quality falls with α (Spearman ≤ −0.9). Two maps (the blends at α = 0.25 "
        "and 0.75) get noise on a grid c = 0.01, 0.03, 0.1, 0.3, 1 times their root-mean-square difference; a figure "
        "is *stable* when, of the images it orders strictly, ≥ 90 % keep their order at c = 0.1 (a figure that "
        "orders none, such as a constant, is not stable); the smallest c at which that share falls below 0.9 is reported. The "
        "model's oracle and the oracle of a copy with every parameter randomised (Adebayo et al. 2018) are scored "
        "under both models; a figure is *reactive* when each model's own oracle wins ≥ 75 % of those comparisons — "
        "a figure that does not read the model wins at most 50 %. Trusted = all three. Negative controls (a "
        "constant, a random draw, the share of mass in the 3 largest patches, the total mass, the mean of the image) "
        "must fail; the positive control (the map's correlation with the model's own evidence oracle) must pass. "
        "Box and mask figures compare the map with the annotation, not with the model: they measure plausibility "
        "and, like the controls, cannot pass reactivity. The class switch and target sensitivity re-explain other "
        "classes and cannot score fixed maps; they are not meta-evaluated.",
        meta_table(),
    ]) + "\n"


@script_main("metric_docs.py")
def main(argv: list[str] | None = None) -> int:
    parser = script_parser("metric_docs.py", __doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/metrics.md is out of date")
    args = parser.parse_args(argv)
    text = document()
    if args.check:
        if not DOC.is_file() or DOC.read_text() != text:
            print(f"{DOC.relative_to(ROOT)} is out of date: run python scripts/metric_docs.py", file=sys.stderr)
            return 1
        return 0
    from infsa_viz.io import atomic_write

    atomic_write(DOC, text)
    print(f"wrote {DOC.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
