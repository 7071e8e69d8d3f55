"""Is one variant's map better than the baseline's? A call about variants, with the trained model as the unit.

An evaluation of models named ``<name>-seed<k>`` (several variants trained with the same seeds,
e.g. by ``scripts/train_seeds.py``) pairs each InfSA model with the softmax model **of the same
seed and the same folder**: the models of one folder form one group (e.g. one training setting
of a benchmark, ``models/seeds/<benchmark>/<setting>/``) and are compared only with each other.
For every group, figure, explanation map and variant, :func:`variant_verdict`:

1. matches the images: only those **both** models of the seed classify correctly (and where the
   figure is defined for both), so a weaker classifier is not judged on other images; the
   count is reported per seed, beside each model's accuracy, and a comparison whose accuracies
   differ by more than :data:`ACCURACY_GAP` points is flagged;
2. takes one difference per seed: the mean over those images of ``variant − baseline``;
3. tests the seed differences (:func:`~infsa_viz.stats.seed_stats.seed_t_test`,
   ``S − 1`` degrees of freedom) and gives their hierarchical-bootstrap interval (seeds, then
   images within each seed; :func:`~infsa_viz.stats.seed_stats.hierarchical_bootstrap`) and
   t-interval;
4. adjusts the seed-level p-values by Holm across the whole family of ``m`` comparisons (groups ×
   figures × maps × variants) and calls ``"higher"`` / ``"lower"`` (:func:`~.seed_stats.call_rule`) only where
   the Holm-adjusted p is below ``alpha`` with at least ``min_seeds`` seeds; ``"not shown"``
   otherwise, with the reason;
5. says what the test can see: the simultaneous t-interval at level ``1 − alpha / m``
   (Bonferroni; it excludes 0 only where Holm's first step rejects, so an interval that excludes
   0 always comes with a call) and the detectable difference, the smallest true difference the
   test calls with 80 % power at ``alpha / m`` given the measured SD of the seed differences
   (:func:`~infsa_viz.stats.seed_stats.detectable_difference`; a lower bound on Holm's power,
   so an upper bound on the difference Holm needs);
6. repeats the test under each image set (:mod:`.image_sets`: matched, each model's own correct
   images, all images), so the report says whether a call depends on which images are averaged.

Each seed also keeps its image-level paired tests (paired bootstrap and Wilcoxon signed-rank on
the matched images, Holm within the seed): statements about **those two trained models**, never
the basis of a call. The calibration of this rule by simulation is
``scripts/verdict_calibration.py`` (:mod:`.calibration`).

:func:`quality_across_seeds` gives :func:`~infsa_viz.stats.comparisons.benchmark_quality`'s
headroom figures as mean ± sd across the seeds of each model.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..evaluation.records import ImageRecord, per_image_figures
from ..metrics.registry import FIGURES
from ..model.attention import DEFAULT_VARIANT, VARIANTS
from .image_sets import IMAGE_SETS, image_set_calls, seed_set_means
from .paired import compare_paired, holm, significant
from .seed_stats import ALPHA, MIN_SEEDS, call_rule, detectable_difference, hierarchical_bootstrap, seed_t_test

__all__ = ["ACCURACY_GAP", "DETECTION_POWER", "PAIRED_FIGURES", "PAPER_FIGURES", "SAME_MAP_TOLERANCE", "call_family",
           "completed_verdict", "detection", "identical_maps", "model_group", "model_ignorant_controls",
           "quality_across_seeds", "split_seed", "spread", "variant_verdict", "verdict_methods"]

#: The paper's figures (Roffo & Palmer, arXiv 2603.00175; ImageNet-scale models, protocol not
#: published, so never like for like with ours), in %, per variant.
PAPER_FIGURES: dict[str, dict[str, float]] = {
    "softmax": {"morf_aoc": 42.6, "box_roc_auc": 53.8, "box_pr_auc": 56.2},
    "pure_infsa": {"morf_aoc": 71.7, "box_roc_auc": 77.3, "box_pr_auc": 72.4},
    "linear_infsa": {"morf_aoc": 76.0, "box_roc_auc": 75.9, "box_pr_auc": 76.1},
}
#: Figures compared across models and called (higher is better for all): faithfulness by evidence
#: (the evidence mass accuracy: the map's area-normalised mass over the objects against their measured
#: importance, the figure the controlled meta-evaluation trusts for every model), MoRF-AOC, and
#: plausibility (box PR-AUC).
PAIRED_FIGURES = ("evidence_mass_accuracy", "morf_aoc", "box_pr_auc")
#: Accuracy difference (points) above which a comparison is flagged.
ACCURACY_GAP = 5.0
#: The power of a comparison's detectable difference.
DETECTION_POWER = 0.8
#: Relative tolerance under which two maps of one variant are one map (:func:`identical_maps`).
SAME_MAP_TOLERANCE = 1e-4  # a hundredth of a point; distinct maps differ by far more (rollout vs attention: >= 1)
SAME_MAP_RULE = (f"each distinct map once: two maps of one variant are one map when the variant models' mean of "
                 f"every figure agrees within {SAME_MAP_TOLERANCE:g} x max(1, |mean|) on every seed (Linear-InfSA's "
                 "attention, visits and Perron maps: a rank-one operator); such a map is compared once, as the first "
                 "of its kind, and counts once in the Holm family")
_QUALITY_KEYS = ("oracle", "random", "best_attention_value", "oracle_minus_random", "oracle_minus_best_attention",
                 "method_spread")
_SEED = re.compile(r"^(?P<base>.+)-seed(?P<seed>\d+)$")


def split_seed(model: str) -> tuple[str, int | None]:
    """``"runs/hard/pure_infsa-seed2"`` → ``("runs/hard/pure_infsa", 2)``; no suffix → ``(model, None)``."""
    match = _SEED.match(model.rstrip("/"))
    return (match["base"], int(match["seed"])) if match else (model, None)


def model_group(model: str) -> str:
    """The group of a seed model: its folder (``"models/seeds/cued-digits/p0.9/softmax-seed1"`` →
    ``"models/seeds/cued-digits/p0.9"``; ``""`` for a bare name)."""
    return split_seed(model)[0].rpartition("/")[0]


def spread(values: Sequence[float | None], digits: int = 4) -> dict[str, Any]:
    """Mean, sample sd (ddof 1), min and max of the finite ``values`` (``None`` where undefined)."""
    finite = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    if not finite.size:
        return {"mean": None, "sd": None, "min": None, "max": None}
    return {"mean": round(float(finite.mean()), digits),
            "sd": round(float(finite.std(ddof=1)), digits) if finite.size > 1 else None,
            "min": round(float(finite.min()), digits), "max": round(float(finite.max()), digits)}


def verdict_methods(methods: Sequence[str]) -> list[str]:
    """The explanation maps among ``methods``: neither a reference map (the oracles, a benchmark's
    ceilings) nor the random map (its floor), told apart by their role; those are not candidates."""
    from ..maps import METHODS

    return [m for m in methods if m in METHODS and METHODS[m].role == "explanation"]


def _r(value: float, digits: int = 6) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), digits)


def _tables(records: Sequence[ImageRecord], figures: Sequence[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (model, method): image indices, the correct flags and each figure's per-image values."""
    groups: dict[tuple[str, str], list[ImageRecord]] = {}
    for record in records:
        groups.setdefault((record.model, record.method), []).append(record)
    out = {}
    for key, group in groups.items():
        group = sorted(group, key=lambda r: r.index)
        values = per_image_figures(group, select="all")
        out[key] = {"index": np.array([r.index for r in group]), "correct": np.array([r.correct is True for r in group]),
                    "variant": group[0].variant,
                    **{f: values.get(f, np.full(len(group), np.nan)) for f in figures}}  # not measured: nan
    return out


def _pairs(tables: dict[tuple[str, str], dict[str, Any]],
           baseline: str) -> dict[tuple[str, str], dict[int, tuple[str, str]]]:
    """``{(group, variant): {seed: (variant model, baseline model)}}`` over the seeds both variants of a
    group (:func:`model_group`) were trained with."""
    by_seed: dict[tuple[str, str, int], str] = {}
    for (model, method), table in tables.items():
        variant, (_, seed), group = table["variant"], split_seed(model), model_group(model)
        if seed is None:
            continue
        known = by_seed.setdefault((group, variant, seed), model)
        if known != model:
            raise ValueError(f"models {known!r} and {model!r} are both {variant} seed {seed} in folder {group!r}; "
                             "expected one model per variant and seed in a group")
    out: dict[tuple[str, str], dict[int, tuple[str, str]]] = {}
    for (group, variant, seed), model in sorted(by_seed.items(), key=lambda kv: (kv[0][0], _order(kv[0][1]), kv[0][2])):
        if variant != baseline and (group, baseline, seed) in by_seed:
            out.setdefault((group, variant), {})[seed] = (model, by_seed[group, baseline, seed])
    return out


def _order(variant: str) -> int:
    return VARIANTS.index(variant) if variant in VARIANTS else len(VARIANTS)


def _accuracy(tables: dict[tuple[str, str], dict[str, Any]], model: str) -> float | None:
    table = next((t for (m, _), t in tables.items() if m == model), None)
    return None if table is None or not table["correct"].size else float(table["correct"].mean())


def _seed_entry(v: dict[str, Any], b: dict[str, Any], figure: str,
                images: str) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """The two models' values on the verdict's images (``"matched"``: both correct, figure defined for
    both; ``"all"``: defined for both), and both means under every image set
    (:func:`~.image_sets.seed_set_means`)."""
    shared, iv, ib = np.intersect1d(v["index"], b["index"], return_indices=True)
    x, y = v[figure][iv], b[figure][ib]
    keep = np.isfinite(x) & np.isfinite(y)
    if images == "matched":
        keep &= v["correct"][iv] & b["correct"][ib]
    return x[keep], y[keep], seed_set_means(x, y, v["correct"][iv], b["correct"][ib])


def _comparison(figure: str, method: str, pair: tuple[str, str], seeds: dict[int, tuple[str, str]],
                tables: dict[tuple[str, str], dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
    group, variant = pair
    per_seed, groups = [], []
    for seed, (vm, bm) in seeds.items():
        if (vm, method) not in tables or (bm, method) not in tables:
            continue
        x, y, sets = _seed_entry(tables[vm, method], tables[bm, method], figure, options["images"])
        entry: dict[str, Any] = {"seed": seed, "variant_model": vm, "baseline_model": bm, "n_images": int(x.size),
                                 "variant_accuracy": _r(_accuracy(tables, vm)),
                                 "baseline_accuracy": _r(_accuracy(tables, bm)), "image_sets": sets}
        if x.size:
            groups.append(x - y)
            entry.update(variant_mean=_r(x.mean()), baseline_mean=_r(y.mean()), difference=_r((x - y).mean()))
            if options["image_level"]:
                test = compare_paired(x, y, n_resamples=options["n_resamples"], seed=options["seed"])
                entry["image_level"] = {k: v for k, v in test.to_dict().items() if k not in ("mean_a", "mean_b")}
        per_seed.append(entry)
    out: dict[str, Any] = {"group": group, "figure": figure, "method": method, "variant": variant,
                           "baseline": options["baseline"], "seeds": [s["seed"] for s in per_seed if s["n_images"]], "n_seeds": len(groups),
                           "per_seed": per_seed}
    accuracies = [(s["variant_accuracy"], s["baseline_accuracy"]) for s in per_seed]
    gaps = [100.0 * (a - b) for a, b in accuracies if a is not None and b is not None]
    out["accuracy_gap"] = _r(float(np.mean(gaps)), 3) if gaps else None
    out["accuracy_flag"] = bool(gaps) and abs(float(np.mean(gaps))) > options["accuracy_gap"]
    out["matched_images"] = {"per_seed": [s["n_images"] for s in per_seed],
                             "min": min((s["n_images"] for s in per_seed), default=0)}
    if not groups:
        out.update(difference=None, ci=None, ci_t=None, sd_seeds=None, t=None, p=None)
        return out
    test = seed_t_test([g.mean() for g in groups])
    ci = hierarchical_bootstrap(groups, n_resamples=options["n_resamples"], seed=options["seed"])
    out.update(difference=_r(test.mean), ci=[_r(ci.low), _r(ci.high)],
               ci_t=None if test.n < 2 else [_r(test.low), _r(test.high)], sd_seeds=_r(test.sd), t=_r(test.t, 4),
               p=significant(test.p_value))
    return out


def _reason(c: dict[str, Any], alpha: float, min_seeds: int, images: str = "matched") -> str:
    if c["n_seeds"] < min_seeds:
        why = f"{c['n_seeds']} seed(s) with matched images; a call needs {min_seeds}"
    elif c["call"] == "not shown":
        why = f"seed-level t-test p = {c['p']:.3g}, Holm-adjusted {c['p_holm']:.3g} >= {alpha}"
    else:
        why = (f"mean of {c['n_seeds']} seed differences {c['call']} than 0: t-test p = {c['p']:.3g}, "
               f"Holm-adjusted {c['p_holm']:.3g} < {alpha}")
    if c["accuracy_flag"]:
        why += (f"; accuracies differ by {c['accuracy_gap']:+.1f} points (> {ACCURACY_GAP:g}): compared on "
                + ("the images both models classify correctly" if images == "matched" else "every image"))
    return why


def detection(comparisons: Sequence[dict[str, Any]], *, alpha: float = ALPHA, power: float = DETECTION_POWER) -> None:
    """Add what each comparison's test can see, inside its family of ``m`` comparisons with a p-value.

    From the comparison's seed differences (``per_seed[*]["difference"]``): ``family`` (``m``),
    ``ci_simultaneous`` (the t-interval at level ``1 − alpha / m``: Bonferroni, so the ``m``
    intervals cover their true differences together with probability at least ``1 − alpha``; one
    that excludes 0 means Holm's first step, hence Holm, calls it) and ``detectable_difference``
    (:func:`~.seed_stats.detectable_difference` at ``alpha / m`` and ``power``, with the measured SD
    of the seed differences; ``None`` with fewer than 2 seeds).
    """
    m = sum(c.get("p") is not None for c in comparisons)
    for c in comparisons:
        differences = [s["difference"] for s in c["per_seed"] if s.get("difference") is not None]
        c.update(family=m, ci_simultaneous=None, detectable_difference=None)
        if len(differences) < 2 or m == 0:
            continue
        test = seed_t_test(differences, confidence=1.0 - alpha / m)
        c.update(ci_simultaneous=[_r(test.low), _r(test.high)],
                 detectable_difference=_r(detectable_difference(test.sd, test.n, alpha=alpha / m, power=power)))


def _holm_image_level(comparisons: list[dict[str, Any]]) -> None:
    """Holm within each seed across figures × maps × variants, for both image-level tests."""
    by_seed: dict[int, list[dict[str, Any]]] = {}
    for c in comparisons:
        for s in c["per_seed"]:
            if "image_level" in s:
                by_seed.setdefault(s["seed"], []).append(s["image_level"])
    for tests in by_seed.values():
        for key in ("p_bootstrap", "p_wilcoxon"):
            raw = np.array([math.nan if t[key] is None else t[key] for t in tests], dtype=np.float64)
            for t, adjusted in zip(tests, holm(raw), strict=True):
                t[f"{key}_holm"] = significant(adjusted)


def variant_verdict(records: Sequence[ImageRecord], *, figures: Sequence[str] = PAIRED_FIGURES,
                    methods: Sequence[str] | None = None, baseline: str = DEFAULT_VARIANT, alpha: float = ALPHA,
                    min_seeds: int = MIN_SEEDS, accuracy_gap: float = ACCURACY_GAP, n_resamples: int = 2000,
                    seed: int = 0, image_level: bool = True, images: str = "matched") -> dict[str, Any]:
    """Each variant against ``baseline`` per figure and map, across the seeds both were trained with.

    Args:
        records: the evaluation's per-image records; models named ``<name>-seed<k>`` (one model per
            variant, seed and folder), others are ignored.
        figures: per-image table figures of the metric registry
            (:data:`~infsa_viz.metrics.registry.FIGURES`).
            Default MoRF-AOC and box PR-AUC.
        methods: maps to compare (default every explanation map of the records,
            :func:`verdict_methods`).
        baseline: the variant the others are compared with (default softmax).
        alpha: family-wise level of the calls (Holm over all comparisons).
        min_seeds: seeds a call needs.
        accuracy_gap: accuracy difference in points above which a comparison is flagged.
        n_resamples, seed: of the hierarchical bootstrap and the image-level paired bootstrap.
        image_level: also run each seed's image-level paired tests (default ``True``).
        images: the image set the call reads: ``"matched"`` (default: the images both models
            classify correctly) or ``"all"`` (every image where the figure is defined for both:
            for a benchmark whose explained class is the prediction and whose informative images
            are those a model gets "wrong", such as a cue-conflicting image decided by the cue).

    Returns:
        ``{"protocol", "comparisons"}``; each comparison holds ``group`` (:func:`model_group`),
        ``figure``, ``method``, ``variant``, ``baseline``, ``seeds``, ``n_seeds``, ``difference``
        (mean of the seed differences, ``variant − baseline`` in the figure's units), ``ci``
        (hierarchical bootstrap, 95 %), ``ci_t`` (t, 95 %), ``sd_seeds``, ``t``, ``p`` and
        ``p_holm`` (seed level), ``call``, ``reason``, ``family``, ``ci_simultaneous`` and
        ``detectable_difference`` (:func:`detection`), ``image_sets`` (:mod:`.image_sets`),
        ``accuracy_gap`` (points, mean over seeds), ``accuracy_flag``, ``matched_images`` and
        ``per_seed`` (models, accuracies, matched images, both means, the difference, its
        ``image_sets`` means and its ``image_level`` tests).

    Raises:
        ValueError: a bad ``alpha`` or figure, or two models of one variant and seed in one folder.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha={alpha!r} must lie strictly between 0 and 1")
    if images not in ("matched", "all"):
        raise ValueError(f"images={images!r} is invalid; expected 'matched' or 'all'")
    known = [name for name, f in FIGURES.items() if f.table]
    for figure in figures:
        if figure not in known:
            raise ValueError(f"figures contains {figure!r}; expected table figures of the metric registry {known}")
    figures = [f for f in figures if any(FIGURES[f].key in r.figures for r in records)]  # measured ones only
    tables = _tables(records, figures)
    present = list(dict.fromkeys(method for _, method in tables))
    chosen = verdict_methods(present) if methods is None else [m for m in methods if m in present]
    options = {"baseline": baseline, "n_resamples": n_resamples, "seed": seed, "image_level": image_level,
               "accuracy_gap": accuracy_gap, "images": images}
    comparisons = [_comparison(figure, method, pair, seeds, tables, options)
                   for pair, seeds in _pairs(tables, baseline).items() for method in chosen for figure in figures]
    comparisons, same = call_family(comparisons, alpha=alpha, min_seeds=min_seeds, images=images)
    return {"protocol": {
        "unit": "the trained model: one difference per training seed, variant - baseline on the same images",
        "baseline": baseline, "alpha": alpha, "min_seeds": min_seeds, "figures": list(figures), "methods": chosen,
        "groups": "models are paired within their folder (model_group): one group per folder",
        "images": ("per seed, the images both models classify correctly and where the figure is defined for both "
                   if images == "matched" else "per seed, every image where the figure is defined for both models "
                   "(misclassified ones included) ") + "(matched_images); accuracies beside, flagged when they differ "
                  f"by more than {accuracy_gap:g} points",
        "image_set": images,
        "image_sets": {**IMAGE_SETS, "test": "image_sets: the same seed-level test, Holm across the family and call "
                                             "rule on each set's seed differences"},
        "difference": "mean over seeds of each seed's mean difference (positive: the variant's map scores higher)",
        "interval": f"ci: hierarchical percentile bootstrap (resample seeds, then images within each seed), 95 %, "
                    f"{n_resamples} resamples, seed {seed}; ci_t: t-interval of the seed differences, 95 %; "
                    "ci_simultaneous: t-interval at 1 - alpha/family (Bonferroni: all hold together with probability "
                    ">= 1 - alpha; one that excludes 0 is called by Holm)",
        "detectable_difference": f"the smallest true difference the t-test at alpha/family calls with "
                                 f"{DETECTION_POWER:.0%} power (noncentral t, df = seeds - 1) at the measured SD of "
                                 "the seed differences: Holm's first (Bonferroni) step, a lower bound on Holm's power, "
                                 "so an upper bound on the difference Holm needs",
        "test": "one-sample t-test of the seed differences (df = seeds - 1), two-sided",
        "correction": "Holm (1979) across every comparison of this verdict (groups x figures x distinct maps x "
                      "variants)",
        "identical_maps": same,
        "like_with_like": SAME_MAP_RULE,
        "rule": f"'higher'/'lower' only when at least {min_seeds} seeds and the Holm-adjusted seed-level p < "
                f"{alpha}; otherwise 'not shown'",
        "image_level": "per seed: paired bootstrap and Wilcoxon signed-rank on the matched images, Holm within the "
                       "seed; statements about those two trained models, not about the variants",
    }, "comparisons": comparisons}


def identical_maps(comparisons: Sequence[dict[str, Any]], *,
                   tolerance: float = SAME_MAP_TOLERANCE) -> list[dict[str, str]]:
    """The maps of a variant that are one map: ``[{"group", "variant", "method", "same_as"}]``.

    Two maps of one variant (in one group) are the same map when the variant models' mean of every
    figure agrees within ``tolerance × max(1, |mean|)`` on every seed (:data:`SAME_MAP_RULE`); each
    map is compared with the earlier distinct maps of the comparisons' order, so ``same_as`` is the
    first of its kind (Linear-InfSA's ``visits`` and ``perron`` are its ``attention``)."""
    means: dict[tuple[str, str, str], dict[tuple[str, int], float | None]] = {}
    for c in comparisons:
        entry = means.setdefault((c["group"], c["variant"], c["method"]), {})
        for s in c["per_seed"]:
            entry[c["figure"], s["seed"]] = s.get("variant_mean")

    def same(a: dict[tuple[str, int], float | None], b: dict[tuple[str, int], float | None]) -> bool:
        return bool(a) and a.keys() == b.keys() and all(
            x is not None and b[k] is not None and abs(x - b[k]) <= tolerance * max(1.0, abs(x), abs(b[k]))
            for k, x in a.items())

    out: list[dict[str, str]] = []
    distinct: dict[tuple[str, str], list[str]] = {}
    for (group, variant, method), values in means.items():
        kept = distinct.setdefault((group, variant), [])
        first = next((m for m in kept if same(values, means[group, variant, m])), None)
        if first is None:
            kept.append(method)
        else:
            out.append({"group": group, "variant": variant, "method": method, "same_as": first})
    return out


def call_family(comparisons: Sequence[dict[str, Any]], *, alpha: float = ALPHA, min_seeds: int = MIN_SEEDS,
                images: str = "matched") -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The verdict's family and calls: each distinct map once (:func:`identical_maps`: a map that is
    another map of its variant is not compared again, so a rank-one operator's three identical maps
    neither count three times nor set one map against softmax's other maps), then Holm over the
    family, the call rule and its reason, :func:`detection`, the image-set calls and the seed-level
    image tests. Returns the kept comparisons (updated in place) and the identical maps left out."""
    same = identical_maps(comparisons)
    dropped = {(s["group"], s["variant"], s["method"]) for s in same}
    kept = [c for c in comparisons if (c["group"], c["variant"], c["method"]) not in dropped]
    raw = np.array([math.nan if c["p"] is None else c["p"] for c in kept], dtype=np.float64)
    adjusted = holm(raw) if kept else raw
    calls = call_rule([c["difference"] or 0.0 for c in kept], adjusted,
                      [c["n_seeds"] for c in kept], alpha=alpha, min_seeds=min_seeds)
    for c, p_holm, call in zip(kept, adjusted, calls, strict=True):
        c.update(p_holm=significant(float(p_holm)), call=str(call))
        c["reason"] = _reason(c, alpha, min_seeds, images)
    detection(kept, alpha=alpha)
    image_set_calls(kept, alpha=alpha, min_seeds=min_seeds)
    _holm_image_level(kept)
    return kept, same


def completed_verdict(report: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None, list[dict[str, str]]]:
    """A stored report's seed-level comparisons with every field of the current verdict, a note on what a
    report written before them lacks, and the identical maps left out of its family.

    The family is formed again by :func:`call_family` (each distinct map once; Holm, calls, ``family``,
    ``ci_simultaneous`` and ``detectable_difference`` recomputed from the stored seed differences and
    p-values). Image sets a report did not store come, where they can, from its rows (each model's own
    row mean: ``own_correct`` for a figure averaged over the correctly classified images, ``all`` for one
    averaged over every image where it is defined). ``scripts/verdict.py`` reads every benchmark's
    report through it.

    Args:
        report: an evaluation report (:func:`~infsa_viz.evaluation.writer.read_report`) with its
            ``verdict`` section, ``results`` rows and ``protocol``; it is not changed.

    Returns:
        ``(comparisons, note, identical_maps)``: the distinct comparisons holding a Holm-adjusted
        p-value, ``None`` or a sentence on what could not be recomputed, and :func:`call_family`'s
        identical maps.
    """
    protocol = report.get("verdict", {}).get("protocol", {})
    comparisons = copy.deepcopy([c for c in report.get("verdict", {}).get("comparisons", []) if "p_holm" in c])
    if not comparisons:
        return comparisons, None, []
    note = None
    if not all("image_sets" in s for c in comparisons for s in c["per_seed"]):
        rows = {(r["model"], r["method"]): r for r in report["results"]}
        correct = report["protocol"].get("settings", {}).get("select") == "correct"
        for c in comparisons:
            name = "all" if FIGURES[c["figure"]].images == "all" else "own_correct" if correct else None
            for s in c["per_seed"]:
                v, b = (rows.get((m, c["method"]), {}).get(c["figure"]) for m in (s["variant_model"], s["baseline_model"]))
                s["image_sets"] = {"matched": {"difference": s.get("difference")}}
                if name and v is not None and b is not None:
                    s["image_sets"][name] = {"difference": v - b}
        note = ("the report predates the image-set means (issue #35): 'all' for the figures averaged over "
                "every image and 'own_correct' for those averaged over the correct images come from each "
                "model's row mean (its own images where the figure is defined); the other sets are not "
                "stored (the per-image scores of misclassified images are not in the report): rerun "
                "python scripts/verdict.py")
    kept, same = call_family(comparisons, alpha=protocol.get("alpha", 0.05), min_seeds=protocol.get("min_seeds", 3),
                             images=protocol.get("image_set", "matched"))
    return kept, note, [*protocol.get("identical_maps", []), *same]  # those the report's own verdict left out too


def model_ignorant_controls(results: Sequence[dict[str, Any]], scales: dict[str, float]) -> list[dict[str, Any]]:
    """Does each explanation map beat the model-ignorant controls (the edge map, the intensity: maps that
    read only the image, role ``"model_ignorant"``) on each figure?

    For every group (:func:`model_group`), variant, explanation map, control and figure of ``scales``
    (figure -> points per unit): the report rows of each seed model give ``map − control`` on the same
    model; the mean over seeds (points) and its 95 % t-interval; ``beats`` only when the interval lies
    above 0 (no correction across rows: a map is labelled "does not beat" whenever the seeds do not show
    it ahead). Rows of a report without controls give nothing."""
    from ..maps import METHODS

    rows = {(r["model"], r["method"]): r for r in results}
    methods = list(dict.fromkeys(r["method"] for r in results))
    controls = [m for m in methods if m in METHODS and METHODS[m].role == "model_ignorant"]
    models: dict[tuple[str, str], list[str]] = {}
    for r in results:
        if split_seed(r["model"])[1] is not None and r["model"] not in models.get((model_group(r["model"]), r["variant"]), []):
            models.setdefault((model_group(r["model"]), r["variant"]), []).append(r["model"])
    out: list[dict[str, Any]] = []
    for (group, variant), members in models.items():
        for method, control, (figure, scale) in ((m, c, f) for m in verdict_methods(methods) for c in controls
                                                 for f in scales.items()):
            pairs = [(rows.get((m, method), {}).get(figure), rows.get((m, control), {}).get(figure)) for m in members]
            differences = [scale * (a - b) for a, b in pairs if a is not None and b is not None]
            if not differences:
                continue
            test = seed_t_test(differences)
            interval = None if test.n < 2 else [_r(test.low, 3), _r(test.high, 3)]
            out.append({"group": group, "variant": variant, "method": method, "control": control, "figure": figure,
                        "n_seeds": test.n, "difference": _r(test.mean, 3), "ci_t": interval,
                        "beats": interval is not None and interval[0] is not None and interval[0] > 0})
    return out


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
