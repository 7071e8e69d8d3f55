"""Which images a variant comparison averages, and whether its call depends on that choice.

A seed's difference between two models is a mean over images, and three sets are defensible
(:data:`IMAGE_SETS`):

* ``"matched"``: the images **both** models classify correctly (and where the figure is defined
  for both): the verdict's call reads this set, so a weaker classifier is never judged on
  images only the other one gets right;
* ``"own_correct"``: each model's own correctly classified images: two means over different
  images (what each model's own table row reports for a ``"scored"`` figure such as MoRF-AOC);
* ``"all"``: every image where the figure is defined for both models, misclassified ones included
  (what a table row reports for an ``"all"`` figure such as box PR-AUC).

:func:`seed_set_means` gives one seed's means under each set; :func:`image_set_calls` repeats the
verdict's seed-level test, Holm across the same family and call rule under each set, so the
report says which calls hold on every set and which depend on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .paired import holm, significant
from .seed_stats import call_rule, seed_t_test

__all__ = ["IMAGE_SETS", "image_set_calls", "seed_set_means"]

#: The image sets of a comparison, with what each averages.
IMAGE_SETS = {
    "matched": "the images both models of the seed classify correctly, where the figure is defined for both "
               "(the call's set)",
    "own_correct": "each model's own correctly classified images where its figure is defined (two means over "
                   "different images)",
    "all": "every image where the figure is defined for both models, misclassified ones included",
}


def _r(value: float, digits: int = 6) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), digits)


def seed_set_means(x: np.ndarray, y: np.ndarray, x_correct: np.ndarray, y_correct: np.ndarray) -> dict[str, Any]:
    """One seed's variant and baseline means under each image set.

    Args:
        x, y: ``(n,)`` per-image values of the variant's and the baseline's model on the same images
            (``nan`` where undefined).
        x_correct, y_correct: ``(n,) bool``, each model classifies the image correctly.

    Returns:
        ``{set: {"variant_mean", "baseline_mean", "difference", "n_variant", "n_baseline"}}``
        (means ``None`` where a set is empty).
    """
    both = np.isfinite(x) & np.isfinite(y)
    masks = {"matched": (both & x_correct & y_correct,) * 2,
             "own_correct": (np.isfinite(x) & x_correct, np.isfinite(y) & y_correct),
             "all": (both, both)}
    out = {}
    for name, (mx, my) in masks.items():
        a = float(x[mx].mean()) if mx.any() else math.nan
        b = float(y[my].mean()) if my.any() else math.nan
        out[name] = {"variant_mean": _r(a), "baseline_mean": _r(b), "difference": _r(a - b),
                     "n_variant": int(mx.sum()), "n_baseline": int(my.sum())}
    return out


def image_set_calls(comparisons: Sequence[dict[str, Any]], *, alpha: float, min_seeds: int) -> None:
    """Add ``image_sets`` to each comparison: per set, the seed-level test, Holm and the call.

    Each comparison's ``per_seed`` entries hold ``image_sets`` (:func:`seed_set_means`; a set a
    report did not store is absent: ``stored`` false). Per set, over the seeds with images in it:
    the mean and SD of the seed differences, the t-test's p, Holm across **the whole family**
    (every comparison) and the verdict's call rule. A comparison without a test in a set (not
    stored, or no seed with images) enters Holm as ``p = 1``: the
    adjusted p of the others is then an upper bound on what the complete family would give (Holm's
    adjusted p-values never decrease when any p-value grows).
    """
    names = list(dict.fromkeys(name for c in comparisons for s in c["per_seed"] for name in s.get("image_sets", {})))
    for name in names:
        tests, stored = [], []
        for c in comparisons:
            entries = [s["image_sets"][name] for s in c["per_seed"] if name in s.get("image_sets", {})]
            seeds = [e["difference"] for e in entries if e.get("difference") is not None]  # seeds with images
            stored.append(bool(entries))
            tests.append(seed_t_test(seeds) if seeds else None)
        raw = np.array([1.0 if t is None or math.isnan(t.p_value) else t.p_value for t in tests])
        adjusted = holm(raw) if raw.size else raw
        calls = call_rule([0.0 if t is None else t.mean for t in tests], adjusted,
                          [0 if t is None else t.n for t in tests], alpha=alpha, min_seeds=min_seeds)
        for c, test, known, p_holm, call in zip(comparisons, tests, stored, adjusted, calls, strict=True):
            entry: dict[str, Any] = {"stored": known}
            if test is not None:
                entry.update(difference=_r(test.mean), sd_seeds=_r(test.sd), p=significant(test.p_value),
                             p_holm=significant(float(p_holm)), call=str(call))
            c.setdefault("image_sets", {})[name] = entry
