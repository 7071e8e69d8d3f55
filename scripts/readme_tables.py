r"""The tables of the README and docs/, made from the committed reports in ``metrics/`` (maintainer script).

    python scripts/readme_tables.py            # print every table (paste into the file it lives in)
    python scripts/readme_tables.py --check    # exit 1 if a table's file lacks it verbatim

Each table lives in one file (:data:`HOMES`): the README keeps the verdict's calls and the
reliability table, ``docs/models.md`` the shipped models' training table; the benchmark and spectral tables live in ``docs/benchmarks.md`` and ``docs/reference.md``;
the sections of ``docs/verdict.md`` are written by the maintainer scripts that make them
(``scripts/verdict.py``, ``scripts/verdict_calibration.py``, ``scripts/paper_gap.py``) and only
checked here.

``tests/scripts/test_readme_tables.py`` runs the check, so a README figure cannot drift from the
file it comes from.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Callable

from infsa_viz.cli import script_main, script_parser
from infsa_viz.stats.verdict import PAPER_FIGURES

if __package__ in (None, ""):  # run as a file (python scripts/x.py): make "scripts" importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scripts import verdict_text
from scripts.doc_sections import VARIANT_NAMES

ROOT = Path(__file__).resolve().parents[1]
METRICS = ROOT / "metrics"
MODELS = ("softmax-vit4", "pure-infsa-vit4", "linear-infsa-vit4")
#: The paper's figures (ImageNet-scale models, unpublished protocol): MoRF-AOC / ROC-AUC / PR-AUC %.
PAPER = {variant: " / ".join(f"{f[k]:.1f}" for k in ("morf_aoc", "box_roc_auc", "box_pr_auc"))
         for variant, f in PAPER_FIGURES.items()}



def _load(name: str) -> Any:
    return json.loads((METRICS / name).read_text(encoding="utf-8"))


def _pct(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{100 * value:.{digits}f}"


def training_table() -> str:
    report = _load("training.json")
    lines = ["| model | variant | test accuracy | parameters | epochs | train wall s | train CPU s | learned ρ per layer (init 0.5) |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for row in report["results"]:
        rho = ", ".join(f"{layer[0]:.3f}" for layer in row["rho_final"] if layer) or "–"
        lines.append(f"| `{row['model']}` | {row['variant']} | {_pct(row['test_accuracy'], 2)} % | {row['parameters']:,} | "
                     f"{row['epochs']} | {row['train_seconds']:.0f} | {row['train_cpu_seconds']:.0f} | {rho} |")
    return "\n".join(lines)


def eigencheck_table() -> str:
    lines = ["| model | left cosine: mean (undefined) | mean, undefined as 0 | median | 5th pct | min | right cosine: mean | Gaussian q, k (left mean) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in MODELS:
        report = _load(f"eigencheck-{name}.json")
        left, right = report["overall"]["left"], report["overall"]["right"]
        why = ", ".join(f"{count} {reason}" for reason, count in left["undefined"].items()) or "none"
        lines.append(f"| `{name}` | {left['mean']:.3f} ({left['nan']} of {left['nan'] + left['count']}: {why}) | "
                     f"{left['mean_undefined_as_zero']:.3f} | {left['median']:.3f} | {left['p5']:.3f} | {left['min']:.3f} | "
                     f"{right['mean']:.3f} | {report['gaussian_baseline']['left']['mean']:.3f} |")
    lines.append("| paper (Linear-InfViT) | 0.985 | | | | | | |")
    return "\n".join(lines)


def _quality() -> list[dict[str, Any]]:
    return _load("attention-quality.json")["results"]


def headline_table() -> str:
    lines = ["| model | map | n_scored | MoRF-AOC % | LeRF-AUC % | box ROC-AUC % | box PR-AUC % | pointing % | paper MoRF-AOC / ROC-AUC / PR-AUC % |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in _quality():
        if r["method"] == "attention":
            lines.append(f"| {r['variant']} | attention | {r['n_scored']} | {r['morf_aoc']:.1f} | {r['lerf_auc']:.1f} | "
                         f"{_pct(r['box_roc_auc'])} | {_pct(r['box_pr_auc'])} | {_pct(r['pointing_game'])} | "
                         f"{PAPER[r['variant']]} |")
    return "\n".join(lines)


def _share(value: float) -> str:
    """A share in %, never rounded up to 100 % when it is not 1."""
    return "100 %" if value == 1 else f"{math.floor(value * 1000) / 10:.1f} %"


def methods_table() -> str:
    rows = _quality()
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    lines = ["| method | " + " | ".join(variants) + " |", "|---|" + "---|" * len(variants)]
    for method in dict.fromkeys(r["method"] for r in rows):
        cells = []
        for variant in variants:
            r = next(x for x in rows if x["method"] == method and x["variant"] == variant)
            cell = f"{r['morf_aoc']:.1f} / {_pct(r['box_pr_auc'])} / {_pct(r['pointing_game'])}"
            if r.get("chain_valid_images") is not None:
                cell += f" · chain holds: {_share(r['chain_valid_images'])} of images, {_share(r['chain_valid_rows'])} of rows"
            cells.append(cell)
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _num(value: float | None, fmt: str) -> str:
    return "–" if value is None else format(value, fmt)


def beyond_morf_table() -> str:
    """The protocols beyond MoRF and box AUC, and the mean rank over every criterion, per row."""
    header = ("| model | method | deletion ↓ | insertion ↑ | pos. pert. ↓ | neg. pert. ↑ | ROAD MoRF ↑ | ROAD LeRF ↑ | "
              "energy pointing % | rank acc. % | complexity ↓ | class-switch shift ↑ | randomised ρ ↓ | "
              "passes MoRF, fails sanity | mean rank |")
    lines = [header, "|---|---|" + "---:|" * 11 + "---|---:|"]
    for r in _quality():
        flag = r.get("passes_morf_fails_sanity")
        lines.append(
            f"| {r['variant']} | {r['method']} | {_num(r.get('deletion_auc'), '.3f')} | {_num(r.get('insertion_auc'), '.3f')} | "
            f"{_num(r.get('positive_perturbation_auc'), '.3f')} | {_num(r.get('negative_perturbation_auc'), '.3f')} | "
            f"{_num(r.get('road_morf_aoc'), '.1f')} | {_num(r.get('road_lerf_auc'), '.1f')} | "
            f"{_pct(r.get('energy_pointing_game'))} | {_pct(r.get('relevance_rank_accuracy'))} | "
            f"{_num(r.get('complexity'), '.2f')} | {_num(r.get('class_switch_shift'), '.3f')} | "
            f"{_num(r.get('sanity_randomised_spearman'), '.2f')} | {'–' if flag is None else 'yes' if flag else 'no'} | "
            f"{_num(r.get('mean_rank'), '.1f')} |")
    return "\n".join(lines)


def map_cost_table() -> str:
    """``bench-maps-cpu.json``: seconds (peak RSS GB) of each method per variant and token count, and its cost."""
    cases = _load("bench-maps-cpu.json")["cases"]
    columns = sorted({(c["variant"], c["tokens"]) for c in cases},
                     key=lambda vt: (list(VARIANT_NAMES).index(vt[0]), vt[1]))
    lines = ["| method (options) | forwards / backwards per image | "
             + " | ".join(f"{v} {t:,} tok" for v, t in columns) + " |",
             "|---|---|" + "---:|" * len(columns)]
    for key in dict.fromkeys((c["method"], json.dumps(c["options"], sort_keys=True)) for c in cases):
        cells = []
        for variant, tokens in columns:
            case = next((c for c in cases if (c["method"], json.dumps(c["options"], sort_keys=True)) == key
                         and c["variant"] == variant and c["tokens"] == tokens), None)
            if case is None:
                cells.append("–")
            elif case["status"] == "ok":
                cells.append(f"{case['seconds']:.3g} ({case['peak_rss_bytes'] / 1e9:.2f})")
            else:
                cells.append(case["status"])
        options = "" if key[1] == "{}" else " " + key[1].replace('"', "")
        cost = next(c.get("cost", "–") for c in cases if (c["method"], json.dumps(c["options"], sort_keys=True)) == key)
        lines.append(f"| {key[0]}{options} | {cost} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def reliability_table() -> str:
    report = _load("reliability.json")
    matrix, resume = report["bad_input_matrix"], report["kill_and_resume"]
    lines = ["| check | result |", "|---|---|"]
    handled = {h["case"].partition(":")[0] for h in matrix.get("handled_not_refused", [])}
    for surface in sorted(matrix["tried"]):
        lines.append(f"| bad inputs, {surface} | {matrix['passed'].get(surface, 0)} of {matrix['tried'][surface]} "
                     f"refused with one clear line{' or handled correctly' if surface in handled else ''} |")
    limited = matrix["memory_limited_cases"]
    peak = matrix.get("max_peak_rss_mib")
    estimates = report.get("estimates", {})
    ratios = (f"; N² maps add {estimates['ratio_min']:.1f}–{estimates['ratio_max']:.1f}× their estimate"
              if estimates.get("ratio_min") is not None else "")
    lines.append(f"| …of which under a 3 GiB address-space limit | {len(limited)}"
                 + (f" (largest peak {peak:,.0f} MiB resident{ratios}) |" if peak is not None else " |"))
    if matrix.get("pending"):
        lines.append(f"| bad inputs waiting on another change (not run) | {len(matrix['pending'])}: "
                     + "; ".join(sorted({p["why"] for p in matrix["pending"]})) + " |")
    equal = resume["equal_json"] and resume["equal_csv"] and resume["equal_images_csv"]
    lines.append(f"| `evaluate` SIGKILLed after {resume['killed_after_chunks']} of {resume['chunks']} chunks, "
                 f"then resumed | report {'identical to' if equal else 'DIFFERENT from'} an uninterrupted run's"
                 + {True: "; a user's file beside the journal kept", False: "; a user's file beside the journal LOST",
                    None: ""}[resume.get("user_file_kept")] + " |")
    load = report.get("load")
    if load:
        lines.append(f"| full evaluation ({len(load['models'])} models × {len(load['methods'])} methods × "
                     f"{load['n_images']:,} images, {load['threads']} threads) | peak "
                     f"{'≤ ' if load.get('peak_rss_method', '').startswith('ru_maxrss') else ''}"
                     f"{load['peak_rss_mib']:,.0f} MiB "
                     f"resident, {load['wall_seconds'] / 60:.1f} min (load average before "
                     f"{load['loadavg_before'][0]:.1f}){'; from the earlier run' if 'copied_from' in load else ''} |")
    return "\n".join(lines)


def _cell(case: dict[str, Any] | None, key: str, scale: float = 1.0, fmt: str = ".3g") -> str:
    if case is None:
        return "–"
    if case["status"] != "ok":
        return case["status"]
    return f"{case[key] / scale:{fmt}}"


def performance_table(shape: str = "shipped") -> str:
    """Model section of ``bench-cpu.json`` for ``shape``: images/s, ratios to softmax, peak RSS."""
    cases = [c for c in _load("bench-cpu.json")["cases"] if c["section"] == "model" and c["shape"] == shape]
    variants = ("softmax", "pure_infsa", "linear_infsa")
    lines = [("| resolution (tokens) | softmax img/s | pure InfSA img/s | Linear-InfSA img/s | pure / softmax | "
              "Linear / softmax | peak RSS softmax / pure / linear GB |"),
             "|---|---:|---:|---:|---:|---:|---|"]
    for resolution in sorted({c["resolution"] for c in cases}):
        row = {c["variant"]: c for c in cases if c["resolution"] == resolution}
        tokens = next(iter(row.values()))["tokens"]
        ok = {v: row[v] for v in variants if v in row and row[v]["status"] == "ok"}
        ratios = [f"{ok[v]['images_per_s'] / ok['softmax']['images_per_s']:.2f}×"
                  if v in ok and "softmax" in ok else "–" for v in variants[1:]]
        memory = " / ".join(_cell(row.get(v), "peak_memory_bytes", 1e9, ".2f") if row.get(v, {}).get("status") == "ok"
                            else "–" for v in variants)
        lines.append(f"| {resolution}² ({tokens:,}) | " + " | ".join(_cell(row.get(v), "images_per_s") for v in variants)
                     + f" | {' | '.join(ratios)} | {memory} |")
    return "\n".join(lines)



def largest_table(shape: str = "shipped") -> str:
    """Per variant: the largest resolution ``bench-cpu.json`` completed, its tokens, images/s and peak RSS."""
    summary = _load("bench-cpu.json")["summary"]
    largest = summary["largest_completed"].get(shape, {})
    lines = ["| variant | largest resolution run (tokens) | images/s (maps: seconds per map) | peak RSS GB |",
             "|---|---|---:|---:|"]
    for variant, name in VARIANT_NAMES.items():
        row = largest.get(variant)
        if row is None:
            lines.append(f"| {name} | none | – | – |")
            continue
        lines.append(f"| {name} | {row['resolution']}² ({row['tokens']:,}) | {row['images_per_s']:.3g} | "
                     f"{row['peak_memory_bytes'] / 1e9:.2f} |")
    for row in summary.get("spectral", []):
        if row["status"] == "ok" and row["resolution"] == max(r["resolution"] for r in summary["spectral"]
                                                              if r["status"] == "ok" and r["variant"] == row["variant"]):
            lines.append(f"| {row['method']} map, shipped {VARIANT_NAMES[row['variant']]} model | {row['resolution']}² "
                         f"({row['tokens']:,}) | {row['latency_s']:.3g} s | {row['peak_memory_bytes'] / 1e9:.2f} |")
    return "\n".join(lines)


def naive_table(shape: str = "shipped") -> str:
    """``summary.naive_vs_ours``: one attention layer, ours against the paper's formulas written out densely."""
    table = _load("bench-cpu.json")["summary"].get("naive_vs_ours", {}).get(shape, {})
    lines = ["| tokens | variant | ours s | naive dense s | naive / ours time | ours GB | naive GB | naive / ours memory |",
             "|---:|---|---:|---:|---:|---:|---:|---:|"]
    for tokens in sorted(table, key=int):
        for variant, entry in table[tokens].items():
            ours, naive = entry["ours"], entry["naive"]

            def side(r: dict[str, Any], key: str, scale: float = 1.0) -> str:
                return f"{r[key] / scale:.3g}" if r["status"] == "ok" else r["status"]

            ratio = (f"{entry['time_ratio']:.2f}×", f"{entry['memory_ratio']:.2f}×") if "time_ratio" in entry else ("–", "–")
            lines.append(f"| {int(tokens):,} | {VARIANT_NAMES[variant]} | {side(ours, 'latency_s')} | "
                         f"{side(naive, 'latency_s')} | {ratio[0]} | {side(ours, 'peak_memory_bytes', 1e9)} | "
                         f"{side(naive, 'peak_memory_bytes', 1e9)} | {ratio[1]} |")
    return "\n".join(lines)


def spectral_table() -> str:
    """``summary.spectral``: visits and Perron maps of the shipped models at high resolution."""
    rows = _load("bench-cpu.json")["summary"].get("spectral", [])
    lines = ["| model | map | resolution (tokens) | status | seconds | peak RSS GB | solver | iterations | max residual |",
             "|---|---|---|---|---:|---:|---|---:|---:|"]
    for r in rows:
        ok = r["status"] == "ok"
        seconds = f"{r['latency_s']:.3g}" if ok else "–"
        memory = f"{r['peak_memory_bytes'] / 1e9:.2f}" if ok else "–"
        residual = f"{r['max_residual']:.1e}" if "max_residual" in r else "–"
        lines.append(f"| {VARIANT_NAMES[r['variant']]} | {r['method']} | {r['resolution']}² ({r['tokens']:,}) | "
                     f"{r['status']} | {seconds} | {memory} | {r.get('solver') or '–'} | "
                     f"{r.get('iterations', '–')} | {residual} |")
    return "\n".join(lines)


def goals_table() -> str:
    """``summary.goals`` of ``bench-cpu.json``: each scaling goal, the measured value and whether it is met."""
    lines = ["| goal | measured | met |", "|---|---|---|"]
    for goal in _load("bench-cpu.json")["summary"]["goals"]:
        value = goal["value"]
        if isinstance(value, float):
            value = f"{value:.4g}"
        elif isinstance(value, int) and value > 10**6:
            value = f"{value / 1e9:.2f} GB"
        met = {True: "yes", False: "**no**", None: "not measured"}[goal["met"]]
        if goal.get("tokens"):
            value = f"{value} over {goal['tokens'][0]:,}–{goal['tokens'][1]:,} tokens"
            upper = goal.get("upper_slope") or {}
            if upper.get("slope") is not None:
                value += f"; {upper['slope']:.3g} over {upper['tokens_min']:,}–{upper['tokens_max']:,}"
        lines.append(f"| {goal['goal']} | {value if value is not None else '–'} | {met} |")
    return "\n".join(lines)


def reliance_table() -> str:
    """The cued models' measured reliance (``metrics/reliance-cued-digits.json``): per training setting
    and variant, mean [min, max] over seeds, in %."""
    report = _load("reliance-cued-digits.json")

    def cell(entry: dict[str, Any] | None) -> str:
        return "–" if not entry else f"{100 * entry['mean']:.1f} [{100 * entry['min']:.1f}, {100 * entry['max']:.1f}]"

    lines = ["| training setting | variant | seeds | accuracy | accuracy, conflicting images | conflicting images "
             "decided by the cue | top object not the target (prediction explained) | (label explained) |",
             "|---|---|---:|---|---|---|---|---|"]
    for setting, variants in report["summary"].items():
        for variant, e in variants.items():
            lines.append(f"| {setting} | {VARIANT_NAMES.get(variant, variant)} | {e['models']} | {cell(e['accuracy'])} | "
                         f"{cell(e['conflicting_accuracy'])} | {cell(e['decided_by_cue'])} | "
                         f"{cell(e['top_not_target_predicted'])} | {cell(e['top_not_target_label'])} |")
    difference = report.get("cue_reliance_difference_p100_minus_p10") or {}
    if difference:
        lines.append("")
        lines.append("Cue reliance, p100 − p10 (mean over seeds): " + ", ".join(
            f"{VARIANT_NAMES.get(v, v)} {100 * d:+.1f} points" for v, d in difference.items()) + ".")
    overall = report.get("top_not_target_all_models")
    if overall:
        lines.append(f"Over all {len(report['models'])} models, the top object is not the target on "
                     f"{100 * overall['predicted']:.1f} % of test images with the prediction explained "
                     f"({100 * overall['label']:.1f} % with the label explained).")
    return "\n".join(lines)


def _verdict_docs(name: str) -> Callable[[], str]:
    """A table of ``docs/verdict.md``, made by the maintainer script that writes it (from its committed report)."""
    def make() -> str:
        from scripts import paper_gap, verdict_calibration, verdict_text

        if name == "verdict-calibration":
            return verdict_calibration.table(_load("verdict-calibration.json"))
        if name == "verdict-tables":
            return verdict_text.verdict_tables(_load("verdict.json"))
        if name == "verdict-image-sets":
            return verdict_text.image_set_table(_load("verdict.json"))
        if name.startswith(("protocol-sensitivity", "forking-paths")):
            return paper_gap.sensitivity_tables(_load("protocol-sensitivity.json"))[name]
        return paper_gap.cosine_tables(_load("eigen-cosine.json"))[name]

    return make


#: The sections of docs/verdict.md (scripts/doc_sections.py), each written by its maintainer script.
VERDICT_DOCS = ("verdict-calibration", "protocol-sensitivity", "protocol-sensitivity-matches", "forking-paths",
                "forking-paths-grid", "eigen-cosine-layers", "eigen-cosine-tokens", "verdict-tables", "verdict-image-sets")


TABLES: dict[str, Callable[[], str]] = {
    "training": training_table,
    "eigencheck": eigencheck_table,
    "attention quality: headline": headline_table,
    "attention quality: every method": methods_table,
    "attention quality: beyond MoRF": beyond_morf_table,
    "map cost": map_cost_table,
    "reliability": reliability_table,
    "performance (shipped shape)": performance_table,
    "performance: largest": largest_table,
    "performance: naive side by side": naive_table,
    "performance: spectral maps": spectral_table,
    "performance: goals": goals_table,
    "cued: reliance": reliance_table,
    "verdict: seed level": lambda: verdict_text.readme_table(_load("verdict.json")),
    "verdict: calls": lambda: verdict_text.called_table(_load("verdict.json")),
    "verdict: called": lambda: verdict_text.called_sentences(_load("verdict.json")),
    "verdict: detectable": lambda: verdict_text.detection_sentence(_load("verdict.json")),
    "verdict: MoRF ceiling": lambda: verdict_text.morf_ceiling_table(_load("verdict.json")),
    "verdict: benchmark quality": lambda: verdict_text.quality_table(_load("verdict.json")),
    **{f"docs/verdict.md: {name}": _verdict_docs(name) for name in VERDICT_DOCS},
}


#: Table name → the file (relative to the repository root) that shows it.
HOMES: dict[str, str] = {
    "training": "docs/models.md",
    "eigencheck": "docs/reference.md",
    "attention quality: headline": "docs/benchmarks.md",
    "attention quality: every method": "docs/benchmarks.md",
    "attention quality: beyond MoRF": "docs/benchmarks.md",
    "map cost": "docs/benchmarks.md",
    "reliability": "README.md",
    "performance (shipped shape)": "docs/benchmarks.md",
    "performance: largest": "docs/benchmarks.md",
    "performance: naive side by side": "docs/benchmarks.md",
    "performance: spectral maps": "docs/benchmarks.md",
    "performance: goals": "docs/benchmarks.md",
    "cued: reliance": "docs/cued.md",
    "verdict: seed level": "docs/verdict.md",
    "verdict: calls": "README.md",
    "verdict: called": "docs/verdict.md",
    "verdict: detectable": "docs/verdict.md",
    "verdict: MoRF ceiling": "docs/verdict.md",
    "verdict: benchmark quality": "docs/verdict.md",
    **{f"docs/verdict.md: {name}": "docs/verdict.md" for name in VERDICT_DOCS},
}


@script_main("readme_tables.py")
def main(argv: list[str] | None = None) -> int:
    parser = script_parser("readme_tables.py", __doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if a table's file lacks it verbatim")
    args = parser.parse_args(argv)
    missing = []
    for name, make in TABLES.items():
        table = make()
        if args.check:
            if table not in (ROOT / HOMES[name]).read_text(encoding="utf-8"):
                missing.append(f"{name} ({HOMES[name]})")
        else:
            print(f"<!-- {name}: {HOMES[name]} -->\n{table}\n")
    if missing:
        print(f"these files lack the current tables: {', '.join(missing)} (run python scripts/readme_tables.py)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
