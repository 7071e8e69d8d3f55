"""infsa_viz.metrics.auc against scikit-learn's own functions, with and without tied scores."""

from __future__ import annotations

import numpy as np
import pytest
import sklearn.metrics as sk

from infsa_viz.metrics import auc


@pytest.mark.parametrize("levels", [None, 2, 5, 40])  # None: continuous scores; k: k distinct values (ties)
@pytest.mark.parametrize("seed", range(5))
def test_matches_sklearn(levels, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 3000))
    labels = rng.random(n) < rng.uniform(0.05, 0.9)
    labels[:2] = [True, False]  # both classes present
    scores = rng.normal(size=n) + labels * rng.uniform(0, 2)
    if levels is not None:
        scores = np.round(scores * levels / 4) / levels
    assert auc.roc_auc(labels, scores) == pytest.approx(sk.roc_auc_score(labels, scores), abs=1e-12)
    assert auc.average_precision(labels, scores) == pytest.approx(sk.average_precision_score(labels, scores),
                                                                  abs=1e-12)
    fpr, tpr, _ = sk.roc_curve(labels, scores)
    np.testing.assert_allclose(np.stack(auc.roc_curve(labels, scores)), np.stack([fpr, tpr]), atol=1e-12)
    precision, recall, _ = sk.precision_recall_curve(labels, scores)
    np.testing.assert_allclose(np.stack(auc.precision_recall_curve(labels, scores)), np.stack([precision, recall]),
                               atol=1e-12)


@pytest.mark.parametrize("scores", [[1.0, 1, 1, 1], [2.0, 1, 1, 1], [1.0, 2, 2, 1]])  # one or two thresholds
def test_few_thresholds_match_sklearn(scores):
    labels, scores = np.array([True, False, True, False]), np.array(scores)
    fpr, tpr, _ = sk.roc_curve(labels, scores)
    np.testing.assert_allclose(np.stack(auc.roc_curve(labels, scores)), np.stack([fpr, tpr]))
    precision, recall, _ = sk.precision_recall_curve(labels, scores)
    np.testing.assert_allclose(np.stack(auc.precision_recall_curve(labels, scores)), np.stack([precision, recall]))
    assert auc.roc_auc(labels, scores) == pytest.approx(sk.roc_auc_score(labels, scores))
    assert auc.average_precision(labels, scores) == pytest.approx(sk.average_precision_score(labels, scores))


def test_analytic_cases():
    labels = np.array([True, True, False, False])
    assert auc.roc_auc(labels, np.array([4.0, 3, 2, 1])) == 1.0
    assert auc.roc_auc(labels, np.array([1.0, 2, 3, 4])) == 0.0
    assert auc.roc_auc(labels, np.ones(4)) == 0.5  # every pair tied
    assert auc.average_precision(labels, np.array([4.0, 3, 2, 1])) == 1.0
    assert auc.average_precision(labels, np.ones(4)) == 0.5  # one threshold: precision = prevalence
    # ranks 1 and 3 hold the positives: P = 1 at R = 1/2, P = 2/3 at R = 1
    assert auc.average_precision(labels, np.array([4.0, 2, 3, 1])) == pytest.approx(0.5 + 0.5 * 2 / 3)
    fpr, tpr = auc.roc_curve(labels, np.array([4.0, 3, 2, 1]))  # perfect: up the left edge, then across
    assert fpr.tolist() == [0, 0, 0, 1] and tpr.tolist() == [0, 0.5, 1, 1]
    assert np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1])) / 2 == 1.0  # the area (np.trapezoid needs numpy 2)
