"""Tests of infsa_viz/metrics/scores.py on hand-made curves with known areas."""

from __future__ import annotations

import numpy as np
import pytest

from infsa_viz.metrics import UndefinedMetricWarning, aopc, lerf_auc, morf_aoc


def test_morf_aoc_trapezoid_over_actual_fractions(curve_factory):
    # p/p0 = 1, 0.5, 0 at f = 0, 0.25, 1: trapz(1 - ratio) = 0.25*0.25 + 0.75*0.75 = 0.625.
    curve = curve_factory([[0.8, 0.4, 0.0]], fractions=[0.0, 0.25, 1.0])
    score = morf_aoc(curve)
    assert score.per_image[0] == pytest.approx(62.5)
    assert isinstance(score.mean, float) and score.mean == pytest.approx(62.5)


def test_lerf_auc_and_aopc_formulas(curve_factory):
    curve = curve_factory([[0.8, 0.4, 0.0]], order="lerf", fractions=[0.0, 0.25, 1.0])
    assert lerf_auc(curve).mean == pytest.approx(37.5)
    assert aopc(curve).mean == pytest.approx((0.0 + 0.4 + 0.8) / 3)  # mean over k = 0..K


def test_morf_plus_lerf_of_same_curve_is_100(curve_factory):
    probs = np.random.default_rng(0).random((4, 6))
    morf = morf_aoc(curve_factory(probs), select="all").per_image
    lerf = lerf_auc(curve_factory(probs, order="lerf"), select="all").per_image
    np.testing.assert_allclose(morf + lerf, 100.0)


def test_clip_bounds_scores(curve_factory):
    curve = curve_factory([[0.5, 0.9, 0.9]])  # probability rises above p_0
    assert morf_aoc(curve).mean < 0
    assert morf_aoc(curve, clip=True).mean == pytest.approx(0.0)
    lerf = curve_factory([[0.5, 0.9, 0.9]], order="lerf")
    assert lerf_auc(lerf).mean > 100
    assert lerf_auc(lerf, clip=True).mean == pytest.approx(100.0)


def test_selection_correct_by_default_with_counts(curve_factory):
    curve = curve_factory([[1.0, 0.0], [1.0, 1.0], [1.0, 0.5]], correct=[True, False, True])
    score = morf_aoc(curve)
    assert (score.n_images, score.n_correct, score.n_included, score.n_undefined) == (3, 2, 2, 0)
    assert score.mean == pytest.approx((50.0 + 25.0) / 2)
    np.testing.assert_array_equal(score.included, [True, False, True])
    assert np.isfinite(score.per_image).all()  # every image is scored, selected or not
    everyone = morf_aoc(curve, select="all")
    assert everyone.n_included == 3 and everyone.mean == pytest.approx(25.0)
    assert score.protocol["select"] == "correct" and "formula" in score.protocol


def test_zero_p0_is_nan_with_warning(curve_factory):
    curve = curve_factory([[0.0, 0.0], [1.0, 0.0]])
    with pytest.warns(UndefinedMetricWarning, match="p_0 = 0"):
        score = morf_aoc(curve)
    assert np.isnan(score.per_image[0]) and score.n_undefined == 1 and score.mean == pytest.approx(50.0)


def test_nothing_selected_gives_nan_mean_with_warning(curve_factory):
    curve = curve_factory([[1.0, 0.0]], correct=[False])
    with pytest.warns(UndefinedMetricWarning, match="no image"):
        score = aopc(curve)
    assert np.isnan(score.mean) and score.n_included == 0


def test_errors(curve_factory):
    with pytest.raises(ValueError, match="curve.order='lerf'"):
        morf_aoc(curve_factory([[1.0, 0.5]], order="lerf"))
    with pytest.raises(ValueError, match="curve.order='morf'"):
        lerf_auc(curve_factory([[1.0, 0.5]]))
    with pytest.raises(ValueError, match="select='some'"):
        aopc(curve_factory([[1.0, 0.5]]), select="some")
    with pytest.raises(ValueError, match="clip=1"):
        morf_aoc(curve_factory([[1.0, 0.5]]), clip=1)
    with pytest.raises(TypeError, match="PerturbationCurves"):
        morf_aoc(np.ones((1, 3)))
