"""Is one variant's map better than the baseline's? A call across training seeds, backed by paired tests.

An evaluation of models named ``<name>-seed<k>`` (several variants trained with the same seeds,
e.g. by ``scripts/train_seeds.py``) pairs each InfSA model with the softmax model **of the same
seed** on the same images (:func:`~infsa_viz.evaluation.comparisons.paired_tests`). For every
figure, map method and variant, :func:`variant_verdict` collects those per-seed tests and makes
the call the README may repeat:

* ``"higher"`` / ``"lower"``: in every seed (at least ``min_seeds``) the variant's mean differs
  from the baseline's in the same direction, and both paired tests of that seed (paired
  bootstrap of the mean, Wilcoxon signed-rank of the typical image), Holm-corrected, have
  ``p < alpha``;
* ``"not shown"`` otherwise, with the reason (too few seeds, seeds disagree in direction, or the
  seed whose tests do not reach ``alpha``).

:func:`quality_across_seeds` gives :func:`~infsa_viz.evaluation.comparisons.benchmark_quality`'s
headroom figures as mean ± sd across the seeds of each model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..attention import DEFAULT_VARIANT

__all__ = ["ALPHA", "MIN_SEEDS", "PAPER_FIGURES", "quality_across_seeds", "split_seed", "variant_verdict"]

#: The paper's figures (Roffo & Palmer, arXiv 2603.00175; ImageNet-scale models, protocol not
#: published, so never like for like with ours), in %, per variant.
PAPER_FIGURES: dict[str, dict[str, float]] = {
    "softmax": {"morf_aoc": 42.6, "box_roc_auc": 53.8, "box_pr_auc": 56.2},
    "pure_infsa": {"morf_aoc": 71.7, "box_roc_auc": 77.3, "box_pr_auc": 72.4},
    "linear_infsa": {"morf_aoc": 76.0, "box_roc_auc": 75.9, "box_pr_auc": 76.1},
}
#: Significance level of each (Holm-corrected) paired test behind a call.
ALPHA = 0.05
#: Seeds a call needs (issue #15: at least 3 training seeds per variant).
MIN_SEEDS = 3
_QUALITY_KEYS = ("oracle_minus_random", "oracle_minus_best_attention", "method_spread")
_SEED = re.compile(r"^(?P<base>.+)-seed(?P<seed>\d+)$")


def split_seed(model: str) -> tuple[str, int | None]:
    """``"runs/hard/pure_infsa-seed2"`` → ``("runs/hard/pure_infsa", 2)``; no suffix → ``(model, None)``."""
    match = _SEED.match(model.rstrip("/"))
    return (match["base"], int(match["seed"])) if match else (model, None)


def spread(values: Sequence[float | None], digits: int = 4) -> dict[str, Any]:
    """Mean, sample sd (ddof 1), min and max of the finite ``values`` (``None`` where undefined)."""
    finite = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    if not finite.size:
        return {"mean": None, "sd": None, "min": None, "max": None}
    return {"mean": round(float(finite.mean()), digits),
            "sd": round(float(finite.std(ddof=1)), digits) if finite.size > 1 else None,
            "min": round(float(finite.min()), digits), "max": round(float(finite.max()), digits)}


def _oriented(test: dict[str, Any], flip: bool) -> dict[str, Any]:
    """One seed's test as ``variant − baseline`` (the stored test is ``a − b``)."""
    sign = -1.0 if flip else 1.0
    low, high = test.get("difference_ci") or (None, None)
    ci = None if low is None or high is None else sorted([sign * low, sign * high])
    effect = (test.get("effect_size") or {}).get("rank_biserial")
    mean = test.get("mean_difference")
    return {"difference": None if mean is None else sign * mean, "difference_ci": ci,
            "variant_mean": test.get("mean_b" if flip else "mean_a"),
            "baseline_mean": test.get("mean_a" if flip else "mean_b"),
            "p_bootstrap_holm": test.get("p_bootstrap_holm"), "p_wilcoxon_holm": test.get("p_wilcoxon_holm"),
            "rank_biserial": None if effect is None else sign * effect, "n_pairs": test.get("n_pairs")}


def _call(per_seed: list[dict[str, Any]], alpha: float, min_seeds: int) -> tuple[str, str]:
    if len(per_seed) < min_seeds:
        return "not shown", f"{len(per_seed)} seed(s); a call needs {min_seeds}"
    signs = {None if s["difference"] is None else np.sign(s["difference"]) for s in per_seed}
    if signs not in ({1.0}, {-1.0}):
        return "not shown", "the seeds disagree in direction (or a difference is zero or undefined)"
    for s in per_seed:
        ps = [s["p_bootstrap_holm"], s["p_wilcoxon_holm"]]
        if any(p is None or not p < alpha for p in ps):
            return "not shown", (f"seed {s['seed']}: Holm-corrected p = {ps[0]} (bootstrap), {ps[1]} (Wilcoxon); "
                                 f"both must be < {alpha}")
    direction = "higher" if signs == {1.0} else "lower"
    return direction, f"every seed {direction}, both paired tests p < {alpha} (Holm) in each"


def variant_verdict(rows: Sequence[dict[str, Any]], model_vs_model: Sequence[dict[str, Any]], *,
                    baseline: str = DEFAULT_VARIANT, alpha: float = ALPHA,
                    min_seeds: int = MIN_SEEDS) -> dict[str, Any]:
    """Each variant against ``baseline``, per figure and method, across the seeds both were trained with.

    Args:
        rows: the evaluation rows (``model``, ``variant``); models named ``<name>-seed<k>``.
        model_vs_model: ``paired_tests(...)["model_vs_model"]`` of the same evaluation (differences
            ``a − b`` with Holm-corrected p-values).
        baseline: the variant the others are compared with (default softmax).
        alpha: significance level of each Holm-corrected test.
        min_seeds: seeds needed before a direction is called.

    Returns:
        ``{"protocol", "comparisons"}``; each comparison holds ``figure``, ``method``, ``variant``,
        ``baseline``, ``seeds``, ``per_seed`` (difference ``variant − baseline`` with its paired
        interval, both means, Holm p-values, rank-biserial effect, pairs), ``difference``
        (mean ± sd across seeds), ``call`` and ``reason``.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha={alpha!r} must lie strictly between 0 and 1")
    variant_of = {r["model"]: r.get("variant") for r in rows}
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for test in model_vs_model:
        (_, seed_a), (_, seed_b) = split_seed(test["a"]), split_seed(test["b"])
        va, vb = variant_of.get(test["a"]), variant_of.get(test["b"])
        if seed_a is None or seed_a != seed_b or (va == baseline) == (vb == baseline):
            continue
        flip = va == baseline
        variant = vb if flip else va
        entry = {"seed": seed_a, "variant_model": test["b"] if flip else test["a"],
                 "baseline_model": test["a"] if flip else test["b"], **_oriented(test, flip)}
        groups.setdefault((test["figure"], test["method"], variant), []).append(entry)
    comparisons = []
    for (figure, method, variant), per_seed in groups.items():
        per_seed.sort(key=lambda s: s["seed"])
        call, reason = _call(per_seed, alpha, min_seeds)
        comparisons.append({"figure": figure, "method": method, "variant": variant, "baseline": baseline,
                            "seeds": [s["seed"] for s in per_seed], "per_seed": per_seed,
                            "difference": spread([s["difference"] for s in per_seed], 6),
                            "call": call, "reason": reason})
    return {
        "protocol": {
            "baseline": baseline, "alpha": alpha, "min_seeds": min_seeds,
            "pairs": "each variant's model against the baseline's model of the same training seed, on the images "
                     "both count (paired_tests: model_vs_model)",
            "difference": "variant - baseline (positive: the variant's map scores higher; higher is better for "
                          "MoRF-AOC and box PR-AUC)",
            "rule": f"'higher'/'lower' only when at least {min_seeds} seeds agree in direction and, in every seed, "
                    f"the paired bootstrap and the Wilcoxon signed-rank test (Holm-corrected) give p < {alpha}; "
                    "otherwise 'not shown'",
        },
        "comparisons": comparisons,
    }


def quality_across_seeds(quality: dict[str, Any]) -> dict[str, Any]:
    """``benchmark_quality(...)["per_model"]`` as mean ± sd over the seeds of each ``<name>-seed<k>``.

    Returns:
        ``{name: {figure: {key: {"mean", "sd", "min", "max"}, "best_attention": [per seed],
        "meets_goals": [per seed], "adjacent_separated": [per seed], "adjacent_pairs": [per seed]},
        "seeds": [...]}}`` for every name with at least one seed (the adjacent counts are ``None``
        where the quality was computed without method tests).
    """
    groups: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for model, entry in quality.get("per_model", {}).items():
        base, seed = split_seed(model)
        if seed is not None:
            groups.setdefault(base, []).append((seed, entry))
    out: dict[str, Any] = {}
    for base, members in groups.items():
        members.sort(key=lambda m: m[0])
        out[base] = {"seeds": [s for s, _ in members]}
        for figure in members[0][1]:
            figures = [e[figure] for _, e in members]
            out[base][figure] = {**{k: spread([f.get(k) for f in figures]) for k in _QUALITY_KEYS},
                                 "best_attention": [f.get("best_attention") for f in figures],
                                 "meets_goals": [f.get("meets_goals") for f in figures],
                                 **{key: [(f.get("adjacent") or {}).get(k) for f in figures]
                                    for key, k in (("adjacent_separated", "separated"),
                                                   ("adjacent_pairs", "n_pairs"))}}
    return out
