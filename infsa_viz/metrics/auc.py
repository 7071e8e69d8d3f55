"""ROC and precision-recall of one binary ranking, in NumPy (no scikit-learn import).

The definitions are scikit-learn's 1.x, ties included (``tests/metrics/test_auc.py`` checks every
function against ``sklearn.metrics`` on tied and untied scores): ROC-AUC is the Mann-Whitney
statistic, the chance that a random positive scores above a random negative, ties counting one
half; average precision is ``Σ_k (R_k − R_{k−1}) P_k`` over the distinct score thresholds, highest
first (no interpolation); the curves are ``roc_curve`` (collinear points dropped, starting at
(0, 0)) and ``precision_recall_curve`` (recall falling, ending at precision 1, recall 0).
Importing scikit-learn costs about 1.3 s, which the app's first page paid for these formulas.
"""

from __future__ import annotations

import numpy as np

__all__ = ["average_precision", "precision_recall_curve", "roc_auc", "roc_curve"]


def _counts(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """False and true positives above each distinct threshold, highest threshold first."""
    labels = np.asarray(labels, dtype=bool).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    order = np.argsort(-scores, kind="mergesort")
    ranked = scores[order]
    ends = np.r_[np.flatnonzero(ranked[1:] != ranked[:-1]), ranked.size - 1]  # last index per threshold
    true_pos = np.cumsum(labels[order])[ends].astype(np.float64)
    return ends + 1.0 - true_pos, true_pos


def _precision_recall(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Precision and recall at every distinct threshold, highest threshold first."""
    false_pos, true_pos = _counts(labels, scores)
    return true_pos / (true_pos + false_pos), true_pos / true_pos[-1]


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for the boolean ``labels`` (both classes present): the
    trapezoids between thresholds, so tied scores count one half (the Mann-Whitney statistic)."""
    false_pos, true_pos = (np.r_[0.0, c] for c in _counts(labels, scores))
    return float(np.sum(np.diff(false_pos) * (true_pos[1:] + true_pos[:-1])) / (2.0 * false_pos[-1] * true_pos[-1]))


def average_precision(labels: np.ndarray, scores: np.ndarray) -> float:
    """Average precision of ``scores`` for the boolean ``labels`` (at least one positive)."""
    precision, recall = _precision_recall(labels, scores)
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def roc_curve(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(fpr, tpr)`` from (0, 0) to (1, 1), points on a straight segment dropped (both classes present)."""
    false_pos, true_pos = _counts(labels, scores)
    if false_pos.size > 2:  # as scikit-learn: a middle point is one between two others, on the integer counts
        keep = np.flatnonzero(np.r_[True, np.logical_or(np.diff(false_pos, 2), np.diff(true_pos, 2)), True])
        false_pos, true_pos = false_pos[keep], true_pos[keep]
    return np.r_[0.0, false_pos] / false_pos[-1], np.r_[0.0, true_pos] / true_pos[-1]


def precision_recall_curve(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(precision, recall)``, recall falling, with the final point (1, 0) (at least one positive)."""
    precision, recall = _precision_recall(labels, scores)
    return np.r_[precision[::-1], 1.0], np.r_[recall[::-1], 0.0]
