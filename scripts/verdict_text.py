r"""The verdict in words and tables, from ``metrics/verdict.json`` (``python scripts/verdict.py``).

* :func:`readme_table`: the README's compact table: per benchmark and figure, the raw attention
  map's seed-level difference of each InfSA variant from softmax with its interval and call;
* :func:`called_sentences`: one plain sentence per called difference (any map, either way);
* :func:`morf_ceiling_table`: MoRF-AOC's headroom under its ceiling, the greedy deletion oracle;
* :func:`quality_table`: benchmark quality (headroom and spread of the maps), per variant;
* :func:`verdict_tables`: every comparison, for ``docs/verdict.md``.

Differences are in points: the evidence rank correlation x 100, MoRF-AOC in %, box PR-AUC x 100.
"""

from __future__ import annotations

from typing import Any

from scripts.doc_sections import VARIANT_NAMES

__all__ = ["FIGURE_NAMES", "called_sentences", "morf_ceiling_table", "quality_table", "readme_table",
           "verdict_tables"]

#: How a verdict figure is named in the README (unit: points).
FIGURE_NAMES = {"evidence_spearman": "evidence rank correlation x 100 (faithfulness)",
                "morf_aoc": "MoRF-AOC % (faithfulness, out of distribution)",
                "box_pr_auc": "box PR-AUC x 100 (plausibility)"}
_CALLS = {"higher": "higher", "lower": "lower", "not shown": "n.s."}


def _spread(entry: dict[str, Any] | None, fmt: str = ".1f", sign: str = "") -> str:
    """``mean ± sd`` over seeds (``–`` when undefined)."""
    if not entry or entry.get("mean") is None:
        return "–"
    sd = entry.get("sd")
    return f"{entry['mean']:{sign}{fmt}}" + ("" if sd is None else f" ± {sd:{fmt}}")


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.1f}"


def _comparison_cell(c: dict[str, Any] | None) -> str:
    """``+1.2 [−0.3, +2.8] · p 0.41 · n.s.`` (differences in points; p Holm-adjusted, seed level)."""
    if c is None or c["difference"] is None:
        return "–"
    low, high = c["ci"]
    call = {"higher": "**higher**", "lower": "**lower**"}.get(c["call"], "n.s.")
    flag = f" ⚠ accuracy {c['accuracy_gap']:+.1f}" if c["accuracy_flag"] else ""
    p = "–" if c["p_holm"] is None else f"{c['p_holm']:.2g}"
    return f"{_signed(c['difference'])} [{_signed(low)}, {_signed(high)}] · p {p} · {call}{flag}"


def verdict_tables(record: dict[str, Any]) -> str:
    """The final verdict tables of ``docs/verdict.md``: per benchmark, each map and figure, every InfSA
    variant's seed-level difference from softmax with its hierarchical-bootstrap interval, the
    Holm-adjusted seed-level p and the call; accuracies and matched images beside."""
    # a summary written before the seed-level verdict (issue #28) holds other comparisons: none to show
    benches = {b: {**bench, "verdict": [c for c in bench["verdict"] if "p_holm" in c]}
               for b, bench in record["benchmarks"].items()}
    benches = {b: bench for b, bench in benches.items() if bench["verdict"]}
    if not benches:
        return ("*Pending*: the committed reports predate the seed-level verdict; `python scripts/verdict.py` "
                "writes these tables once the seed models are evaluated.")
    out = []
    for benchmark, bench in benches.items():
        variants = list(dict.fromkeys(c["variant"] for c in bench["verdict"]))
        accuracy = {e["variant"]: e["accuracy"] for e in bench["figures"] if e["method"] == bench["verdict"][0]["method"]}
        seeds = {e["variant"]: len(e["seeds"]) for e in bench["figures"]}
        out += [f"**{benchmark}** ({bench['n_images']} test images). Test accuracy on them, mean ± sd over seeds: "
                + "; ".join(f"{VARIANT_NAMES.get(v, v)} {accuracy[v]['mean']:.1f} ± {accuracy[v]['sd'] or 0:.1f} % "
                            f"({seeds[v]} seeds)" for v in ("softmax", *variants) if accuracy.get(v)) + ".", "",
                "| figure | map | " + " | ".join(f"{VARIANT_NAMES.get(v, v)} − softmax [95 % CI] · p (Holm) · call"
                                                  for v in variants) + " | matched images per seed (min) |",
                "|---|---|" + "---|" * len(variants) + "---:|"]
        cells = {(c["figure"], c["method"], c["variant"]): c for c in bench["verdict"]}
        for figure, method in dict.fromkeys((c["figure"], c["method"]) for c in bench["verdict"]):
            mine = [cells.get((figure, method, v)) for v in variants]
            matched = min(c["matched_images"]["min"] for c in mine if c)
            out.append(f"| {figure} | {method} | " + " | ".join(_comparison_cell(c) for c in mine) + f" | {matched} |")
        out.append("")
    return "\n".join(out).rstrip("\n")



def _cell(c: dict[str, Any] | None) -> str:
    """``−3.1 [−5.2, −0.9] (lower)``: the seed-level difference, its hierarchical-bootstrap interval, the call."""
    if c is None or c["difference"] is None:
        return "–"
    low, high = c["ci"]
    flag = " ⚠" if c["accuracy_flag"] else ""
    return f"{c['difference']:+.1f} [{_signed(low)}, {_signed(high)}] ({_CALLS[c['call']]}){flag}"


def _seeds(bench: dict[str, Any]) -> str:
    counts = {len(e["seeds"]) for e in bench["figures"]}
    return "/".join(str(n) for n in sorted(counts))


def readme_table(record: dict[str, Any], method: str = "attention") -> str:
    """Per benchmark and verdict figure: softmax's ``method`` map (mean ± sd over seeds) and each InfSA
    variant's seed-level difference from it, with its 95 % hierarchical-bootstrap interval and call."""
    variants = [v for v in VARIANT_NAMES if v != "softmax"]
    lines = ["| benchmark (seeds) | figure | softmax | " + " | ".join(f"{VARIANT_NAMES[v]} − softmax"
                                                                      for v in variants) + " |",
             "|---|---|---:|" + "---|" * len(variants)]
    for benchmark, bench in record["benchmarks"].items():
        entries = {(e["variant"], e["method"]): e for e in bench["figures"]}
        calls = {(c["figure"], c["variant"], c["method"]): c for c in bench["verdict"] if "p_holm" in c}
        for figure in record["protocol"]["figures"]:
            soft = (entries.get(("softmax", method)) or {}).get(figure)
            cells = [_cell(calls.get((figure, v, method))) for v in variants]
            lines.append(f"| {benchmark} ({_seeds(bench)}) | {FIGURE_NAMES.get(figure, figure)} | {_spread(soft)} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines)


def called_sentences(record: dict[str, Any]) -> str:
    """One sentence per called difference (every map and figure), whichever way it falls; or the
    sentence that nothing is called."""
    out = []
    for benchmark, bench in record["benchmarks"].items():
        for c in bench["verdict"]:
            if c.get("call") not in ("higher", "lower"):
                continue
            low, high = c["ci"]
            gap = (f"; their accuracies differ by {c['accuracy_gap']:+.1f} points ⚠" if c["accuracy_flag"] else
                   f"; accuracies within {abs(c['accuracy_gap']):.1f} points")
            out.append(f"- On `{benchmark}`, {VARIANT_NAMES.get(c['variant'], c['variant'])}'s `{c['method']}` map "
                       f"scores **{c['call']}** than softmax's on {FIGURE_NAMES.get(c['figure'], c['figure'])}: "
                       f"{c['difference']:+.1f} points [{_signed(low)}, {_signed(high)}] over {c['n_seeds']} seed "
                       f"pairs (Holm-adjusted seed-level p = {c['p_holm']:.2g}, at least "
                       f"{c['matched_images']['min']} matched images per seed{gap}).")
    return "\n".join(out) if out else "- No difference is called: no seed-level test passes after Holm's correction."


def morf_ceiling_table(record: dict[str, Any]) -> str:
    """Per benchmark and variant: MoRF-AOC of the greedy deletion oracle, of the best attention-type
    map and of the random map on the greedy run's images, mean ± sd over seeds."""
    lines = ["| benchmark (images) | variant | greedy oracle | best attention-type map | random map | "
             "oracle − best attention |", "|---|---|---:|---:|---:|---:|"]
    for benchmark, bench in record["benchmarks"].items():
        ceiling = bench.get("morf_ceiling")
        if not ceiling:
            continue
        for variant, q in ceiling["per_variant"].items():
            lines.append(f"| {benchmark} ({ceiling['n_images']}) | {VARIANT_NAMES.get(variant, variant)} | "
                         f"{_spread(q['oracle'])} | {_spread(q['best_attention_value'])} | {_spread(q['random'])} | "
                         f"{_spread(q['oracle_minus_best_attention'], sign='+')} |")
    return "\n".join(lines)


def _adjacent(quality: dict[str, Any]) -> str:
    """Per seed, neighbours in the ranking of maps that both paired tests separate: ``3/5, 4/5, 2/5``."""
    pairs = zip(quality.get("adjacent_separated") or [], quality.get("adjacent_pairs") or [], strict=True)
    cells = [f"{k}/{n}" for k, n in pairs if k is not None and n is not None]
    return ", ".join(cells) or "–"


def quality_table(record: dict[str, Any]) -> str:
    """Test accuracy and box PR-AUC's headroom and spread per benchmark and variant, mean ± sd over seeds."""
    keys = ("oracle_minus_random", "oracle_minus_best_attention", "method_spread")
    lines = ["| benchmark | variant | seeds | accuracy % | PR-AUC: oracle − random | oracle − best attention | "
             "spread | adjacent maps told apart |", "|---|---|---:|" + "---:|" * 5]
    for benchmark, bench in record["benchmarks"].items():
        accuracy = {e["variant"]: e["accuracy"] for e in bench["figures"] if e["method"] == "attention"}
        for variant, quality in bench["benchmark_quality"].items():
            cells = [_spread(accuracy.get(variant)), *(_spread(quality["box_pr_auc"][k]) for k in keys),
                     _adjacent(quality["box_pr_auc"])]
            lines.append(f"| {benchmark} | {VARIANT_NAMES.get(variant, variant)} | {len(quality['seeds'])} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines)
