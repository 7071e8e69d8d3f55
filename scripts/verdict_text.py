r"""The verdict in words and tables, from ``metrics/verdict.json`` (``python scripts/verdict.py``).

* :func:`readme_table`: the README's compact table: per benchmark and figure, softmax's raw
  attention map on the matched images and each InfSA variant's seed-level difference from it, with
  the intervals the test uses (t, simultaneous), the call and, where nothing is called, the
  detectable difference;
* :func:`called_table`: the README's list of calls: per benchmark (group) and InfSA variant, for each
  figure the maps called higher or lower than softmax's, with their differences;
* :func:`called_sentences`: one plain sentence per called difference (any map, either way), with
  the same test on the other image sets (``docs/verdict.md``);
* :func:`detection_sentence`: how large a difference the comparisons can see (range, median);
* :func:`morf_ceiling_table`: MoRF-AOC's headroom under its ceiling, the greedy deletion oracle;
* :func:`quality_table`: benchmark quality (headroom and spread of the maps), per variant;
* :func:`verdict_tables`: every comparison with every interval, for ``docs/verdict.md``;
* :func:`image_set_table`: every comparison's call under each image set, for ``docs/verdict.md``.

Differences are in points: the evidence rank correlation x 100, MoRF-AOC in %, box PR-AUC x 100.
"""

from __future__ import annotations

from typing import Any

from scripts.doc_sections import VARIANT_NAMES

__all__ = ["FIGURE_NAMES", "SET_NAMES", "called_sentences", "called_table", "detection_sentence", "image_set_table", "morf_ceiling_table", "quality_table",
           "readme_table", "verdict_tables"]

#: How a verdict figure is named in the README (unit: points); ``evidence_spearman`` was the
#: verdict's faithfulness figure until the controlled meta-evaluation trusted it on 1 of 3 models.
FIGURE_NAMES = {"evidence_mass_accuracy": "evidence mass accuracy x 100 (faithfulness)",
                "evidence_spearman": "evidence rank correlation x 100 (faithfulness)",
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


def _interval(pair: list[float | None] | None, brackets: str = "[]") -> str:
    """``[−5.0, +0.8]`` (``–`` when undefined)."""
    if not pair or pair[0] is None:
        return "–"
    return f"{brackets[0]}{_signed(pair[0])}, {_signed(pair[1])}{brackets[1]}"


def _call(c: dict[str, Any]) -> str:
    return {"higher": "**higher**", "lower": "**lower**"}.get(c["call"], "n.s.")


def _groups(bench: dict[str, Any]) -> dict[str | None, str]:
    """The benchmark's groups of models (folders) and how a table names them (nothing for one group)."""
    groups = list(dict.fromkeys(c.get("group") for c in bench["verdict"]))
    return {g: "" if len(groups) == 1 else f" · {(g or '').rsplit('/', 1)[-1]}" for g in groups}


def _labelled(benchmark: str, per_variant: dict[str, dict[str, Any]]):
    """``(row label, variant, entry)`` for the summary's entries keyed by variant, or by ``"<variant> ·
    <setting>"`` where a benchmark groups its models (:func:`scripts.verdict.by_variant`)."""
    several = len({q.get("group") for q in per_variant.values()}) > 1
    for key, q in per_variant.items():
        group = q.get("group")
        yield (f"{benchmark} · {group.rsplit('/', 1)[-1]}" if several and group else benchmark), q.get("variant", key), q


def _benches(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The benchmarks whose summary holds seed-level comparisons (a summary written before them holds none)."""
    benches = {b: {**bench, "verdict": [c for c in bench["verdict"] if "p_holm" in c]}
               for b, bench in record["benchmarks"].items()}
    return {b: bench for b, bench in benches.items() if bench["verdict"]}


def _family(bench: dict[str, Any]) -> int:
    return max((c.get("family") or 0 for c in bench["verdict"]), default=0)


def verdict_tables(record: dict[str, Any]) -> str:
    """The final verdict tables of ``docs/verdict.md``: per benchmark, every comparison (map × figure ×
    variant) with the seed-level difference from softmax, its 95 % t-interval, the simultaneous
    interval at 1 − 0.05/m, the hierarchical-bootstrap interval, the Holm-adjusted p, the call, the
    detectable difference at 80 % power and the fewest matched images of a seed."""
    benches = _benches(record)
    if not benches:
        return ("*Pending*: the committed reports predate the seed-level verdict; `python scripts/verdict.py` "
                "writes these tables once the seed models are evaluated.")
    out = []
    for benchmark, bench in benches.items():
        variants = list(dict.fromkeys(c["variant"] for c in bench["verdict"]))
        method = bench["verdict"][0]["method"]
        entries = {(e.get("group"), e["variant"]): e for e in bench["figures"] if e["method"] == method}
        names = _groups(bench)

        def accuracies(group: str | None) -> str:
            found = [(v, entries.get((group, v)) or entries.get((None, v))) for v in ("softmax", *variants)]
            return "; ".join(f"{VARIANT_NAMES.get(v, v)} {e['accuracy']['mean']:.1f} ± {e['accuracy']['sd'] or 0:.1f} % "
                             f"({len(e['seeds'])} seeds)" for v, e in found if e and e.get("accuracy"))

        m = _family(bench)
        per_group = ". ".join((f"{name.strip(' ·')}: " if name else "") + accuracies(g) for g, name in names.items())
        out += [f"**{benchmark}** ({bench['n_images']} test images; family of {m} comparisons{_same_maps(bench)}). "
                "Test accuracy on them, mean ± sd over seeds: " + per_group + ".", "",
                f"| map | figure | variant − softmax | difference | 95 % t-interval | simultaneous "
                + (f"{100 - 5 / m:.2f} % " if m else "")
                + "| bootstrap 95 % | p (Holm) | call | detectable at 80 % power | matched images per seed (min) |",
                "|---|---|---|---:|---|---|---|---:|---|---:|---:|"]
        for c in bench["verdict"]:
            flag = f" ⚠ accuracy {c['accuracy_gap']:+.1f}" if c["accuracy_flag"] else ""
            p = "–" if c["p_holm"] is None else f"{c['p_holm']:.2g}"
            detect = "–" if c.get("detectable_difference") is None else f"{c['detectable_difference']:.1f}"
            out.append(f"| {c['method']}{names[c.get('group')]} | {c['figure']} | "
                       f"{VARIANT_NAMES.get(c['variant'], c['variant'])} | {_signed(c['difference'])} | "
                       f"{_interval(c['ci_t'])} | {_interval(c.get('ci_simultaneous'))} | {_interval(c['ci'])} | "
                       f"{p} | {_call(c)}{flag} | {detect} | {c['matched_images']['min']} |")
        out += ["", *_controls_table(bench, names), ""]
    return "\n".join(out).rstrip("\n")


def _same_maps(bench: dict[str, Any]) -> str:
    """``; Linear-InfSA's visits and perron are its attention map: compared once`` (nothing when no
    map of the benchmark is another)."""
    same: dict[tuple[str, str], list[str]] = {}
    for s in bench.get("identical_maps") or []:
        same.setdefault((s["variant"], s["same_as"]), []).append(s["method"])
    if not same:
        return ""
    return "; " + "; ".join(f"{VARIANT_NAMES.get(v, v)}'s {' and '.join(dict.fromkeys(ms))} "
                            f"{'is' if len(set(ms)) == 1 else 'are'} its {first} map on every seed: compared once"
                            for (v, first), ms in same.items())


def _controls_table(bench: dict[str, Any], names: dict[str | None, str]) -> list[str]:
    """Each map against the model-ignorant controls (edge map, intensity) of the same models: the mean
    over seeds of ``map − control`` in points with its 95 % t-interval; "**not above**" where the
    interval does not lie above 0 (the map does not beat a detector that never looks at the model)."""
    rows = bench.get("controls") or []
    if not rows:
        return ["*Model-ignorant controls*: this report holds no edge or intensity rows (it predates "
                "`--references` adding them); rerun `python scripts/verdict.py` to add them."]
    columns = list(dict.fromkeys((r["control"], r["figure"]) for r in rows))
    cells = {(r["group"], r["variant"], r["method"], r["control"], r["figure"]): r for r in rows}
    out = ["Each map against the **model-ignorant controls** of the same models (map − control, points, mean over "
           "seeds [95 % t-interval]; **not above**: the interval does not lie above 0):", "",
           "| map | variant | " + " | ".join(f"− {c} ({f})" for c, f in columns) + " |",
           "|---|---|" + "---|" * len(columns)]
    for group, variant, method in dict.fromkeys((r["group"], r["variant"], r["method"]) for r in rows):
        found = [cells.get((group, variant, method, c, f)) for c, f in columns]
        out.append(f"| {method}{names.get(group, '')} | {VARIANT_NAMES.get(variant, variant)} | " + " | ".join(
            "–" if r is None else f"{'' if r['beats'] else '**not above** '}{_signed(r['difference'])} "
            f"{_interval(r['ci_t'])}" for r in found) + " |")
    return out


#: How the tables name the image sets (:data:`infsa_viz.stats.image_sets.IMAGE_SETS`).
SET_NAMES = {"matched": "matched (both correct)", "own_correct": "each model's own correct", "all": "all images"}


def _set_cell(entry: dict[str, Any] | None) -> str:
    if not entry or not entry.get("stored"):
        return "not stored"
    if entry.get("difference") is None:
        return "–"
    return f"{_signed(entry['difference'])} · p {entry['p_holm']:.2g} · {_call(entry)}"


def image_set_table(record: dict[str, Any]) -> str:
    """Per benchmark and comparison: the difference, Holm-adjusted p and call under each image set, and
    whether the call is the same on every set the report stores."""
    lines = ["| benchmark | map | figure | variant − softmax | " + " | ".join(SET_NAMES.values())
             + " | same call on every stored set |", "|---|---|---|---|" + "---|" * len(SET_NAMES) + "---|"]
    for benchmark, bench in _benches(record).items():
        names = _groups(bench)
        for c in bench["verdict"]:
            sets = c.get("image_sets", {})
            stored = {sets[n]["call"] for n in SET_NAMES if sets.get(n, {}).get("call")}
            lines.append(f"| {benchmark}{names[c.get('group')]} | {c['method']} | {c['figure']} | "
                         f"{VARIANT_NAMES.get(c['variant'], c['variant'])} | "
                         + " | ".join(_set_cell(sets.get(n)) for n in SET_NAMES)
                         + f" | {'yes' if len(stored) <= 1 else '**no**'} |")
    return "\n".join(lines)


def _seeds(bench: dict[str, Any]) -> str:
    counts = {len(e["seeds"]) for e in bench["figures"]}
    return "/".join(str(n) for n in sorted(counts))


def _readme_cell(c: dict[str, Any] | None) -> str:
    """``−1.8 [−5.9, +2.2] {−11.5, +7.9} n.s.; would detect ≥ 12.0``: difference, t-interval,
    simultaneous interval, the call, and for a row not called its detectable difference."""
    if c is None or c["difference"] is None:
        return "–"
    flag = " ⚠" if c["accuracy_flag"] else ""
    cell = f"{c['difference']:+.1f} {_interval(c['ci_t'])} {_interval(c.get('ci_simultaneous'), '{}')} {_call(c)}"
    if c["call"] == "not shown" and c.get("detectable_difference") is not None:
        cell += f"; would detect ≥ {c['detectable_difference']:.1f}"
    return cell + flag


def _baseline_mean(c: dict[str, Any] | None) -> str:
    values = [s["baseline_mean"] for s in (c or {}).get("per_seed", []) if s.get("baseline_mean") is not None]
    return f"{sum(values) / len(values):.1f}" if values else "–"


def readme_table(record: dict[str, Any], method: str = "attention") -> str:
    """Per benchmark and verdict figure: softmax's ``method`` map on the matched images of each pair
    (mean over seeds) and each InfSA variant's seed-level difference from it, with its 95 %
    t-interval, simultaneous interval, call and (not called) detectable difference."""
    variants = [v for v in VARIANT_NAMES if v != "softmax"]
    lines = ["| benchmark (seeds) | figure | softmax on the matched images ("
             + " / ".join(f"{VARIANT_NAMES[v]} pairs" for v in variants) + ") | "
             + " | ".join(f"{VARIANT_NAMES[v]} − softmax" for v in variants) + " |",
             "|---|---|---:|" + "---|" * len(variants)]
    for benchmark, bench in _benches(record).items():
        for group, name in _groups(bench).items():
            calls = {(c["figure"], c["variant"], c["method"]): c for c in bench["verdict"] if c.get("group") == group}
            for figure in record["protocol"]["figures"]:
                mine = [calls.get((figure, v, method)) for v in variants]
                lines.append(f"| {benchmark}{name} ({_seeds(bench)}) | {FIGURE_NAMES.get(figure, figure)} | "
                             + " / ".join(_baseline_mean(c) for c in mine) + " | "
                             + " | ".join(_readme_cell(c) for c in mine) + " |")
    return "\n".join(lines)


def _on_other_sets(c: dict[str, Any]) -> str:
    """``on all images +2.9 (Holm p 0.13, n.s.); own correct images: not stored``."""
    parts = []
    for name, label in (("own_correct", "each model's own correct images"), ("all", "all images")):
        entry = c.get("image_sets", {}).get(name)
        if not entry or entry.get("difference") is None:
            parts.append(f"{label}: " + ("no images" if entry and entry.get("stored") else "not stored"))
        else:
            parts.append(f"{label} {entry['difference']:+.1f} (Holm p {entry['p_holm']:.2g}, "
                         f"{_CALLS[entry['call']]})")
    return "; ".join(parts)


def detection_sentence(record: dict[str, Any]) -> str:
    """Per benchmark: the range and median of the detectable differences of every comparison, and the SDs
    of the seed differences they come from."""
    import statistics

    out = []
    for benchmark, bench in _benches(record).items():
        rows = [c for c in bench["verdict"] if c.get("detectable_difference") is not None]
        if not rows:
            continue
        detect = sorted(c["detectable_difference"] for c in rows)
        sds = sorted(c["sd_seeds"] for c in rows if c.get("sd_seeds") is not None)
        seeds = sorted({c["n_seeds"] for c in rows})
        out.append(f"On `{benchmark}` ({'/'.join(map(str, seeds))} seeds, family of {_family(bench)}) the detectable "
                   f"differences run from {detect[0]:.1f} to {detect[-1]:.1f} points (median "
                   f"{statistics.median(detect):.1f}), from seed-to-seed SDs of the paired differences of "
                   f"{sds[0]:.1f}–{sds[-1]:.1f} points.")
    return " ".join(out)


def called_sentences(record: dict[str, Any]) -> str:
    """One sentence per called difference (every map and figure), whichever way it falls, with its
    t- and simultaneous intervals and the same test on the other image sets; or the sentence that
    nothing is called."""
    out = []
    for benchmark, bench in _benches(record).items():
        names = _groups(bench)
        for c in bench["verdict"]:
            if c.get("call") not in ("higher", "lower"):
                continue
            gap = (f"; their accuracies differ by {c['accuracy_gap']:+.1f} points ⚠" if c["accuracy_flag"] else
                   f"; accuracies within {abs(c['accuracy_gap']):.1f} points")
            out.append(f"- On `{benchmark}`{names[c.get('group')]}, {VARIANT_NAMES.get(c['variant'], c['variant'])}'s "
                       f"`{c['method']}` map scores **{c['call']}** than softmax's on "
                       f"{FIGURE_NAMES.get(c['figure'], c['figure'])}: {c['difference']:+.1f} points, t-interval "
                       f"{_interval(c['ci_t'])}, simultaneous {_interval(c['ci_simultaneous'], '{}')}, over "
                       f"{c['n_seeds']} seed pairs (Holm p = {c['p_holm']:.2g}, at least "
                       f"{c['matched_images']['min']} matched images per seed{gap}). Same test on "
                       f"{_on_other_sets(c)}.")
    return "\n".join(out) if out else "- No difference is called: no seed-level test passes after Holm's correction."


def _called_cell(calls: list[dict[str, Any]]) -> str:
    """``**higher**: rollout +8.8, visits +11.4; **lower**: attention −1.3`` (``–``: nothing called)."""
    parts = []
    for direction in ("higher", "lower"):
        maps = [f"{c['method']} {c['difference']:+.1f}" for c in calls if c.get("call") == direction]
        if maps:
            parts.append(f"**{direction}**: " + ", ".join(maps))
    return "; ".join(parts) or "–"


def called_table(record: dict[str, Any]) -> str:
    """Per benchmark (group of models) and InfSA variant: for each verdict figure, the maps whose
    seed-level difference from softmax's same map is called (Holm over the benchmark's family), with
    the difference in points, and how many comparisons are called out of how many."""
    figures = record["protocol"]["figures"]
    lines = ["| benchmark (seeds) | variant − softmax | " + " | ".join(FIGURE_NAMES.get(f, f) for f in figures)
             + " | called |", "|---|---|" + "---|" * len(figures) + "---:|"]
    for benchmark, bench in _benches(record).items():
        for group, name in _groups(bench).items():
            mine = [c for c in bench["verdict"] if c.get("group") == group]
            for variant in dict.fromkeys(c["variant"] for c in mine):
                rows = [c for c in mine if c["variant"] == variant]
                called = sum(c.get("call") in ("higher", "lower") for c in rows)
                lines.append(f"| {benchmark}{name} ({_seeds(bench)}) | {VARIANT_NAMES.get(variant, variant)} | "
                             + " | ".join(_called_cell([c for c in rows if c["figure"] == f]) for f in figures)
                             + f" | {called} of {len(rows)} |")
    return "\n".join(lines)


def morf_ceiling_table(record: dict[str, Any]) -> str:
    """Per benchmark and variant: MoRF-AOC of the greedy deletion oracle, of the best attention-type
    map and of the random map on the greedy run's images, mean ± sd over seeds."""
    lines = ["| benchmark (images) | variant | greedy oracle | best attention-type map | random map | "
             "oracle − best attention |", "|---|---|---:|---:|---:|---:|"]
    for benchmark, bench in record["benchmarks"].items():
        ceiling = bench.get("morf_ceiling")
        if not ceiling:
            continue
        for label, variant, q in _labelled(benchmark, ceiling["per_variant"]):
            lines.append(f"| {label} ({ceiling['n_images']}) | {VARIANT_NAMES.get(variant, variant)} | "
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
        accuracy = {(e.get("group"), e["variant"]): e["accuracy"] for e in bench["figures"] if e["method"] == "attention"}
        for label, variant, quality in _labelled(benchmark, bench["benchmark_quality"]):
            group = quality.get("group")
            cells = [_spread(accuracy.get((group, variant)) or accuracy.get((None, variant))),
                     *(_spread(quality["box_pr_auc"][k]) for k in keys), _adjacent(quality["box_pr_auc"])]
            lines.append(f"| {label} | {VARIANT_NAMES.get(variant, variant)} | {len(quality['seeds'])} | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines)
