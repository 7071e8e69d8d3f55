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


def meta_table() -> str:
    if not META.is_file():
        return "_Not measured yet: run `python scripts/meta_evaluation.py`._"
    report = json.loads(META.read_text())
    summary = report["summary"]
    benchmarks = list(summary)
    figures = list(dict.fromkeys(f for b in benchmarks for f in summary[b]))
    header = "| figure | " + " | ".join(f"{b}: trustworthy / models (max ρ, min stability)" for b in benchmarks) + " |"
    lines = [header, "|---|" + "---|" * len(benchmarks)]
    for figure in figures:
        cells = []
        for b in benchmarks:
            e = summary[b].get(figure)
            if e is None:
                cells.append("–")
                continue
            rho = "n/a" if e["spearman_max"] is None else f"{e['spearman_max']:+.2f}"
            stab = "n/a" if e["stability_min"] is None else f"{e['stability_min']:.2f}"
            cells.append(f"{e['trustworthy']} / {e['models']} ({rho}, {stab})")
        lines.append(f"| `{figure}` | " + " | ".join(cells) + " |")
    p = report["protocol"]
    lines += ["", f"Images per model: {p['n_images']} (ROAD: {p['road_images']}); seeds {p['seeds']}. "
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
        "## What each metric costs",
        "Each metric alone on the same images and map, minus a run with no metric "
        "(`python -m benchmarks metric-cost`). The evidence protocol's interventions (one forward per scene "
        "object and image) are paid once per model and image and shared by every map; its figures are mask sums.",
        cost_table(),
        "## Which metrics can be trusted where: the meta-evaluation",
        "After MetaQuantus (Hedström et al., TMLR 2023): per model, the evidence oracle is blended with a random "
        "map at α = 0, 0.25, 0.5, 0.75, 1 and shifted by 1–3 patches; a figure is *monotone* when its mean quality "
        "falls with α (Spearman ≤ −0.9) and *stable* when the image-level order of two maps (the oracle blended "
        "at α = 0.25 and 0.5) survives tiny noise on the maps in ≥ 90 % of images. Trustworthy = both. "
        "The class switch re-explains other classes and cannot score fixed maps; it is not meta-evaluated.",
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
