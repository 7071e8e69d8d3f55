"""The verdict rule is calibrated: under a variant null it calls a difference in at most 5 % of
simulated evaluations (within the Monte-Carlo error), whatever the seed-to-seed spread.

Seeded and fast: per-image scores are simulated (:mod:`infsa_viz.evaluation.calibration`), no model
is evaluated. ``scripts/verdict_calibration.py`` runs more replications and the power study.
"""

from __future__ import annotations

import numpy as np
import pytest

from infsa_viz.evaluation import variant_verdict
from infsa_viz.evaluation.calibration import Scenario, simulated_calls, simulate, simulate_scores
from infsa_viz.evaluation.verdict import ALPHA
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


def test_a_large_difference_is_found():
    result = simulate(Scenario(n_seeds=6, seed_sd=1.0, difference=10.0, n_images=200), replications=300, seed=1)
    assert result["power"] > 0.9 and result["wrong_direction_rate"] == 0.0
    assert result["familywise_false_call_rate"] <= ALPHA + 2 * result["familywise_false_call_rate_mcse"]


def test_the_simulation_applies_the_verdict_itself():
    """One simulated evaluation through variant_verdict (records in, calls out) gives the calls and
    p-values of the vectorised path the calibration uses."""
    scenario = Scenario(n_seeds=4, seed_sd=1.0, difference=12.0, n_images=80, n_cells=2)
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
