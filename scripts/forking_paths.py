"""The paper's MoRF-AOC gap as a garden of forking paths: which (seed, protocol) choices reproduce it.

A study that trains one model per variant picks, knowingly or not, one training seed and one of
the 135 MoRF protocols of :func:`infsa_viz.stats.sensitivity.protocol_choices`. From the
sensitivity study's per-model scores (``metrics/protocol-sensitivity.json``,
``scripts/paper_gap.py``) this lists, for every seed pair (the Linear-InfSA and softmax models of
one training seed, the verdict's pairing) and protocol, the gap Linear-InfSA − softmax of the
raw-attention maps' MoRF-AOC, whether it has the paper's sign (the paper: 76.0 − 42.6 = +33.4)
and whether it is at least :data:`LARGE_GAP` points; and the shares of such choices, over the
same-seed pairs and over every pairing of a Linear-InfSA seed with a softmax seed. The paper's
full ordering (Linear-InfSA > pure InfSA > softmax, one seed) and a random map below 42.6 are
counted beside.

``python scripts/paper_gap.py --tables-only`` writes both sections into ``docs/verdict.md``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LARGE_GAP", "forking_paths", "forking_tables"]

#: A gap of at least this many points counts as reproducing the paper's size of gap (+33.4).
LARGE_GAP = 20.0


def _score(record: dict[str, Any], variant: str, seed: int, method: str, i: int) -> float | None:
    model = next((m for m in record["models"] if m["variant"] == variant and m["seed"] == seed), None)
    return None if model is None else model["scores"][method][i][0]


def forking_paths(record: dict[str, Any]) -> dict[str, Any]:
    """Every (seed pair, protocol) of the sensitivity study and the shares that reproduce the paper.

    Returns:
        ``{"rows": [{"protocol", "gaps": {seed: Linear − softmax}, "ordering": {seed: Linear > pure >
        softmax}, "random_below": {seed: softmax random map < paper's softmax}}], "same_seed": shares,
        "any_pair": shares, "seeds"}``; shares count choices, ``linear_above`` (Linear > softmax),
        ``large`` (also a gap >= :data:`LARGE_GAP`), ``ordering`` and ``max_gap``.
    """
    from infsa_viz.stats.sensitivity import ProtocolChoice

    paper = record["protocol"]["paper"]["softmax"]
    seeds = sorted({m["seed"] for m in record["models"]})
    rows = []
    for i, choice in enumerate(record["choices"]):
        row: dict[str, Any] = {"protocol": ProtocolChoice(**choice).name, "gaps": {}, "ordering": {}, "random_below": {}}
        for seed in seeds:
            linear, pure, soft = (_score(record, v, seed, "attention", i) for v in ("linear_infsa", "pure_infsa", "softmax"))
            random = _score(record, "softmax", seed, "random", i)
            if linear is not None and soft is not None:
                row["gaps"][seed] = linear - soft
                row["ordering"][seed] = pure is not None and linear > pure > soft
                row["random_below"][seed] = random is not None and random < paper
        rows.append(row)
    cross = [_score(record, "linear_infsa", a, "attention", i) - _score(record, "softmax", b, "attention", i)
             for i in range(len(record["choices"])) for a in seeds for b in seeds
             if _score(record, "linear_infsa", a, "attention", i) is not None
             and _score(record, "softmax", b, "attention", i) is not None]
    same = [g for r in rows for g in r["gaps"].values()]
    return {"rows": rows, "seeds": seeds, "same_seed": {**_shares(same), "ordering": sum(
                sum(r["ordering"].values()) for r in rows)},
            "any_pair": _shares(cross)}


def _shares(gaps: list[float]) -> dict[str, Any]:
    return {"choices": len(gaps), "linear_above": sum(g > 0 for g in gaps),
            "large": sum(g >= LARGE_GAP for g in gaps), "max_gap": max(gaps, default=None)}


def _share(count: int, total: int) -> str:
    return f"{100 * count / total:.1f} %" if total else "–"


def _pct(count: int, total: int) -> str:
    return f"{count} of {total} ({_share(count, total)})" if total else "–"


def forking_tables(record: dict[str, Any]) -> dict[str, str]:
    """``{"forking-paths": the summary per seed pair and the shares, "forking-paths-grid": every
    protocol × seed pair (inside a collapsed block)}``."""
    paths = forking_paths(record)
    seeds, rows = paths["seeds"], paths["rows"]
    total = len(rows)
    lines = [f"| choice | protocols (of {total}) with Linear-InfSA > softmax | … with a gap ≥ {LARGE_GAP:g} points | "
             "… with Linear-InfSA > pure InfSA > softmax | … that also put softmax's random map below 42.6 | "
             "largest gap (protocol) |", "|---|---:|---:|---:|---:|---|"]
    for seed in seeds:
        gaps = {r["protocol"]: r["gaps"][seed] for r in rows if seed in r["gaps"]}
        widest = max(gaps, key=gaps.get)
        ordered = [r for r in rows if r["ordering"].get(seed)]
        lines.append(f"| seed {seed} (Linear-InfSA seed {seed} vs softmax seed {seed}) | "
                     f"{sum(g > 0 for g in gaps.values())} | {sum(g >= LARGE_GAP for g in gaps.values())} | "
                     f"{len(ordered)} | {sum(r['random_below'][seed] for r in ordered)} | "
                     f"{gaps[widest]:+.1f} ({widest}) |")
    same, cross = paths["same_seed"], paths["any_pair"]
    lines += ["", f"Over every (seed, protocol) choice of a one-model-per-variant study: same-seed pairs "
              f"({len(seeds)} seeds × {total} protocols): Linear-InfSA above softmax in "
              f"{_pct(same['linear_above'], same['choices'])}, {same['large']} of them by ≥ {LARGE_GAP:g} points "
              f"({_share(same['large'], same['choices'])} of all choices), the paper's full ordering in "
              f"{_pct(same['ordering'], same['choices'])}; any Linear-InfSA seed against any softmax seed "
              f"({len(seeds) ** 2} pairs × {total}): above in {_pct(cross['linear_above'], cross['choices'])}, "
              f"{cross['large']} by ≥ {LARGE_GAP:g} points ({_share(cross['large'], cross['choices'])}; largest "
              f"{cross['max_gap']:+.1f}; the paper: +33.4). On the seed means no protocol gives the paper's ordering "
              "(table above)."]
    grid = ["<details><summary>Every protocol × seed pair: Linear-InfSA − softmax, raw attention, MoRF-AOC points "
            f"(✓: Linear-InfSA above softmax; ✓✓: by ≥ {LARGE_GAP:g}; ‡: Linear-InfSA > pure InfSA > softmax), "
            "largest gap first</summary>", "",
            "| protocol | " + " | ".join(f"seed {s}" for s in seeds) + " |", "|---|" + "---:|" * len(seeds)]
    for r in sorted(rows, key=lambda r: -max(r["gaps"].values(), default=float("-inf"))):
        cells = []
        for s in seeds:
            gap = r["gaps"].get(s)
            mark = "" if gap is None or gap <= 0 else " ✓✓" if gap >= LARGE_GAP else " ✓"
            cells.append("–" if gap is None else f"{gap:+.1f}{mark}{' ‡' if r['ordering'].get(s) else ''}")
        grid.append(f"| {r['protocol']} | " + " | ".join(cells) + " |")
    grid += ["", "</details>"]
    return {"forking-paths": "\n".join(lines), "forking-paths-grid": "\n".join(grid)}
