"""The verdict across seeds: the trained model is the unit, images are matched, Holm over the family."""

from __future__ import annotations

import numpy as np
import pytest

from infsa_viz.stats import quality_across_seeds, variant_verdict
from infsa_viz.stats.image_sets import seed_set_means
from infsa_viz.stats.seed_stats import call_rule, seed_t_test
from infsa_viz.stats.verdict import model_group, split_seed, verdict_methods
from tests.evaluation.helpers import image_record

VARIANTS = ("softmax", "pure_infsa", "linear_infsa")


def _records(shift: dict[str, float], *, seeds=(1, 2, 3, 4, 5, 6), n: int = 60, noise: float = 1.0,
             seed_sd: float = 0.0, rng_seed: int = 0, wrong: dict[str, int] | None = None,
             methods=("attention",), folder: str = "runs"):
    """Records of one model per variant and seed: image values ``base + shift + seed effect + noise``
    (the base shared by the models of a seed); ``wrong[variant]`` first images misclassified."""
    rng = np.random.default_rng(rng_seed)
    records = []
    for seed in seeds:
        base = rng.normal(60.0, 10.0, n)
        for variant in VARIANTS:
            model = f"{folder}/{variant}-seed{seed}"
            misses = (wrong or {}).get(variant, 0)
            for method in methods:
                values = base + shift.get(variant, 0.0) + rng.normal(0.0, seed_sd) + rng.normal(0.0, noise, n)
                records += [image_record(model, method, i, morf=float(values[i]), pr=0.5, variant=variant,
                                         predicted=1 if i < misses else 0) for i in range(n)]
    return records


def _verdict(records, **options):
    return variant_verdict(records, figures=("morf_aoc",), n_resamples=400, **options)


def _comparison(verdict, variant, method="attention"):
    (entry,) = [c for c in verdict["comparisons"] if c["variant"] == variant and c["method"] == method]
    return entry


def test_a_known_difference_is_called_from_the_seed_differences():
    verdict = _verdict(_records({"pure_infsa": 4.0}, seed_sd=0.5, rng_seed=1))
    assert {c["variant"] for c in verdict["comparisons"]} == {"pure_infsa", "linear_infsa"}
    pure = _comparison(verdict, "pure_infsa")
    assert pure["call"] == "higher" and pure["seeds"] == [1, 2, 3, 4, 5, 6] and pure["baseline"] == "softmax"
    differences = [s["difference"] for s in pure["per_seed"]]
    test = seed_t_test(differences)  # the call's test is the t-test of the per-seed differences
    assert pure["difference"] == pytest.approx(test.mean) and pure["p"] == pytest.approx(test.p_value, rel=1e-5)
    # both intervals cover the truth here (coverage over many runs: scripts/verdict_calibration.py)
    assert pure["ci"][0] < 4.0 < pure["ci"][1] and pure["ci_t"][0] < 4.0 < pure["ci_t"][1]
    assert pure["p_holm"] >= pure["p"] and pure["matched_images"] == {"per_seed": [60] * 6, "min": 60}
    for seed in pure["per_seed"]:  # each seed: variant - baseline, and its image-level tests
        assert seed["variant_mean"] - seed["baseline_mean"] == pytest.approx(seed["difference"], abs=1e-5)
        assert seed["image_level"]["p_wilcoxon_holm"] < 0.05 and seed["image_level"]["n_pairs"] == 60
    linear = _comparison(verdict, "linear_infsa")
    assert linear["call"] == "not shown" and "Holm-adjusted" in linear["reason"]


def test_strong_image_level_tests_do_not_make_a_call_when_the_seeds_disagree():
    """Every seed differs clearly from softmax (image level), but by a seed effect of sd 4 around 0:
    the seed-level test does not call, whatever each seed's image-level p-value."""
    records = _records({}, seeds=(1, 2, 3), noise=0.5, seed_sd=4.0, rng_seed=5)
    pure = _comparison(_verdict(records), "pure_infsa")
    assert all(s["image_level"]["p_bootstrap"] < 0.01 for s in pure["per_seed"])
    assert pure["call"] == "not shown"


def test_too_few_seeds_never_call():
    records = _records({"pure_infsa": 4.0}, seeds=(1, 2))
    pure = _comparison(_verdict(records), "pure_infsa")
    assert pure["call"] == "not shown" and "2 seed(s)" in pure["reason"]
    assert _comparison(_verdict(records, min_seeds=2), "pure_infsa")["p"] is not None


def test_images_are_matched_on_both_models_being_correct_and_accuracy_gaps_are_flagged():
    # pure InfSA misclassifies the first 12 of 60 images (80 % against 100 %): 20 points
    records = _records({"pure_infsa": 2.0}, wrong={"pure_infsa": 12})
    verdict = _verdict(records)
    pure, linear = _comparison(verdict, "pure_infsa"), _comparison(verdict, "linear_infsa")
    assert pure["matched_images"]["per_seed"] == [48] * 6 and linear["matched_images"]["per_seed"] == [60] * 6
    assert pure["accuracy_gap"] == pytest.approx(-20.0) and pure["accuracy_flag"] and "accuracies differ" in pure["reason"]
    assert not linear["accuracy_flag"] and linear["accuracy_gap"] == 0.0
    seed = pure["per_seed"][0]
    assert seed["variant_accuracy"] == pytest.approx(0.8) and seed["baseline_accuracy"] == 1.0
    mine = [r for r in records if r.model == seed["variant_model"] and r.index >= 12]
    theirs = [r for r in records if r.model == seed["baseline_model"] and r.index >= 12]
    expected = np.mean([a.morf_aoc - b.morf_aoc for a, b in zip(mine, theirs, strict=True)])
    assert seed["difference"] == pytest.approx(expected, abs=1e-5)


def test_holm_runs_over_figures_maps_and_variants():
    records = _records({"pure_infsa": 0.3}, methods=("attention", "rollout", "random"), seed_sd=0.3)
    verdict = variant_verdict(records, n_resamples=200, image_level=False)
    comparisons = verdict["comparisons"]
    # random is the chance floor, not a candidate map; 2 maps x 2 figures x 2 variants
    assert {c["method"] for c in comparisons} == {"attention", "rollout"} and len(comparisons) == 8
    raw = np.array([c["p"] for c in comparisons if c["p"] is not None])
    from infsa_viz.stats.paired import holm

    adjusted = [c["p_holm"] for c in comparisons if c["p"] is not None]
    np.testing.assert_allclose(adjusted, holm(raw), rtol=1e-5)
    # box PR-AUC is 0.5 for every image and model: no difference, p = 1, never a call
    assert all(c["p"] == 1.0 and c["call"] == "not shown" for c in comparisons if c["figure"] == "box_pr_auc")
    assert "per_seed" in comparisons[0] and "image_level" not in comparisons[0]["per_seed"][0]


def test_call_rule_and_method_roles():
    calls = call_rule([2.0, -2.0, 2.0, 2.0, -1.0], [0.01, 0.01, 0.2, float("nan"), 0.01], [6, 6, 6, 6, 2])
    assert calls.tolist() == ["higher", "lower", "not shown", "not shown", "not shown"]
    assert verdict_methods(["attention", "random", "box_oracle", "perron"]) == ["attention", "perron"]


def test_bad_inputs_are_named():
    records = _records({}, seeds=(1, 2, 3))
    with pytest.raises(ValueError, match="alpha=1.5"):
        variant_verdict(records, alpha=1.5)
    with pytest.raises(ValueError, match="figures contains 'accuracy'"):
        variant_verdict(records, figures=("accuracy",))
    twin = [image_record("runs/gauss-seed1", "attention", 0, morf=1.0, pr=0.5)]  # a second softmax seed 1 in runs/
    with pytest.raises(ValueError, match="both softmax seed 1 in folder 'runs'"):
        variant_verdict(records + twin)


def test_models_without_a_seed_or_a_partner_are_left_out():
    records = _records({}, seeds=(1, 2, 3))
    alone = [image_record("runs/lone", "attention", i, morf=1.0, pr=0.5, variant="pure_infsa") for i in range(5)]
    extra = [image_record("runs/pure_infsa-seed9", "attention", i, morf=1.0, pr=0.5, variant="pure_infsa")
             for i in range(5)]
    pure = _comparison(_verdict(records + alone + extra), "pure_infsa")
    assert pure["seeds"] == [1, 2, 3] and split_seed("runs/pure_infsa-seed9") == ("runs/pure_infsa", 9)


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


def test_models_are_paired_within_their_folder_and_holm_spans_every_group():
    """Two training settings (folders) with the same seeds: each InfSA model meets the softmax model of
    its own seed and folder; one family over both groups."""
    high = _records({"pure_infsa": 4.0}, seeds=(1, 2, 3), seed_sd=0.3, folder="seeds/cued/p0.9", rng_seed=2)
    low = _records({}, seeds=(1, 2, 3), seed_sd=0.3, folder="seeds/cued/p0.5", rng_seed=3)
    verdict = _verdict(high + low, image_level=False)
    groups = {(c["group"], c["variant"]): c for c in verdict["comparisons"]}
    assert set(groups) == {(g, v) for g in ("seeds/cued/p0.5", "seeds/cued/p0.9") for v in ("pure_infsa", "linear_infsa")}
    assert groups["seeds/cued/p0.9", "pure_infsa"]["per_seed"][0]["baseline_model"] == "seeds/cued/p0.9/softmax-seed1"
    assert groups["seeds/cued/p0.9", "pure_infsa"]["difference"] == pytest.approx(4.0, abs=0.7)
    assert abs(groups["seeds/cued/p0.5", "pure_infsa"]["difference"]) < 0.7
    assert all(c["family"] == 4 for c in verdict["comparisons"])
    assert model_group("seeds/cued/p0.9/softmax-seed1") == "seeds/cued/p0.9" and model_group("softmax-seed1") == ""


def test_simultaneous_interval_and_detectable_difference_follow_the_family():
    """ci_simultaneous is the t-interval at 1 - alpha/m (scipy), m the comparisons with a p-value; an interval
    that excludes 0 always comes with a call (Bonferroni is Holm's first step); the detectable difference is
    the noncentral-t power inversion at alpha/m with the seed differences' SD."""
    from scipy import stats as sps

    from infsa_viz.stats.seed_stats import t_test_power

    records = _records({"pure_infsa": 1.5, "linear_infsa": 0.4}, methods=("attention", "rollout"), seed_sd=0.4,
                       rng_seed=4)
    verdict = variant_verdict(records, n_resamples=100, image_level=False)
    comparisons = [c for c in verdict["comparisons"] if c["p"] is not None]
    m = len(comparisons)
    assert m == 8 and all(c["family"] == m for c in comparisons)
    for c in comparisons:
        x = np.array([s["difference"] for s in c["per_seed"]])
        if not x.std(ddof=1) > 0:  # box PR-AUC is 0.5 everywhere: a zero-width interval, detectable 0
            assert c["ci_simultaneous"] == [0.0, 0.0] and c["detectable_difference"] == 0.0
            continue
        low, high = sps.t.interval(1 - 0.05 / m, x.size - 1, loc=x.mean(), scale=sps.sem(x))
        np.testing.assert_allclose(c["ci_simultaneous"], [low, high], rtol=1e-4, atol=1e-6)
        assert c["ci_simultaneous"][0] <= c["ci_t"][0] and c["ci_t"][1] <= c["ci_simultaneous"][1]
        if c["ci_simultaneous"][0] > 0 or c["ci_simultaneous"][1] < 0:
            assert c["call"] != "not shown"
        power = t_test_power(c["detectable_difference"], x.std(ddof=1), x.size, alpha=0.05 / m)
        assert power == pytest.approx(0.8, abs=1e-4)
    assert any(c["call"] != "not shown" for c in comparisons)


def test_image_sets_average_the_images_they_name():
    """Analytic: 4 images; the variant misclassifies image 0, the baseline image 3; image 2 undefined for
    the baseline."""
    x = np.array([10.0, 2.0, 4.0, 6.0])
    y = np.array([1.0, 1.0, np.nan, 3.0])
    sets = seed_set_means(x, y, np.array([False, True, True, True]), np.array([True, True, True, False]))
    assert sets["matched"] == {"variant_mean": 2.0, "baseline_mean": 1.0, "difference": 1.0, "n_variant": 1,
                               "n_baseline": 1}
    assert sets["own_correct"]["variant_mean"] == 4.0 and sets["own_correct"]["baseline_mean"] == 1.0
    assert (sets["own_correct"]["n_variant"], sets["own_correct"]["n_baseline"]) == (3, 2)
    assert sets["all"]["variant_mean"] == 6.0 and sets["all"]["baseline_mean"] == pytest.approx(5 / 3)


def test_a_call_that_rests_on_misclassified_images_is_told_apart():
    """pure InfSA misclassifies a third of the images, and scores 6 points lower on exactly those: on the
    matched images and on its own correct images it equals softmax; on all images it is lower."""
    rng = np.random.default_rng(7)
    records = []
    for seed in range(1, 7):
        base = rng.normal(60.0, 5.0, 60)
        for variant in VARIANTS:
            wrong = variant == "pure_infsa"
            values = base + rng.normal(0.0, 0.2) + rng.normal(0.0, 0.5, 60) - np.where(
                wrong & (np.arange(60) < 20), 6.0, 0.0)
            records += [image_record(f"runs/{variant}-seed{seed}", "attention", i, morf=float(values[i]), pr=0.5,
                                     variant=variant, predicted=1 if wrong and i < 20 else 0) for i in range(60)]
    pure = _comparison(_verdict(records, image_level=False), "pure_infsa")
    sets = pure["image_sets"]
    assert sets["matched"]["call"] == pure["call"] == "not shown" and sets["own_correct"]["call"] == "not shown"
    assert sets["all"]["call"] == "lower" and sets["all"]["difference"] == pytest.approx(-2.0, abs=0.3)
    assert sets["matched"]["p"] == pytest.approx(pure["p"], rel=1e-4) and sets["all"]["stored"]
    assert pure["per_seed"][0]["image_sets"]["all"]["n_variant"] == 60


def test_the_call_can_read_every_image_instead_of_the_matched_ones():
    records = _records({"pure_infsa": 2.0}, seed_sd=0.5, rng_seed=3, wrong={"softmax": 10, "pure_infsa": 20})
    matched, every = _verdict(records), _verdict(records, images="all")
    m, a = _comparison(matched, "pure_infsa"), _comparison(every, "pure_infsa")
    assert m["matched_images"]["min"] == 40 and a["matched_images"]["min"] == 60
    for seed_m, seed_a in zip(m["per_seed"], a["per_seed"], strict=True):
        assert seed_a["difference"] == pytest.approx(seed_a["image_sets"]["all"]["difference"], abs=1e-5)
        assert seed_m["difference"] == pytest.approx(seed_m["image_sets"]["matched"]["difference"], abs=1e-5)
    assert every["protocol"]["image_set"] == "all" and "misclassified ones included" in every["protocol"]["images"]
    with pytest.raises(ValueError, match="images"):
        _verdict(records, images="some")


def test_identical_maps_of_a_variant_are_compared_once_and_counted_once_in_holm():
    from infsa_viz.stats.verdict import identical_maps

    records = _records({"linear_infsa": 0.5}, methods=("attention", "rollout"), seed_sd=0.3)
    # Linear-InfSA's visits and perron repeat its attention map exactly (a rank-one operator); softmax's differ
    copies = [image_record(r.model, m, r.index, morf=r.figures["morf_aoc"] + (0.0 if r.variant == "linear_infsa"
                                                                                 else 3.0 * k), pr=0.5,
                           variant=r.variant)
              for k, m in enumerate(("visits", "perron"), start=1) for r in records if r.method == "attention"]
    verdict = _verdict(records + copies, image_level=False)
    same = verdict["protocol"]["identical_maps"]
    assert sorted((s["variant"], s["method"], s["same_as"]) for s in same) == [
        ("linear_infsa", "perron", "attention"), ("linear_infsa", "visits", "attention")]
    kept = verdict["comparisons"]
    assert {(c["variant"], c["method"]) for c in kept if c["variant"] == "linear_infsa"} == {
        ("linear_infsa", "attention"), ("linear_infsa", "rollout")}
    assert len(kept) == 2 * 4 - 2 and all(c["family"] == len(kept) for c in kept)  # pure InfSA keeps its 4 maps
    # a map that differs by more than the tolerance on one seed is its own map
    comparisons = [{"group": "g", "variant": "v", "method": m, "figure": "morf_aoc",
                    "per_seed": [{"seed": s, "variant_mean": 50.0 + s + (d if s == 2 else 0.0)} for s in (1, 2, 3)]}
                   for m, d in (("attention", 0.0), ("visits", 1e-6), ("perron", 1e-2))]
    assert [(s["method"], s["same_as"]) for s in identical_maps(comparisons)] == [("visits", "attention")]


def test_maps_are_set_against_the_model_ignorant_controls_of_the_same_models():
    from infsa_viz.stats.verdict import model_ignorant_controls

    rows = []
    for seed, (edge, attention, rollout) in enumerate([(0.30, 0.50, 0.31), (0.35, 0.52, 0.33), (0.32, 0.55, 0.34)]):
        model = f"runs/softmax-seed{seed}"
        rows += [{"model": model, "variant": "softmax", "method": m, "box_pr_auc": v}
                 for m, v in (("edge", edge), ("attention", attention), ("rollout", rollout))]
    out = {r["method"]: r for r in model_ignorant_controls(rows, {"box_pr_auc": 100.0})}
    assert set(out) == {"attention", "rollout"} and out["attention"]["control"] == "edge"
    attention = 100 * np.array([0.20, 0.17, 0.23])
    assert out["attention"]["difference"] == pytest.approx(attention.mean(), abs=1e-3)
    assert out["attention"]["beats"] and not out["rollout"]["beats"]  # rollout: +1, -2, +2 points
    test = seed_t_test(100 * np.array([0.01, -0.02, 0.02]))
    assert out["rollout"]["ci_t"] == pytest.approx([test.low, test.high], abs=1e-3)


def test_a_stored_verdict_is_completed_as_the_current_one():
    """completed_verdict reads a report's verdict back: the same calls; a report without image sets gets them
    from its rows (each model's own row mean) and says so; the report itself is not changed."""
    import copy

    from infsa_viz.stats.verdict import completed_verdict

    records = _records({"pure_infsa": 4.0}, seed_sd=0.5, rng_seed=1)
    verdict = _verdict(records)
    report = {"verdict": verdict, "results": [], "protocol": {"settings": {"select": "correct"}}}
    kept, note, same = completed_verdict(report)
    assert note is None and same == []
    assert [(c["variant"], c["call"], c["p_holm"]) for c in kept] == [
        (c["variant"], c["call"], c["p_holm"]) for c in verdict["comparisons"]]
    old = copy.deepcopy(verdict)
    for c in old["comparisons"]:
        for s in c["per_seed"]:
            del s["image_sets"]
    means: dict[tuple[str, str], list[float]] = {}
    for r in records:
        means.setdefault((r.model, r.method), []).append(r.figures["morf_aoc"])
    rows = [{"model": m, "method": k, "morf_aoc": float(np.mean(v))} for (m, k), v in means.items()]
    stored = {"verdict": old, "results": rows, "protocol": {"settings": {"select": "correct"}}}
    before = copy.deepcopy(stored)
    kept, note, _ = completed_verdict(stored)
    assert "predates the image-set means" in note and stored == before
    for c in kept:
        for s in c["per_seed"]:
            own = means[s["variant_model"], c["method"]], means[s["baseline_model"], c["method"]]
            assert s["image_sets"]["own_correct"]["difference"] == pytest.approx(np.mean(own[0]) - np.mean(own[1]))
    assert [c["call"] for c in kept] == [c["call"] for c in verdict["comparisons"]]


def test_a_stored_verdict_keeps_the_identical_maps_its_own_family_left_out():
    from infsa_viz.stats.verdict import completed_verdict

    records = _records({"linear_infsa": 0.5}, seed_sd=0.3)
    copies = [image_record(r.model, "visits", r.index, morf=r.figures["morf_aoc"] + (0.0 if r.variant == "linear_infsa"
                                                                                     else 2.0), pr=0.5, variant=r.variant)
              for r in records]
    verdict = _verdict(records + copies, image_level=False)
    assert [s["method"] for s in verdict["protocol"]["identical_maps"]] == ["visits"]
    kept, _, same = completed_verdict({"verdict": verdict, "results": [], "protocol": {}})
    assert same == verdict["protocol"]["identical_maps"] and len(kept) == len(verdict["comparisons"])
    assert all(c["family"] == len(kept) for c in kept)
