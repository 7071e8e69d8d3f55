"""MoRF score variants of the protocol-sensitivity study against hand-computed values and the library curves."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from infsa_viz.stats.sensitivity import (
    OURS,
    ProtocolChoice,
    RawCurves,
    curve_scores,
    one_at_a_time,
    protocol_choices,
    protocol_mean,
    sensitivity_summary,
)
from infsa_viz.metrics import morf_aoc, perturbation_curves
from infsa_viz.model import VisionTransformer, ViTConfig

F = np.linspace(0.0, 1.0, 11)


def test_area_rules_on_a_linear_curve():
    """p_k = p_0 (1 - f): the ratio curve is 1 - f (area 1/2 whichever rule); the raw curve's area over
    its start is p_0 / 2 and its 1 - AUC is 1 - p_0 / 2."""
    probs = 0.5 * (1.0 - F)[None]
    for area in ("aoc", "one_minus_auc", "aopc"):
        assert curve_scores(probs, F, curve="ratio", area=area)[0] == pytest.approx(50.0)
    assert curve_scores(probs, F, curve="probability", area="aoc")[0] == pytest.approx(25.0)
    assert curve_scores(probs, F, curve="probability", area="one_minus_auc")[0] == pytest.approx(75.0)
    assert curve_scores(probs, F, curve="probability", area="aopc")[0] == pytest.approx(25.0)
    # a step curve: the trapezoid and the mean over steps differ by the half steps at the ends
    step = np.r_[1.0, np.zeros(10)][None]
    assert curve_scores(step, F, curve="ratio", area="aoc")[0] == pytest.approx(95.0)
    assert curve_scores(step, F, curve="ratio", area="aopc")[0] == pytest.approx(100.0 * 10 / 11)


def test_ratio_is_undefined_without_a_clean_probability_and_options_are_checked():
    assert np.isnan(curve_scores(np.zeros((1, 11)), F, curve="ratio", area="aoc")[0])
    assert curve_scores(np.zeros((1, 11)), F, curve="probability", area="one_minus_auc")[0] == 100.0
    with pytest.raises(ValueError, match="area='auc'"):
        curve_scores(np.ones((1, 11)), F, curve="ratio", area="auc")
    with pytest.raises(ValueError, match="fractions"):
        curve_scores(np.ones((1, 3)), np.array([0.0, 0.7, 0.5]), curve="ratio", area="aoc")
    with pytest.raises(ValueError, match="deletion='black'"):
        ProtocolChoice("black", "patches", "ratio", "aoc", "label", "all")


def test_protocol_lists_are_distinct_and_ours_comes_first():
    choices = protocol_choices()
    assert choices[0] == OURS and len(choices) == len(set(choices)) == 3 * 3 * 5 * 3
    assert not any(c.curve == "ratio" and c.area == "one_minus_auc" for c in choices)
    changed = one_at_a_time()
    assert changed[0] == OURS and [c.differs_from(OURS) for c in changed[1:]] == [
        ["deletion"], ["deletion"], ["steps"], ["steps"], ["curve"], ["curve", "area"], ["area"], ["target", "images"],
        ["images"]]


def test_patch_fraction_is_the_library_twenty_step_curve_and_ours_is_morf_aoc():
    torch.manual_seed(0)
    model = VisionTransformer(ViTConfig(img_size=32, in_chans=1, patch_size=8, embed_dim=16, depth=1, num_heads=2,
                                        num_classes=3)).eval()
    x = torch.randn(5, 1, 32, 32)
    maps = torch.rand(5, 4, 4)
    labels = np.array([0, 1, 2, 0, 1])
    every = perturbation_curves(model, x, maps, labels, patch_size=8, steps=16)
    twenty = perturbation_curves(model, x, maps, labels, patch_size=8, steps=20)
    predicted = every.predicted
    raw = RawCurves(curves={("mean", "patches", "label"): (every.probs, every.fractions)},
                    correct=predicted == labels, num_patches=16)
    probs, fractions = raw.get("mean", "patch_fraction", "label")
    np.testing.assert_allclose(probs, twenty.probs)
    np.testing.assert_allclose(fractions, twenty.fractions)
    ours = protocol_mean(raw, OURS)
    reference = morf_aoc(twenty, select="correct") if raw.correct.any() else None
    if reference is not None:
        assert ours["mean"] == pytest.approx(reference.mean) and ours["n"] == reference.n_included
    every_image = protocol_mean(raw, dataclasses.replace(OURS, images="all"))
    assert every_image["n"] == 5


def test_the_summary_spreads_each_protocol_over_seeds_and_checks_the_paper():
    """Two seeds per variant with known scores: means and sds by hand, the paper's two criteria."""
    scores = {"softmax": ([30.0, 34.0], [40.0, 41.0]), "pure_infsa": ([50.0, 50.0], [45.0, 47.0]),
              "linear_infsa": ([60.0, 62.0], [50.0, 50.0])}  # (attention per seed, random per seed)
    models = [{"variant": v, "scores": {"attention": [[a[k], 10]], "random": [[r[k], 10]]}}
              for v, (a, r) in scores.items() for k in range(2)]
    record = {"protocol": {"maps": ["attention", "random"], "paper": {"softmax": 42.6}},
              "choices": [OURS.to_dict()], "models": models}
    (entry,) = sensitivity_summary(record)
    assert entry["choice"] == OURS.to_dict()
    assert entry["values"]["softmax/attention"]["mean"] == 32.0
    assert entry["values"]["softmax/attention"]["sd"] == pytest.approx(np.std([30.0, 34.0], ddof=1), abs=1e-3)
    assert entry["random_softmax_below_paper"] is True  # 40.5 < 42.6
    assert entry["paper_ordering"] is True and entry["both"] is True  # 61 > 50 > 32
    assert entry["linear_minus_softmax_attention"] == 29.0
    models[0]["scores"]["attention"] = [[None, 0]]  # an undefined score drops out of the spread
    (entry,) = sensitivity_summary(record)
    assert entry["values"]["softmax/attention"]["mean"] == 34.0
