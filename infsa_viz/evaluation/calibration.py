"""The verdict rule calibrated by simulation: false calls under a variant null, and power.

Each replication simulates the per-image scores of ``V`` variants × ``S`` seeds on ``n`` images,
for ``M`` map × figure cells, and applies the verdict's own steps: images matched per seed
(both models correct), one mean difference per seed, :func:`~.seed_stats.t_test_p`,
:func:`~.stats.holm` across the family of ``M · (V − 1)`` comparisons and
:func:`~.verdict.call_rule`. The score of image ``i`` for the model of variant ``v`` and seed
``s`` in cell ``m`` is (points)::

    y = 60 + a_i + u[m, v, s] + δ[m, v] + e[m, v, s, i]
    a_i ~ N(0, image_sd²)        the image's difficulty, shared by every model
    u   ~ N(0, seed_sd²)         how training seed s moves this model's figure ("seed-to-seed SD")
    e   ~ N(0, noise_sd²)        model × image noise (differences of two models: SD √2 · noise_sd)

and each model classifies each image correctly with probability ``accuracy`` (independently). δ
is 0 everywhere (the null) except, for power, ``δ = difference`` in the first comparison (one
true effect among ``M · (V − 1) − 1`` null ones, the hardest case for Holm). Rates come with
their Monte-Carlo standard error (the sd of the per-replication outcome over ``√R``; the
comparisons of one replication share the baseline models, so the replication is the trial).

Example:
    >>> result = simulate(Scenario(n_seeds=3, seed_sd=3.0, n_images=50), replications=50, seed=0)
    >>> 0.0 <= result["familywise_false_call_rate"] <= 1.0
    True
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import check_float, check_int
from .seed_stats import t_test_p
from .stats import holm
from .verdict import ALPHA, MIN_SEEDS, call_rule

__all__ = ["Scenario", "interval_coverage", "simulate", "simulate_scores", "simulated_calls"]

_BASE = 60.0


@dataclass(frozen=True)
class Scenario:
    """One simulated verdict (see the module docstring for the model).

    Attributes:
        n_variants: variants, the baseline included (default 3).
        n_seeds: training seeds per variant (default 6).
        n_images: test images (default 500).
        n_cells: map × figure cells (default 1; the verdict has 5 maps × 2 figures = 10).
        seed_sd: seed-to-seed SD of a model's figure, in points.
        difference: true difference of the first comparison, in points (0: the null everywhere).
        image_sd: SD of the images' shared difficulty (default 15).
        noise_sd: SD of the model × image noise (default 14: per-image differences of two
            models have SD ≈ 20 points, as MoRF-AOC's do in ``metrics/verdict-cluttered-digits.json``).
        accuracy: each model's chance to classify an image correctly (default 0.8).
    """

    n_variants: int = 3
    n_seeds: int = 6
    n_images: int = 500
    n_cells: int = 1
    seed_sd: float = 0.0
    difference: float = 0.0
    image_sd: float = 15.0
    noise_sd: float = 14.0
    accuracy: float = 0.8

    def __post_init__(self) -> None:
        check_int("n_variants", self.n_variants, minimum=2)
        check_int("n_seeds", self.n_seeds, minimum=2)
        check_int("n_images", self.n_images, minimum=2)
        check_int("n_cells", self.n_cells, minimum=1)
        for name in ("seed_sd", "image_sd", "noise_sd"):
            check_float(name, getattr(self, name), minimum=0.0)
        check_float("difference", self.difference)
        if not 0.0 < check_float("accuracy", self.accuracy) <= 1.0:
            raise ValueError(f"accuracy={self.accuracy!r} is invalid; expected 0 < accuracy <= 1")

    @property
    def family(self) -> int:
        """Comparisons in the Holm family: cells × non-baseline variants."""
        return self.n_cells * (self.n_variants - 1)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "family": self.family}


def simulate_scores(scenario: Scenario, replications: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per-image scores and correct flags of ``replications`` simulated evaluations.

    Returns:
        ``scores (R, M, V, S, n)`` in points and ``correct (R, V, S, n) bool`` (variant 0 is the
        baseline; correctness is the model's, shared by its cells).
    """
    sc = scenario
    R, M, V, S, n = replications, sc.n_cells, sc.n_variants, sc.n_seeds, sc.n_images
    delta = np.zeros((M, V))
    delta[0, 1] = sc.difference
    scores = (_BASE + sc.image_sd * rng.standard_normal((R, 1, 1, 1, n))
              + sc.seed_sd * rng.standard_normal((R, M, V, S, 1)) + delta[None, :, :, None, None]
              + sc.noise_sd * rng.standard_normal((R, M, V, S, n)))
    correct = rng.random((R, V, S, n)) < sc.accuracy
    return scores, correct


def simulated_calls(scores: np.ndarray, correct: np.ndarray, alpha: float, min_seeds: int) -> np.ndarray:
    """The verdict's calls ``(R, M, V − 1)`` of simulated evaluations."""
    matched = correct[:, None, 1:] & correct[:, None, :1]  # (R, 1, V-1, S, n): both models correct
    d = scores[:, :, 1:] - scores[:, :, :1]  # (R, M, V-1, S, n)
    count = matched.sum(-1)  # (R, 1, V-1, S)
    seed_diff = (d * matched).sum(-1) / np.maximum(count, 1)  # (R, M, V-1, S)
    R, M, W, S = seed_diff.shape
    p = t_test_p(seed_diff).reshape(R, M * W)  # one family per replication
    calls = call_rule(seed_diff.mean(-1).reshape(R, M * W), holm(p), S, alpha=alpha, min_seeds=min_seeds)
    return calls.reshape(R, M, W)


def simulate(scenario: Scenario, *, replications: int = 1000, seed: int = 0, alpha: float = ALPHA,
             min_seeds: int = MIN_SEEDS, chunk: int = 100) -> dict[str, Any]:
    """False-call and detection rates of the verdict rule in ``scenario``.

    Args:
        scenario: the simulated evaluation.
        replications: simulated evaluations R (default 1000).
        seed: seed of ``numpy.random.default_rng`` (default 0).
        alpha: family-wise level of the calls.
        min_seeds: seeds a call needs.
        chunk: replications simulated at once (memory: ``chunk · M · V · S · n`` floats).

    Returns:
        ``{"scenario", "replications", "seed", "false_call_rate"`` (share of null comparisons
        called), ``"familywise_false_call_rate"`` (share of replications with a null comparison
        called), ``"power"`` (share of replications calling the first comparison in the true
        direction; ``None`` under the null), ``"wrong_direction_rate"`` (``None`` under the null)
        and each rate's ``<name>_mcse``.

    Raises:
        ValueError: a bad option.
    """
    replications = check_int("replications", replications, minimum=1)
    chunk = check_int("chunk", chunk, minimum=1)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    shares, family, detected, wrong = [], [], [], []  # per replication
    for start in range(0, replications, chunk):
        size = min(chunk, replications - start)
        scores, correct = simulate_scores(scenario, size, rng)
        calls = simulated_calls(scores, correct, alpha, min_seeds).reshape(size, -1)  # (r, family)
        called = calls != "not shown"
        is_null = np.ones(calls.shape[1], dtype=bool)
        if scenario.difference != 0.0:
            is_null[0] = False
            truth = "higher" if scenario.difference > 0 else "lower"
            detected.append(calls[:, 0] == truth)
            wrong.append(called[:, 0] & (calls[:, 0] != truth))
        if is_null.any():
            shares.append(called[:, is_null].mean(axis=1))
            family.append(called[:, is_null].any(axis=1))
    rates: dict[str, np.ndarray | None] = {
        "false_call_rate": np.concatenate(shares) if shares else None,
        "familywise_false_call_rate": np.concatenate(family) if family else None,
        "power": np.concatenate(detected) if detected else None,
        "wrong_direction_rate": np.concatenate(wrong) if wrong else None,
    }
    out: dict[str, Any] = {"scenario": scenario.to_dict(), "replications": replications, "seed": seed,
                           "alpha": alpha, "min_seeds": min_seeds}
    for name, per_replication in rates.items():
        if per_replication is None:
            out[name] = out[f"{name}_mcse"] = None
            continue
        # the comparisons of one replication share the baseline models: the replication is the trial
        error = float(per_replication.std(ddof=1)) / math.sqrt(replications) if replications > 1 else math.nan
        out[name] = round(float(per_replication.mean()), 6)
        out[f"{name}_mcse"] = round(error, 6)
    return out


def interval_coverage(scenario: Scenario, *, replications: int = 400, seed: int = 0, n_resamples: int = 1000,
                      confidence: float = 0.95) -> dict[str, Any]:
    """How often the verdict's intervals of the first comparison cover its true difference.

    Per replication: the matched per-image differences of each seed, then
    :func:`~.seed_stats.hierarchical_bootstrap` (the ``ci`` of the verdict) and the t-interval
    of the seed differences (``ci_t``).

    Returns:
        ``{"scenario", "replications", "n_resamples", "hierarchical", "hierarchical_mcse", "t", "t_mcse"}``
        (coverage rates).
    """
    from .seed_stats import hierarchical_bootstrap, seed_t_test

    replications = check_int("replications", replications, minimum=2)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    covered: dict[str, list[bool]] = {"hierarchical": [], "t": []}
    for r in range(replications):
        scores, correct = simulate_scores(scenario, 1, rng)
        matched = correct[0, 1] & correct[0, 0]  # (S, n)
        d = scores[0, 0, 1] - scores[0, 0, 0]  # (S, n)
        groups = [d[s][matched[s]] for s in range(scenario.n_seeds)]
        ci = hierarchical_bootstrap(groups, n_resamples=n_resamples, seed=r, confidence=confidence)
        t = seed_t_test([g.mean() for g in groups], confidence=confidence)
        covered["hierarchical"].append(ci.low <= scenario.difference <= ci.high)
        covered["t"].append(t.low <= scenario.difference <= t.high)
    out: dict[str, Any] = {"scenario": scenario.to_dict(), "replications": replications, "seed": seed,
                           "n_resamples": n_resamples, "confidence": confidence}
    for name, hits in covered.items():
        rate = float(np.mean(hits))
        out[name] = round(rate, 6)
        out[f"{name}_mcse"] = round(math.sqrt(rate * (1.0 - rate) / replications), 6)
    return out
