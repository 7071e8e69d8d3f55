"""ROC-AUC and average precision of one binary ranking, in NumPy (no scikit-learn import).

The definitions are scikit-learn's, ties included (``tests/metrics/test_auc.py`` checks both
against ``sklearn.metrics`` on tied and untied scores): ROC-AUC is the Mann-Whitney statistic,
the chance that a random positive scores above a random negative, ties counting one half;
average precision is ``Σ_k (R_k − R_{k−1}) P_k`` over the distinct score thresholds, highest
first (Zhu 2004; scikit-learn's ``average_precision_score``, no interpolation). Importing
scikit-learn costs about 1.3 s, which the app's first page paid for two formulas.
"""

from __future__ import annotations

import numpy as np

__all__ = ["average_precision", "roc_auc"]


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve of ``scores`` for the boolean ``labels`` (both classes present)."""
    labels = np.asarray(labels, dtype=bool).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    order = np.argsort(scores, kind="mergesort")
    ranked = scores[order]
    starts = np.r_[True, ranked[1:] != ranked[:-1]]  # first element of each group of equal scores
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], ranked.size] - 1
    group = np.cumsum(starts) - 1
    ranks = np.empty(ranked.size)
    ranks[order] = (first + last)[group] / 2.0 + 1.0  # 1-based mean rank of each tie group
    n_pos = int(labels.sum())
    n_neg = labels.size - n_pos
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def average_precision(labels: np.ndarray, scores: np.ndarray) -> float:
    """Average precision of ``scores`` for the boolean ``labels`` (at least one positive)."""
    labels = np.asarray(labels, dtype=bool).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    order = np.argsort(-scores, kind="mergesort")
    ranked, hits = scores[order], labels[order]
    ends = np.r_[np.flatnonzero(ranked[1:] != ranked[:-1]), ranked.size - 1]  # last index per threshold
    true_pos = np.cumsum(hits)[ends]
    precision = true_pos / (ends + 1.0)
    recall = true_pos / true_pos[-1]
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))
