"""Monte-Carlo validator for the fundamental matrix: simulate absorbing random walks, count visits.

A check of the Markov reading, not a production estimator: with ``P = γA`` sub-stochastic, a walk
started from ``s`` moves from ``i`` to ``j`` with probability ``P_ij`` and is absorbed with
probability ``1 − Σ_j P_ij``. The mean visit counts estimate ``sᵀ(I − γA)⁻¹`` (``include_start``
counts the start, as in :func:`~infsa_viz.spectral.markov.expected_visits`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from ..model.operators import SpectralOperator, as_operator
from .markov import Start, start_vector
from .radius import GammaLike, check_gamma

__all__ = ["MonteCarloResult", "simulate_visits"]


@dataclass
class MonteCarloResult:
    """Empirical visit counts of simulated absorbing walks.

    Attributes:
        visits: ``(N,)`` mean visits per walk to each token.
        stderr: ``(N,)`` standard error of each mean (sample std / √n_walks).
        n_walks: number of simulated walks.
        mean_length: mean number of moves between tokens before absorption.
        include_start: whether the start token counts as a visit.
        seed: the seed used.
    """

    visits: Tensor
    stderr: Tensor
    n_walks: int
    mean_length: float
    include_start: bool
    seed: int

    def describe(self) -> str:
        return (
            f"{self.n_walks} simulated absorbing walks (seed {self.seed}, include_start="
            f"{self.include_start}), mean length {self.mean_length:.3g} steps"
        )


def simulate_visits(
    A: SpectralOperator | Tensor,
    gamma: GammaLike,
    *,
    start: Start = "uniform",
    n_walks: int = 20_000,
    seed: int = 0,
    include_start: bool = True,
    max_steps: int = 100_000,
) -> MonteCarloResult:
    """Simulate absorbing random walks on ``P = γA`` and count visits to each token.

    Args:
        A: one non-negative matrix ``(N, N)`` (or an unbatched operator, made dense).
        gamma: discount (float); ``P = γA`` must be sub-stochastic (rows sum to ``≤ 1``).
        start: start distribution: ``"uniform"``, ``"cls"``, an index, or a probability vector.
        n_walks: number of walks (default 20,000).
        seed: numpy random seed.
        include_start: count the start token as a visit (default ``True``).
        max_steps: a walk still running after this many steps raises ``RuntimeError``.

    Returns:
        :class:`MonteCarloResult`; compare ``visits`` with ``expected_visits(...).visits`` using
        ``stderr``.

    Raises:
        ValueError: if ``A`` is batched or negative, ``γA`` has a row sum ``> 1``, ``γ·ρ(A) ≥ 1``,
            or ``start`` is not a probability vector.
    """
    op = as_operator(A)
    if op.batch_shape:
        raise ValueError(
            f"A has batch shape {tuple(op.batch_shape)}; simulate_visits takes one (N, N) matrix"
        )
    if isinstance(n_walks, bool) or not isinstance(n_walks, int) or n_walks < 2:
        raise ValueError(f"n_walks={n_walks!r} must be an integer >= 2")
    g = float(check_gamma(op, gamma))
    P = g * op.dense().double().cpu().numpy()  # (N, N)
    n = P.shape[0]
    if (P < 0).any():
        raise ValueError("A has negative entries; a random walk needs a non-negative matrix")
    excess = P.sum(axis=1) - 1.0
    if (excess > 1e-12).any():
        raise ValueError(
            f"gamma·A has {int((excess > 1e-12).sum())} of {n} rows summing to more than 1 (max "
            f"{1 + excess.max():.6g}); the absorbing-walk reading needs a sub-stochastic matrix "
            "(see absorption_check)"
        )
    s = start_vector(start, torch.Size(), n, dtype=torch.float64).numpy()
    if (s < 0).any() or abs(s.sum() - 1.0) > 1e-9:
        raise ValueError("start must be a probability vector (non-negative, summing to 1)")
    rng = np.random.default_rng(seed)
    cumulative = np.cumsum(P, axis=1)  # (N, N); u beyond the row sum means absorption
    counts = np.zeros((n_walks, n), dtype=np.int64)
    walker = np.arange(n_walks)
    state = rng.choice(n, size=n_walks, p=s / s.sum())
    if include_start:
        np.add.at(counts, (walker, state), 1)
    steps = 0
    while walker.size:
        steps += 1
        if steps > max_steps:
            raise RuntimeError(f"{walker.size} walks not absorbed after max_steps={max_steps}")
        u = rng.random(walker.size)
        nxt = (cumulative[state] < u[:, None]).sum(axis=1)  # index n = absorbed
        alive = nxt < n
        walker, state = walker[alive], nxt[alive]
        np.add.at(counts, (walker, state), 1)
    visits = counts.mean(axis=0)
    stderr = counts.std(axis=0, ddof=1) / math.sqrt(n_walks)
    total = counts.sum(axis=1) - (1 if include_start else 0)
    return MonteCarloResult(
        visits=torch.from_numpy(visits),
        stderr=torch.from_numpy(stderr),
        n_walks=n_walks,
        mean_length=float(total.mean()),
        include_start=include_start,
        seed=seed,
    )
