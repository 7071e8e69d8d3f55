"""What an evaluation says beyond its rows: paired tests, benchmark headroom, spread across seeds.

* :func:`paired_tests`: every method against every other within a model, and every model against
  every other of the same training seed for a method, on the same images (:func:`~infsa_viz.stats.paired.compare_paired`:
  mean difference with its bootstrap interval, paired-bootstrap and Wilcoxon p-values, effect
  sizes), with Holm-corrected p-values per family (one figure and one model, or one figure and one
  method).
* :func:`benchmark_quality`: per model, how far the box oracle sits above the random map and above
  the best attention-type map, and how far apart the methods are (best minus worst non-random),
  in points; a benchmark whose maps bunch just under the oracle cannot separate methods. Given the
  method-vs-method tests, it also says which maps *adjacent* in the ranking the paired tests tell
  apart (:func:`adjacent_methods`).
* :func:`seed_summary`: mean ± spread across training seeds (models named ``<name>-seed<k>``)
  beside each run's own interval over images.

:func:`compare` also adds the call across seeds of :mod:`.verdict`. The model-vs-model tests here
are about the given trained models (images as the only source of variance); a call about the
variants is :mod:`.verdict`'s, from the seed-level test.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from itertools import combinations, pairwise
from typing import Any

import numpy as np

from ..evaluation.engine import Evaluation
from ..evaluation.records import ImageRecord, per_image_figures
from ..maps import METHODS
from ..metrics.registry import FIGURES
from .paired import compare_paired, holm, significant
from .seed_stats import ALPHA
from .verdict import PAIRED_FIGURES, quality_across_seeds, split_seed, spread, variant_verdict

__all__ = ["PAIRED_FIGURES", "QUALITY_GOALS", "adjacent_methods", "benchmark_quality", "compare", "paired_tests",
           "seed_summary", "split_seed", "with_comparisons"]

#: Figures of :func:`benchmark_quality`.
QUALITY_FIGURES = ("morf_aoc", "box_pr_auc")


def _points(figure: str) -> float:
    """The factor that turns a figure into points (shares x 100)."""
    return 100.0 if FIGURES[figure].percent else 1.0


def _role(method: str) -> str | None:
    spec = METHODS.get(method)
    return None if spec is None else spec.role
#: What a benchmark that separates methods should show, in points (issue #15).
QUALITY_GOALS = {"oracle_minus_best_attention": 5.0, "method_spread": 15.0}


def _r(value: float, digits: int = 6) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), digits)


def _by_image(records: Sequence[ImageRecord], select: str) -> dict[str, dict[int, float]]:
    values = per_image_figures(records, select=select)
    return {f: dict(zip((r.index for r in records), v.tolist(), strict=True)) for f, v in values.items()}


def _aligned(a: dict[int, float], b: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
    shared = sorted(set(a) & set(b))
    return np.array([a[i] for i in shared]), np.array([b[i] for i in shared])


def _test(a: dict[int, float], b: dict[int, float], seed: int, n_resamples: int) -> dict[str, Any]:
    x, y = _aligned(a, b)
    if not (np.isfinite(x) & np.isfinite(y)).any():
        return {"n_pairs": 0, "p_bootstrap": None, "p_wilcoxon": None, "note": "no image defined for both"}
    return compare_paired(x, y, n_resamples=n_resamples, seed=seed).to_dict()


def _holm(tests: list[dict[str, Any]], key: tuple[str, ...]) -> None:
    """Add ``p_wilcoxon_holm`` and ``p_bootstrap_holm`` within each family (tests equal on ``key``)."""
    families: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for test in tests:
        families.setdefault(tuple(test[k] for k in key), []).append(test)
    for family in families.values():
        for p in ("p_wilcoxon", "p_bootstrap"):
            raw = np.array([math.nan if t[p] is None else t[p] for t in family], dtype=np.float64)
            for t, adjusted in zip(family, holm(raw), strict=True):
                t[f"{p}_holm"] = significant(adjusted)
                t["family_size"] = int(np.isfinite(raw).sum())


def _other_seed(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are models of different training seeds (not paired: their difference
    would mix the seed with the variant; the spread across seeds is :func:`seed_summary`'s)."""
    (_, seed_a), (_, seed_b) = split_seed(a), split_seed(b)
    return seed_a is not None and seed_b is not None and seed_a != seed_b


def paired_tests(records: Sequence[ImageRecord], *, select: str, figures: Sequence[str] = PAIRED_FIGURES,
                 n_resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Method-vs-method (within each model) and model-vs-model (for each method) paired tests.

    Pairs are images (by their index in the data set) where the figure is defined for both sides
    and that both rows count (curve scores: the ``select`` images of each model, so two models are
    compared on the images both classify correctly under ``select="correct"``). A difference is
    ``a − b``; positive means ``a`` scores higher (higher is better for both default figures).

    Returns:
        ``{"protocol", "method_vs_method", "model_vs_model"}``; each test holds ``figure``, the two
        sides, :meth:`~infsa_viz.stats.paired.PairedComparison.to_dict` and Holm-adjusted
        p-values of its family.
    """
    groups: dict[tuple[str, str], list[ImageRecord]] = {}
    for record in records:
        groups.setdefault((record.model, record.method), []).append(record)
    values = {key: _by_image(group, select) for key, group in groups.items()}
    models = list(dict.fromkeys(m for m, _ in groups))
    methods = list(dict.fromkeys(m for _, m in groups))
    within: list[dict[str, Any]] = []
    across: list[dict[str, Any]] = []
    figures = [f for f in figures if all(f in v for v in values.values())  # measured in every row, and defined
               and any(np.isfinite(list(v[f].values())).any() for v in values.values())]
    for figure in figures:
        for model in models:
            present = [m for m in methods if (model, m) in values]
            for a, b in combinations(present, 2):
                within.append({"figure": figure, "model": model, "a": a, "b": b,
                               **_test(values[model, a][figure], values[model, b][figure], seed, n_resamples)})
        for method in methods:
            present = [m for m in models if (m, method) in values]
            for a, b in combinations(present, 2):
                if _other_seed(a, b):
                    continue
                across.append({"figure": figure, "method": method, "a": a, "b": b,
                               **_test(values[a, method][figure], values[b, method][figure], seed, n_resamples)})
    _holm(within, ("figure", "model"))
    _holm(across, ("figure", "method"))
    return {
        "protocol": {
            "figures": list(figures),
            "pairs": "images (by index) counted in both rows and defined for both; curve scores use the "
                     f"'{select}' selection of each side; models named <name>-seed<k> are paired only with "
                     "models of the same seed (or without one)",
            "difference": "a - b (positive: a scores higher)",
            "tests": "paired bootstrap of the mean difference (percentile interval; p from the null-centred "
                     "bootstrap) and two-sided Wilcoxon signed-rank (zero differences dropped), "
                     "scipy.stats.wilcoxon",
            "effect_sizes": "rank_biserial: matched-pairs rank-biserial correlation (Kerby 2014); cohen_dz: "
                            "mean(a - b) / sd(a - b)",
            "correction": "Holm (1979) within each family: method_vs_method per (figure, model), "
                          "model_vs_model per (figure, method)",
            "scope": "statements about the given trained models: images are the only source of variance; a "
                     "call about a variant is the verdict's, from its seed-level test",
            "confidence": 0.95, "n_resamples": n_resamples, "seed": seed,
        },
        "method_vs_method": within,
        "model_vs_model": across,
    }


def _attention_type(method: str) -> bool:
    spec = METHODS.get(method)
    return spec is not None and spec.family in ("attention", "spectral")


def _ranked_maps(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """``{model: {figure: {method: points}}}`` over the maps that are neither random nor a reference."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for row in rows:
        if _role(row["method"]) != "explanation":
            continue
        for figure in QUALITY_FIGURES:
            value = row.get(figure)
            if value is not None and math.isfinite(float(value)):
                out.setdefault(row["model"], {}).setdefault(figure, {})[row["method"]] = float(value) * _points(figure)
    return out


def adjacent_methods(rows: Sequence[dict[str, Any]], method_tests: Sequence[dict[str, Any]], *,
                     alpha: float = ALPHA) -> dict[str, dict[str, Any]]:
    """Per model and figure: the maps ranked by the figure, and whether neighbours differ by the paired tests.

    The maps are those :func:`benchmark_quality`'s spread runs over (neither random nor a
    reference), ranked from the highest figure down. A pair of neighbours is ``separated`` when
    both Holm-corrected tests of its :func:`paired_tests` ``method_vs_method`` entry (paired
    bootstrap and Wilcoxon signed-rank) give ``p < alpha``; ``None`` when the pair was not tested.

    Returns:
        ``{model: {figure: {"ranking", "pairs": [{"higher", "lower", "difference", "p_bootstrap_holm",
        "p_wilcoxon_holm", "separated"}], "separated", "n_pairs"}}}``, differences in points.
    """
    tests = {(t["figure"], t["model"], frozenset((t["a"], t["b"]))): t for t in method_tests}
    out: dict[str, dict[str, Any]] = {}
    for model, figures in _ranked_maps(rows).items():
        for figure, values in figures.items():
            ranking = sorted(values, key=values.__getitem__, reverse=True)
            pairs = []
            for higher, lower in pairwise(ranking):
                test = tests.get((figure, model, frozenset((higher, lower))))
                ps = None if test is None else (test.get("p_bootstrap_holm"), test.get("p_wilcoxon_holm"))
                pairs.append({"higher": higher, "lower": lower, "difference": _r(values[higher] - values[lower], 4),
                              "p_bootstrap_holm": None if ps is None else ps[0],
                              "p_wilcoxon_holm": None if ps is None else ps[1],
                              "separated": None if ps is None else all(p is not None and p < alpha for p in ps)})
            out.setdefault(model, {})[figure] = {
                "ranking": ranking, "pairs": pairs, "n_pairs": len(pairs),
                "separated": sum(p["separated"] is True for p in pairs)}
    return out


def benchmark_quality(rows: Sequence[dict[str, Any]],
                      method_tests: Sequence[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Per model: oracle − random, oracle − best attention-type map, and best − worst method, in points.

    Attention-type maps are the registered methods of the ``attention`` and ``spectral`` families
    (raw attention, rollout, expected visits, Perron vectors, …); the spread runs over every map
    that is neither the random map nor a reference map. MoRF-AOC is in % already; box PR-AUC is
    multiplied by 100. A value is ``None`` when a row it needs was not evaluated (run the
    evaluation with the reference maps: the floor, ``random``, and each figure's ceiling, its
    :attr:`~infsa_viz.metrics.registry.Figure.ceiling`). With ``method_tests``
    (:func:`paired_tests`' ``method_vs_method``) each figure also holds ``adjacent``
    (:func:`adjacent_methods`): which neighbours in the ranking of maps the paired tests tell apart.
    """
    ranked = _ranked_maps(rows)
    adjacent = adjacent_methods(rows, method_tests) if method_tests is not None else {}
    per_model: dict[str, Any] = {}
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = {r["method"]: r for r in rows if r["model"] == model}
        entry: dict[str, Any] = {}
        floor = next((m for m in mine if _role(m) == "floor"), None)
        for figure in QUALITY_FIGURES:
            def value(method: str | None, figure: str = figure, mine: dict[str, Any] = mine) -> float | None:
                v = mine[method].get(figure) if method in mine else None
                return None if v is None else float(v) * _points(figure)

            oracle, random = value(FIGURES[figure].ceiling), value(floor)
            attention = {m: value(m) for m in mine if _attention_type(m) and value(m) is not None}
            others = ranked.get(model, {}).get(figure, {})
            best_attention = max(attention, key=attention.__getitem__) if attention else None
            best = max(others, key=others.__getitem__) if others else None
            worst = min(others, key=others.__getitem__) if others else None
            entry[figure] = {
                "oracle": _r(oracle, 4), "random": _r(random, 4),
                "best_attention": best_attention,
                "best_attention_value": _r(attention[best_attention], 4) if best_attention else None,
                "best": best, "worst": worst,
                "oracle_minus_random": _r(oracle - random, 4) if oracle is not None and random is not None else None,
                "oracle_minus_best_attention": _r(oracle - attention[best_attention], 4)
                if oracle is not None and best_attention else None,
                "method_spread": _r(others[best] - others[worst], 4) if best else None,
            }
            entry[figure]["meets_goals"] = (
                None if any(entry[figure][k] is None for k in QUALITY_GOALS)
                else all(entry[figure][k] >= goal for k, goal in QUALITY_GOALS.items()))
            if method_tests is not None:
                entry[figure]["adjacent"] = adjacent.get(model, {}).get(figure)
        per_model[model] = entry
    return {
        "unit": "points: MoRF-AOC in %, box PR-AUC x 100",
        "attention_type": "registered methods of the 'attention' and 'spectral' families",
        "method_spread": "best minus worst map that is neither random nor a reference",
        "adjacent": f"those maps ranked by the figure; neighbours are 'separated' when both Holm-corrected "
                    f"method-vs-method paired tests give p < {ALPHA}",
        "goals": QUALITY_GOALS,
        "per_model": per_model,
    }


#: The figures :func:`seed_summary` spreads over seeds by default: accuracy, the verdict's figures
#: (:data:`PAIRED_FIGURES`) and the pointing game.
SEED_FIGURES = ("accuracy", *PAIRED_FIGURES, "pointing_game")


def seed_summary(rows: Sequence[dict[str, Any]], *, figures: Sequence[str] = SEED_FIGURES) -> list[dict[str, Any]]:
    """Mean ± spread across training seeds, for models named ``<name>-seed<k>`` (two seeds or more).

    Each entry is one ``(name, method)``: per figure the mean over seeds, the sample standard
    deviation (ddof 1), min and max, and each seed's value with its own interval over images
    (``<figure>_ci`` of its row): the spread between seeds beside the spread within a run.
    """
    groups: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
    for row in rows:
        base, seed = split_seed(str(row["model"]))
        if seed is not None:
            groups.setdefault((base, row["method"]), []).append((seed, row))
    out = []
    for (base, method), members in groups.items():
        if len(members) < 2:
            continue
        members.sort(key=lambda m: m[0])
        entry: dict[str, Any] = {"model": base, "variant": members[0][1].get("variant"), "method": method,
                                 "seeds": [s for s, _ in members], "figures": {}}
        for figure in figures:
            values = np.array([np.nan if r.get(figure) is None else float(r[figure]) for _, r in members])
            entry["figures"][figure] = {
                **spread(values.tolist(), 6),
                "per_seed": [_r(v) for v in values],
                "per_seed_ci": [r.get(f"{figure}_ci") for _, r in members],
            }
        out.append(entry)
    return out


def compare(records: Sequence[ImageRecord], rows: Sequence[dict[str, Any]], *, select: str,
            seed: int = 0) -> dict[str, Any]:
    """The sections an evaluation report adds to its rows: ``paired_tests``, ``benchmark_quality``
    (with ``across_seeds``), ``seeds`` and ``verdict`` (:mod:`.verdict`: each variant against
    softmax with the trained model as the unit, on the images both models classify correctly; with
    ``select="all"`` on every image)."""
    tests = paired_tests(records, select=select, seed=seed)
    quality = benchmark_quality(rows, tests["method_vs_method"])
    quality["across_seeds"] = quality_across_seeds(quality)
    return {"paired_tests": tests, "benchmark_quality": quality, "seeds": seed_summary(rows),
            "verdict": variant_verdict(records, seed=seed, images="all" if select == "all" else "matched")}


def with_comparisons(evaluation: Evaluation) -> Evaluation:
    """``evaluation`` with the statistics of its report: :func:`compare` of its records and rows, under the
    ``select`` and ``seed`` it was run with (the sections :func:`~infsa_viz.evaluation.write_evaluation`
    writes after the rows).

    Example:
        >>> result = with_comparisons(evaluate(models, methods, data))  # doctest: +SKIP
        >>> write_evaluation(result, "out/report.json")  # doctest: +SKIP
    """
    settings = evaluation.protocol["settings"]
    sections = compare(evaluation.records, evaluation.rows, select=settings["select"], seed=settings["seed"])
    return dataclasses.replace(evaluation, comparisons=sections)
