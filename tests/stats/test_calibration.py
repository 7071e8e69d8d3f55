"""The verdict rule is calibrated: under a variant null it calls a difference in at most 5 % of
simulated evaluations (within the Monte-Carlo error), whatever the seed-to-seed spread, in a family
of 2 and in the verdict's own family of 30 (3 figures x 5 maps x 2 variants) correlated as the data.

Seeded and fast: per-image scores are simulated (:mod:`infsa_viz.stats.calibration`), no model
is evaluated. ``scripts/verdict_calibration.py`` runs more replications and the power study.
Tolerance: a rate passes when it is within two Monte-Carlo standard errors of its bound (about 1
point for a 5 % rate at 2,000 replications).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from infsa_viz.stats import variant_verdict
from infsa_viz.stats.calibration import Scenario, seed_differences, simulated_calls, simulate, simulate_scores
from infsa_viz.stats.seed_stats import ALPHA, detectable_difference
from tests.evaluation.helpers import image_record

#: Replications per scenario: the Monte-Carlo error of a 5 % rate is about 0.5 points.
REPLICATIONS = 2000


@pytest.mark.parametrize("n_seeds", [6, 3])
@pytest.mark.parametrize("seed_sd", [0.0, 3.0, 6.0, 12.0])
def test_false_calls_under_the_null_stay_within_alpha(n_seeds, seed_sd):
    """500 images, 3 variants (2 comparisons against softmax): no true difference anywhere."""
    result = simulate(Scenario(n_seeds=n_seeds, seed_sd=seed_sd, n_images=500), replications=REPLICATIONS,
                      seed=int(10 * seed_sd) + n_seeds)
    for rate in ("familywise_false_call_rate", "false_call_rate"):
        assert result[rate] - 2 * result[f"{rate}_mcse"] <= ALPHA, (rate, result)
    assert result["familywise_false_call_rate_mcse"] < 0.006


#: How the verdict's seed differences correlate (metrics/verdict.json, 6 seeds: 0.59 between two maps of
#: one figure, 0.15 across figures; scripts/verdict_calibration.py measures them), and a stronger case.
CORRELATIONS = {"as measured": (0.6, 0.15), "strong": (0.95, 0.9)}


def _family_of_30(n_seeds: int, correlation: str, **options) -> Scenario:
    figure, model = CORRELATIONS[correlation]
    return Scenario(n_seeds=n_seeds, n_maps=5, n_figures=3, figure_correlation=figure, model_correlation=model,
                    n_images=100, **options)


@pytest.mark.parametrize("n_seeds", [12, 6])
@pytest.mark.parametrize("correlation", list(CORRELATIONS))
def test_the_correlated_family_of_30_keeps_alpha(n_seeds, correlation):
    """The verdict's family: 30 comparisons, the maps and figures of one model correlated, the two variants
    sharing the softmax model of each seed. Family-wise false calls at most 5 %, and the 30 simultaneous
    intervals (1 - 0.05/30) all cover in at least 95 % of evaluations."""
    scenario = _family_of_30(n_seeds, correlation, seed_sd=1.0)
    assert scenario.family == 30
    result = simulate(scenario, replications=REPLICATIONS, seed=n_seeds + len(correlation))
    assert result["familywise_false_call_rate"] - 2 * result["familywise_false_call_rate_mcse"] <= ALPHA, result
    assert result["simultaneous_coverage"] + 2 * result["simultaneous_coverage_mcse"] >= 1 - ALPHA, result


def test_the_simulated_cells_correlate_as_declared():
    scenario = _family_of_30(6, "as measured", seed_sd=2.0)
    scores, correct = simulate_scores(scenario, 600, np.random.default_rng(0))
    d = seed_differences(scores, correct)[:, :, 0, 0]  # (R, 15 cells) of pure InfSA's first seed
    corr = np.corrcoef(d.T)
    same = [corr[i, j] for i in range(15) for j in range(i + 1, 15) if i // 5 == j // 5]
    across = [corr[i, j] for i in range(15) for j in range(i + 1, 15) if i // 5 != j // 5]
    assert np.mean(same) == pytest.approx(0.6, abs=0.05) and np.mean(across) == pytest.approx(0.15, abs=0.05)


def test_holm_finds_the_detectable_difference_with_80_percent_power():
    """The detectable difference is the Bonferroni step's 80 % (noncentral t); Holm calls at least as often."""
    scenario = _family_of_30(6, "as measured", seed_sd=1.0)
    delta = detectable_difference(scenario.seed_difference_sd(), 6, alpha=ALPHA / 30)
    result = simulate(dataclasses.replace(scenario, difference=delta), replications=800, seed=5)
    assert result["power"] + 2 * result["power_mcse"] >= 0.8 and result["power"] < 0.9, result


def test_a_large_difference_is_found():
    result = simulate(Scenario(n_seeds=6, seed_sd=1.0, difference=10.0, n_images=200), replications=300, seed=1)
    assert result["power"] > 0.9 and result["wrong_direction_rate"] == 0.0
    assert result["familywise_false_call_rate"] <= ALPHA + 2 * result["familywise_false_call_rate_mcse"]


def test_the_simulation_applies_the_verdict_itself():
    """One simulated evaluation through variant_verdict (records in, calls out) gives the calls and
    p-values of the vectorised path the calibration uses."""
    scenario = Scenario(n_seeds=4, seed_sd=1.0, difference=12.0, n_images=80, n_maps=2, figure_correlation=0.5)
    scores, correct = simulate_scores(scenario, 1, np.random.default_rng(3))
    variants, methods = ("softmax", "pure_infsa", "linear_infsa"), ("attention", "perron")
    records = [image_record(f"runs/{v}-seed{s}", methods[m], i, morf=float(scores[0, m, k, s, i]), pr=0.5,
                            variant=v, predicted=0 if correct[0, k, s, i] else 1)
               for m in range(2) for k, v in enumerate(variants) for s in range(4) for i in range(80)]
    verdict = variant_verdict(records, figures=("morf_aoc",), n_resamples=100, image_level=False)
    ours = {(c["method"], c["variant"]): c["call"] for c in verdict["comparisons"]}
    vectorised = simulated_calls(scores, correct, ALPHA, 3)[0]  # (cells, variants - 1)
    assert ours == {(methods[m], variants[k + 1]): str(vectorised[m, k]) for m in range(2) for k in range(2)}
    assert any(call != "not shown" for call in ours.values())  # the 12-point difference is found here


def test_bad_scenarios_are_named():
    with pytest.raises(ValueError, match="accuracy"):
        Scenario(accuracy=0.0)
    with pytest.raises(ValueError, match="n_seeds"):
        Scenario(n_seeds=1)
    with pytest.raises(ValueError, match="replications"):
        simulate(Scenario(), replications=0)
    with pytest.raises(ValueError, match="model_correlation"):
        Scenario(figure_correlation=0.2, model_correlation=0.5)
