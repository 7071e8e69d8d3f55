"""Spectral view of attention: token graphs, fundamental matrix, visits, Perron vectors, rollout.

An attention layer is read as a graph on tokens: softmax's row-stochastic ``P``, pure InfSA's
``Â`` with its learned discount ``ρ``, Linear-InfSA's rank-one ``1·aᵀ``. On that graph:

* :func:`fundamental_matrix` ``(I − γA)⁻¹`` and :func:`expected_visits` ``sᵀ(I − γA)⁻¹`` (dense,
  or matrix-free from ``q``, ``k`` for large N), :func:`absorption_check` (when the absorbing
  Markov-chain reading holds) and :func:`simulate_visits` (a Monte-Carlo check);
* :func:`perron_vector`, :func:`eigenvalue_spectrum`, :func:`spectral_radius`, and
  :func:`linear_perron_estimate` (Linear-InfSA's ``a``);
* across layers: :func:`rollout` and :func:`neumann_across_layers`;
* one call on a model: :func:`model_visits`, :func:`model_perron`, :func:`model_linear_estimate`,
  :func:`model_rollout`, :func:`model_neumann`; and :func:`eigencheck`.

Reference: Roffo & Palmer, *Infinite Self-Attention*, arXiv 2603.00175.
"""

from .eigencheck import cosine_similarity, eigencheck, gaussian_baseline, perron_cosines
from .layers import NeumannResult, fuse_heads, neumann_across_layers, rollout
from .markov import (
    AbsorptionResult,
    VisitResult,
    absorption_check,
    expected_visits,
    fundamental_matrix,
    start_vector,
)
from .model import (
    SpectralMap,
    layer_operator,
    model_linear_estimate,
    model_neumann,
    model_perron,
    model_rollout,
    model_visits,
)
from .montecarlo import MonteCarloResult, simulate_visits
from .operators import (
    DenseOperator,
    InfSAOperator,
    RankOneOperator,
    SoftmaxOperator,
    SpectralOperator,
    as_operator,
    mean_over_heads,
)
from .perron import PerronResult, eigenvalue_spectrum, linear_perron_estimate, perron_vector
from .radius import check_gamma, collatz_wielandt_bounds, spectral_radius

__all__ = [
    "AbsorptionResult",
    "DenseOperator",
    "InfSAOperator",
    "MonteCarloResult",
    "NeumannResult",
    "PerronResult",
    "RankOneOperator",
    "SoftmaxOperator",
    "SpectralMap",
    "SpectralOperator",
    "VisitResult",
    "absorption_check",
    "as_operator",
    "check_gamma",
    "collatz_wielandt_bounds",
    "cosine_similarity",
    "eigencheck",
    "eigenvalue_spectrum",
    "expected_visits",
    "fundamental_matrix",
    "fuse_heads",
    "gaussian_baseline",
    "layer_operator",
    "linear_perron_estimate",
    "mean_over_heads",
    "model_linear_estimate",
    "model_neumann",
    "model_perron",
    "model_rollout",
    "model_visits",
    "neumann_across_layers",
    "perron_cosines",
    "perron_vector",
    "rollout",
    "simulate_visits",
    "spectral_radius",
    "start_vector",
]
