"""The call across seeds: a known difference is called in its direction, a null one is not."""

from __future__ import annotations

import numpy as np
import pytest

from infsa_viz.evaluation import paired_tests, quality_across_seeds, variant_verdict
from infsa_viz.evaluation.verdict import split_seed
from tests.evaluation.helpers import image_record

SEEDS = (1, 2, 3)


def _seed_records(shift: dict[str, float], *, n: int = 60, seeds=SEEDS, noise: float = 1.0, rng_seed: int = 0,
                  seed_shift: dict[tuple[str, int], float] | None = None):
    """Records of softmax, pure_infsa and linear_infsa models per seed, one method: image values are
    ``base + shift[variant] + noise``, the base shared by the models of a seed (same images)."""
    rng = np.random.default_rng(rng_seed)
    records, rows = [], []
    for seed in seeds:
        base = rng.normal(60.0, 10.0, n)
        for variant in ("softmax", "pure_infsa", "linear_infsa"):
            model = f"runs/{variant}-seed{seed}"
            delta = shift.get(variant, 0.0) + (seed_shift or {}).get((variant, seed), 0.0)
            values = base + delta + rng.normal(0.0, noise, n)
            records += [image_record(model, "attention", i, morf=float(values[i]), pr=0.5, variant=variant)
                        for i in range(n)]
            rows.append({"model": model, "variant": variant, "method": "attention"})
    return records, rows


def _verdict(records, rows, **options):
    tests = paired_tests(records, select="all", figures=("morf_aoc",), n_resamples=400)
    return tests, variant_verdict(rows, tests["model_vs_model"], **options)


def _comparison(verdict, variant):
    (entry,) = [c for c in verdict["comparisons"] if c["variant"] == variant]
    return entry


def test_a_known_difference_is_called_and_a_null_one_is_not():
    records, rows = _seed_records({"pure_infsa": 4.0})
    tests, verdict = _verdict(records, rows)
    # only models of one seed are paired: 3 seeds x 3 variant pairs, no cross-seed pair
    pairs = [(t["a"], t["b"]) for t in tests["model_vs_model"]]
    assert len(pairs) == 9 and all(split_seed(a)[1] == split_seed(b)[1] for a, b in pairs)
    assert {c["variant"] for c in verdict["comparisons"]} == {"pure_infsa", "linear_infsa"}
    pure = _comparison(verdict, "pure_infsa")
    assert pure["call"] == "higher" and pure["seeds"] == [1, 2, 3] and pure["baseline"] == "softmax"
    for seed in pure["per_seed"]:  # variant - baseline, although softmax is the test's side a
        low, high = seed["difference_ci"]
        assert low < 4.0 < high and seed["variant_mean"] - seed["baseline_mean"] == pytest.approx(seed["difference"])
        assert seed["rank_biserial"] > 0.9 and seed["p_wilcoxon_holm"] < 0.05 and seed["n_pairs"] == 60
    assert pure["difference"]["mean"] == pytest.approx(4.0, abs=0.5) and pure["difference"]["sd"] < 0.5
    linear = _comparison(verdict, "linear_infsa")
    assert linear["call"] == "not shown" and linear["reason"]


def test_lower_and_the_reasons_for_no_call():
    records, rows = _seed_records({"linear_infsa": -3.0})
    assert _comparison(_verdict(records, rows)[1], "linear_infsa")["call"] == "lower"
    # one seed goes the other way: strong per-seed tests, but no call
    records, rows = _seed_records({}, seed_shift={("pure_infsa", 1): 4.0, ("pure_infsa", 2): 4.0,
                                                  ("pure_infsa", 3): -4.0})
    pure = _comparison(_verdict(records, rows)[1], "pure_infsa")
    assert pure["call"] == "not shown" and "disagree" in pure["reason"]
    # two seeds only: never a call
    records, rows = _seed_records({"pure_infsa": 4.0}, seeds=(1, 2))
    pure = _comparison(_verdict(records, rows)[1], "pure_infsa")
    assert pure["call"] == "not shown" and "2 seed(s)" in pure["reason"]
    assert _comparison(_verdict(records, rows, min_seeds=2)[1], "pure_infsa")["call"] == "higher"
    with pytest.raises(ValueError, match="alpha=1.5"):
        variant_verdict(rows, [], alpha=1.5)


def test_null_differences_are_rarely_called():
    """No variant differs from softmax: over 30 synthetic evaluations no call may exceed alpha = 5 %
    of the comparisons (the rule asks every seed's Holm-corrected tests, so it is far rarer)."""
    calls = 0
    for rep in range(30):
        records, rows = _seed_records({}, n=40, noise=3.0, rng_seed=100 + rep)
        calls += sum(c["call"] != "not shown" for c in _verdict(records, rows)[1]["comparisons"])
    assert calls <= 0.05 * 30 * 2


def test_quality_across_seeds():
    per_model = {f"runs/pure-seed{s}": {"morf_aoc": {"oracle_minus_random": 30.0 + s, "oracle_minus_best_attention": v,
                                                     "method_spread": 10.0, "best_attention": "visits",
                                                     "meets_goals": False}}
                 for s, v in ((1, 4.0), (2, 6.0), (3, 8.0))}
    per_model["runs/lone"] = per_model["runs/pure-seed1"]
    out = quality_across_seeds({"per_model": per_model})
    assert list(out) == ["runs/pure"] and out["runs/pure"]["seeds"] == [1, 2, 3]
    gap = out["runs/pure"]["morf_aoc"]["oracle_minus_best_attention"]
    assert gap == {"mean": 6.0, "sd": 2.0, "min": 4.0, "max": 8.0}
    assert out["runs/pure"]["morf_aoc"]["oracle_minus_random"]["mean"] == 32.0
    assert out["runs/pure"]["morf_aoc"]["best_attention"] == ["visits"] * 3
    assert out["runs/pure"]["morf_aoc"]["adjacent_separated"] == [None] * 3  # computed without method tests
    per_model["runs/pure-seed2"]["morf_aoc"]["adjacent"] = {"separated": 2, "n_pairs": 4}
    assert quality_across_seeds({"per_model": per_model})["runs/pure"]["morf_aoc"]["adjacent_pairs"] == [None, 4, None]
