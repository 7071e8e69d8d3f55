"""The verdict rule calibrated by simulation: false calls under a variant null, and power.

Each replication simulates the per-image scores of ``V`` variants × ``S`` seeds on ``n`` images,
for ``M = F · K`` cells (``F`` figures × ``K`` maps), and applies the verdict's own steps: images
matched per seed (both models correct), one mean difference per seed,
:func:`~.seed_stats.t_test_p`, :func:`~.paired.holm` across the family of ``M · (V − 1)``
comparisons and :func:`~.seed_stats.call_rule`. The score of image ``i`` for the model of variant
``v`` and seed ``s`` in cell ``m = (f, k)`` is (points)::

    y = 60 + a_i + u[m, v, s] + δ[m, v] + e[m, v, s, i]
    a_i ~ N(0, image_sd²)        the image's difficulty, shared by every model
    u   ~ N(0, seed_sd²)         how training seed s moves this model's figure ("seed-to-seed SD")
    e   ~ N(0, noise_sd²)        model × image noise (differences of two models: SD √2 · noise_sd)

and each model classifies each image correctly with probability ``accuracy`` (independently, the
same for all its cells). The cells of **one model** are correlated as the verdict's are: ``u``
and ``e`` of two cells of the same model correlate by ``figure_correlation`` when they share the
figure (two maps scored by one metric) and by ``model_correlation`` across figures (each is a
shared model component plus a figure component plus the cell's own, ``√ρ_model W + √(ρ_figure −
ρ_model) X_f + √(1 − ρ_figure) Y_fk``), so the seed differences of two comparisons correlate by
the same amounts; the two variants' comparisons share the baseline (softmax) model of the seed.
δ is 0 everywhere (the null) except, for power, ``δ = difference`` in the first comparison (one
true effect among ``M · (V − 1) − 1`` null ones, the hardest case for Holm). Rates come with
their Monte-Carlo standard error (the sd of the per-replication outcome over ``√R``; the
comparisons of one replication share the baseline models, so the replication is the trial).

Example:
    >>> result = simulate(Scenario(n_seeds=3, seed_sd=3.0, n_images=50, n_maps=2), replications=50, seed=0)
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
from .paired import holm
from .seed_stats import ALPHA, MIN_SEEDS, call_rule, t_test_p

__all__ = ["Scenario", "interval_coverage", "seed_differences", "simulate", "simulate_scores", "simulated_calls"]

_BASE = 60.0


@dataclass(frozen=True)
class Scenario:
    """One simulated verdict (see the module docstring for the model).

    Attributes:
        n_variants: variants, the baseline included (default 3).
        n_seeds: training seeds per variant (default 6).
        n_images: test images (default 500).
        n_maps: maps K (default 1; the verdict has 5).
        n_figures: figures F (default 1; the verdict has 3): ``F · K`` cells.
        figure_correlation: correlation of two cells of one model that share the figure (default 0).
        model_correlation: correlation of two cells of one model across figures (default 0; at most
            ``figure_correlation``).
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
    n_maps: int = 1
    n_figures: int = 1
    figure_correlation: float = 0.0
    model_correlation: float = 0.0
    seed_sd: float = 0.0
    difference: float = 0.0
    image_sd: float = 15.0
    noise_sd: float = 14.0
    accuracy: float = 0.8

    def __post_init__(self) -> None:
        check_int("n_variants", self.n_variants, minimum=2)
        check_int("n_seeds", self.n_seeds, minimum=2)
        check_int("n_images", self.n_images, minimum=2)
        check_int("n_maps", self.n_maps, minimum=1)
        check_int("n_figures", self.n_figures, minimum=1)
        if not 0.0 <= check_float("model_correlation", self.model_correlation) <= check_float(
                "figure_correlation", self.figure_correlation) <= 1.0:
            raise ValueError(f"figure_correlation={self.figure_correlation!r}, model_correlation="
                             f"{self.model_correlation!r} are invalid; expected 0 <= model_correlation <= "
                             "figure_correlation <= 1")
        for name in ("seed_sd", "image_sd", "noise_sd"):
            check_float(name, getattr(self, name), minimum=0.0)
        check_float("difference", self.difference)
        if not 0.0 < check_float("accuracy", self.accuracy) <= 1.0:
            raise ValueError(f"accuracy={self.accuracy!r} is invalid; expected 0 < accuracy <= 1")

    @property
    def n_cells(self) -> int:
        """Figure × map cells."""
        return self.n_figures * self.n_maps

    @property
    def family(self) -> int:
        """Comparisons in the Holm family: cells × non-baseline variants."""
        return self.n_cells * (self.n_variants - 1)

    def seed_difference_sd(self) -> float:
        """The SD of one seed's difference between two models (points), at the expected number of
        matched images: ``√(2 seed_sd² + 2 noise_sd² / (n · accuracy²))`` (the image difficulty cancels)."""
        return math.sqrt(2.0 * self.seed_sd ** 2 + 2.0 * self.noise_sd ** 2 / (self.n_images * self.accuracy ** 2))

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "family": self.family}


def _correlated(scenario: Scenario, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """``(R, M, *shape)`` standard normals, cells correlated within a model as :class:`Scenario` says
    (``shape`` holds the model axes V, S and the image axis)."""
    sc = scenario
    R, F, K = shape[0], sc.n_figures, sc.n_maps
    rest = shape[1:]
    out = math.sqrt(1.0 - sc.figure_correlation) * rng.standard_normal((R, F, K, *rest))
    if sc.figure_correlation > sc.model_correlation:
        out += math.sqrt(sc.figure_correlation - sc.model_correlation) * rng.standard_normal((R, F, 1, *rest))
    if sc.model_correlation > 0.0:
        out += math.sqrt(sc.model_correlation) * rng.standard_normal((R, 1, 1, *rest))
    return out.reshape(R, F * K, *rest)


def _truth(scenario: Scenario) -> np.ndarray:
    """``(M, V)`` true differences from the baseline: ``difference`` in the first comparison, else 0."""
    delta = np.zeros((scenario.n_cells, scenario.n_variants))
    delta[0, 1] = scenario.difference
    return delta


def simulate_scores(scenario: Scenario, replications: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Per-image scores and correct flags of ``replications`` simulated evaluations.

    Returns:
        ``scores (R, M, V, S, n)`` in points and ``correct (R, V, S, n) bool`` (variant 0 is the
        baseline; correctness is the model's, shared by its cells).
    """
    sc = scenario
    R, M, V, S, n = replications, sc.n_cells, sc.n_variants, sc.n_seeds, sc.n_images
    delta = _truth(sc)
    scores = (_BASE + sc.image_sd * rng.standard_normal((R, 1, 1, 1, n))
              + sc.seed_sd * _correlated(sc, rng, (R, V, S, 1)) + delta[None, :, :, None, None]
              + sc.noise_sd * _correlated(sc, rng, (R, V, S, n)))
    correct = rng.random((R, V, S, n)) < sc.accuracy
    return scores, correct


def seed_differences(scores: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """Each seed's mean difference (variant − baseline) on its matched images, ``(R, M, V − 1, S)``."""
    matched = correct[:, None, 1:] & correct[:, None, :1]  # (R, 1, V-1, S, n): both models correct
    d = scores[:, :, 1:] - scores[:, :, :1]  # (R, M, V-1, S, n)
    count = matched.sum(-1)  # (R, 1, V-1, S)
    return (d * matched).sum(-1) / np.maximum(count, 1)  # (R, M, V-1, S)


def simulated_calls(scores: np.ndarray, correct: np.ndarray, alpha: float, min_seeds: int) -> np.ndarray:
    """The verdict's calls ``(R, M, V − 1)`` of simulated evaluations."""
    return _calls(seed_differences(scores, correct), alpha, min_seeds)


def _calls(seed_diff: np.ndarray, alpha: float, min_seeds: int) -> np.ndarray:
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
        direction; ``None`` under the null), ``"wrong_direction_rate"`` (``None`` under the null),
        ``"simultaneous_coverage"`` (share of replications in which every comparison's
        simultaneous t-interval at ``1 − alpha / m`` covers its true difference) and each rate's
        ``<name>_mcse``.

    Raises:
        ValueError: a bad option.
    """
    replications = check_int("replications", replications, minimum=1)
    chunk = check_int("chunk", chunk, minimum=1)
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    from scipy.stats import t as student

    shares, family, detected, wrong, covered = [], [], [], [], []  # per replication
    S, m = scenario.n_seeds, scenario.family
    critical = float(student.ppf(1.0 - alpha / (2.0 * m), S - 1))  # the simultaneous t-interval's
    truth_delta = _truth(scenario)[:, 1:]  # (M, V-1)
    for start in range(0, replications, chunk):
        size = min(chunk, replications - start)
        scores, correct = simulate_scores(scenario, size, rng)
        diff = seed_differences(scores, correct)  # (r, M, V-1, S)
        half = critical * diff.std(axis=-1, ddof=1) / math.sqrt(S)
        covered.append((np.abs(diff.mean(-1) - truth_delta) <= half).reshape(size, -1).all(axis=1))
        calls = _calls(diff, alpha, min_seeds).reshape(size, -1)  # (r, family)
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
        "simultaneous_coverage": np.concatenate(covered),
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
