"""Row intervals, paired tests, benchmark headroom and seed spread."""

from __future__ import annotations

import math

import numpy as np
import pytest

from infsa_viz.data import LabelledImages
from infsa_viz.evaluation import EvalSettings, evaluate, per_image_figures
from infsa_viz.stats import benchmark_quality, paired_tests, seed_summary, with_comparisons
from infsa_viz.stats.comparisons import adjacent_methods, split_seed
from infsa_viz.model import VisionTransformer
from tests.evaluation.helpers import image_record as _record


def test_per_image_figures_follow_the_row_selection():
    records = [_record("m", "a", 0, morf=10.0, pr=0.5), _record("m", "a", 1, morf=20.0, pr=math.nan, predicted=1)]
    values = per_image_figures(records, select="correct")
    assert values["morf_aoc"].tolist()[0] == 10.0 and math.isnan(values["morf_aoc"][1])  # image 1 misclassified
    assert per_image_figures(records, select="all")["morf_aoc"].tolist() == [10.0, 20.0]
    assert values["accuracy"].tolist() == [1.0, 0.0]
    assert values["box_pr_auc"][0] == 0.5 and math.isnan(values["box_pr_auc"][1])


def test_rows_carry_intervals_that_match_their_figures(make_config):
    model = VisionTransformer(make_config("softmax")).eval()
    rng = np.random.default_rng(2)
    n = 12
    data = LabelledImages(images=rng.integers(0, 256, (n, 16, 16), dtype=np.uint8), labels=rng.integers(0, 3, n),
                          boxes=[np.array([[0, 0, 8, 8]])] * n, negative_boxes=[np.array([[8, 8, 16, 16]])] * n)
    result = with_comparisons(evaluate([("m-seed1", model), ("m-seed2", model)], ["attention", "random", "box_oracle"],
                                       data, protocol=EvalSettings(steps=4, select="all", chunk=5)))
    for row in result.rows:
        records = [r for r in result.records if (r.model, r.method) == (row["model"], row["method"])]
        values = per_image_figures(records, select="all")
        for figure in ("morf_aoc", "box_pr_auc", "accuracy", "aopc"):
            finite = values[figure][np.isfinite(values[figure])]
            assert row[figure] == pytest.approx(finite.mean(), abs=1e-3), figure
            low, high = row[f"{figure}_ci"]
            assert low <= row[figure] + 1e-3 and row[figure] - 1e-3 <= high
        assert row["pointing_game_ci"] is not None and row["protocol"]["intervals"]["n_resamples"] == 2000
    oracle = [r for r in result.rows if r["method"] == "box_oracle"]
    assert all(r["box_roc_auc"] == 1.0 for r in oracle)  # the box lies on the patch grid
    assert list(result.comparisons) == ["paired_tests", "benchmark_quality", "seeds", "verdict"]
    quality = result.comparisons["benchmark_quality"]["per_model"]["m-seed1"]["box_pr_auc"]
    assert quality["oracle_minus_random"] > 0 and quality["best_attention"] == "attention"
    seeds = result.comparisons["seeds"]
    assert {s["method"] for s in seeds} == {"attention", "random", "box_oracle"} and seeds[0]["seeds"] == [1, 2]
    tests = result.comparisons["paired_tests"]
    assert len(tests["method_vs_method"]) == 2 * 2 * 3  # figures x models x pairs of 3 methods
    assert tests["model_vs_model"] == []  # two seeds of one model: not paired (the seed spread is in `seeds`)
    alone = with_comparisons(evaluate([("m", model), ("m-copy", model)], ["attention"], data,
                                      protocol=EvalSettings(steps=4, select="all", chunk=5))).comparisons["paired_tests"]
    same = [t for t in alone["model_vs_model"] if t["method"] == "attention"]  # the same model twice
    assert len(same) == 2 and all(t["mean_difference"] == 0.0 and t["p_wilcoxon"] == 1.0 for t in same)


def test_paired_tests_find_a_shifted_method_and_align_models_by_image():
    rng = np.random.default_rng(0)
    base = rng.normal(50.0, 10.0, 80)
    records = []
    for model, shift in (("x", 0.0), ("y", 3.0)):
        for i in rng.permutation(80):  # records of each model in their own order
            records.append(_record(model, "a", int(i), morf=base[i] + shift + rng.normal(0, 1), pr=0.5))
            records.append(_record(model, "b", int(i), morf=base[i] + shift - 5.0 + rng.normal(0, 1), pr=0.5))
    out = paired_tests(records, select="all", n_resamples=500)
    ab = [t for t in out["method_vs_method"] if t["figure"] == "morf_aoc"]
    assert len(ab) == 2
    for t in ab:
        assert t["n_pairs"] == 80 and t["difference_ci"][0] < 5.0 < t["difference_ci"][1]
        assert t["p_wilcoxon"] < 1e-6 and t["effect_size"]["rank_biserial"] > 0.9
        assert t["p_wilcoxon_holm"] >= t["p_wilcoxon"] and t["family_size"] == 1
    xy = next(t for t in out["model_vs_model"] if t["figure"] == "morf_aoc" and t["method"] == "a")
    assert (xy["a"], xy["b"]) == ("x", "y")
    assert xy["difference_ci"][0] < -3.0 < xy["difference_ci"][1]  # paired by image, so the shift is found
    ties = [t for t in out["method_vs_method"] if t["figure"] == "box_pr_auc"]
    assert all(t["p_wilcoxon"] == 1.0 and t["n_zero_differences"] == 80 for t in ties)


def test_benchmark_quality_in_points():
    rows = [{"model": "m", "method": "greedy_deletion", "morf_aoc": 90.0, "box_pr_auc": 0.3},  # MoRF's ceiling
            {"model": "m", "method": "random", "morf_aoc": 40.0, "box_pr_auc": 0.1},
            {"model": "m", "method": "attention", "morf_aoc": 80.0, "box_pr_auc": 0.5},
            {"model": "m", "method": "visits", "morf_aoc": 82.0, "box_pr_auc": 0.4},
            {"model": "m", "method": "saliency", "morf_aoc": 60.0, "box_pr_auc": 0.6},
            {"model": "m", "method": "box_oracle", "morf_aoc": 70.0, "box_pr_auc": 0.9}]  # box PR-AUC's ceiling
    q = benchmark_quality(rows)["per_model"]["m"]
    assert q["morf_aoc"]["oracle_minus_random"] == 50.0
    assert q["morf_aoc"]["best_attention"] == "visits" and q["morf_aoc"]["oracle_minus_best_attention"] == 8.0
    assert q["morf_aoc"]["method_spread"] == 22.0 and q["morf_aoc"]["meets_goals"] is True
    assert q["box_pr_auc"]["oracle_minus_best_attention"] == pytest.approx(40.0)
    assert q["box_pr_auc"]["best"] == "saliency" and q["box_pr_auc"]["method_spread"] == pytest.approx(20.0)
    missing = benchmark_quality(rows[2:])["per_model"]["m"]["morf_aoc"]
    assert missing["oracle_minus_random"] is None and missing["meets_goals"] is None


def test_adjacent_methods_rank_maps_and_read_their_paired_tests():
    rng = np.random.default_rng(3)
    base = rng.normal(60.0, 8.0, 120)
    shifts = {"attention": 0.0, "visits": -0.05, "rollout": -6.0, "random": -30.0, "box_oracle": 5.0}
    records = [_record("m", method, i, morf=base[i] + shift + rng.normal(0, 1), pr=0.5)
               for method, shift in shifts.items() for i in range(120)]
    tests = paired_tests(records, select="all", n_resamples=500)["method_vs_method"]
    rows = [{"model": "m", "method": method, "morf_aoc": float(np.mean(base + shift)), "box_pr_auc": 0.5}
            for method, shift in shifts.items()]
    morf = adjacent_methods(rows, tests)["m"]["morf_aoc"]
    assert morf["ranking"] == ["attention", "visits", "rollout"]  # random and the oracle are not ranked
    close, far = morf["pairs"]
    assert (close["higher"], close["lower"], close["separated"]) == ("attention", "visits", False)
    assert (far["higher"], far["lower"], far["separated"]) == ("visits", "rollout", True)
    assert far["difference"] == pytest.approx(5.95) and far["p_wilcoxon_holm"] < 1e-6
    assert (morf["separated"], morf["n_pairs"]) == (1, 2)
    tied = adjacent_methods(rows, tests)["m"]["box_pr_auc"]  # every map scores 0.5 on every image
    assert tied["separated"] == 0 and tied["n_pairs"] == 2
    untested = adjacent_methods(rows, [])["m"]["morf_aoc"]["pairs"]
    assert all(p["separated"] is None for p in untested)
    quality = benchmark_quality(rows, tests)["per_model"]["m"]["morf_aoc"]
    assert quality["adjacent"] == morf and "adjacent" not in benchmark_quality(rows)["per_model"]["m"]["morf_aoc"]


def test_seed_summary_mean_and_spread():
    rows = [{"model": f"runs/pure-seed{s}", "variant": "pure_infsa", "method": "visits", "accuracy": a,
             "morf_aoc": m, "morf_aoc_ci": [m - 1, m + 1], "box_pr_auc": None, "pointing_game": None}
            for s, a, m in ((2, 0.8, 70.0), (1, 0.7, 74.0), (3, 0.9, 72.0))]
    rows.append({"model": "runs/other", "method": "visits", "morf_aoc": 1.0})
    (entry,) = seed_summary(rows)
    assert entry["model"] == "runs/pure" and entry["seeds"] == [1, 2, 3]
    morf = entry["figures"]["morf_aoc"]
    assert morf["mean"] == 72.0 and morf["sd"] == pytest.approx(2.0) and (morf["min"], morf["max"]) == (70.0, 74.0)
    assert morf["per_seed"] == [74.0, 70.0, 72.0] and morf["per_seed_ci"][0] == [73.0, 75.0]
    assert entry["figures"]["box_pr_auc"]["mean"] is None
    assert split_seed("a/b-seed12/") == ("a/b", 12) and split_seed("seedless") == ("seedless", None)
