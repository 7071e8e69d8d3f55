"""Spectral numerics of attention graphs: fundamental matrix, visits, Perron vectors, spectra.

An attention layer is read as a graph on tokens (:func:`layer_graph`): softmax's row-stochastic
``P``, pure InfSA's ``Â`` with its learned discount ``ρ``, Linear-InfSA's rank-one ``1·aᵀ``. On
that graph:

* :func:`fundamental_matrix` ``(I − γA)⁻¹`` and :func:`expected_visits` ``sᵀ(I − γA)⁻¹`` (dense,
  or matrix-free from ``q``, ``k`` for large N), :func:`absorption_check` (when the absorbing
  Markov-chain reading holds) and :func:`simulate_visits` (a Monte-Carlo check);
* :func:`perron_vector`, :func:`eigenvalue_spectrum`, :func:`spectral_radius`, and
  :func:`linear_perron_estimate` (Linear-InfSA's ``a``);
* across layers: :func:`neumann_across_layers`;
* per layer and head of one image: :func:`layer_spectra`; over a data set: :func:`eigencheck`.

The maps built on these numerics (visits, Neumann, Perron, …) are methods of
:mod:`infsa_viz.maps`. Reference: Roffo & Palmer, *Infinite Self-Attention*, arXiv 2603.00175.
"""

from ..model.operators import (
    DenseOperator,
    InfSAOperator,
    RankOneOperator,
    SoftmaxOperator,
    SpectralOperator,
    as_operator,
    mean_over_heads,
)
from .eigencheck import cosine_similarity, eigencheck, gaussian_baseline, perron_cosines
from .graph import MATRICES, UNLEARNED_GAMMA, Discount, layer_graph, resolve_discount
from .layers import NeumannResult, neumann_across_layers
from .markov import (
    AbsorptionResult,
    VisitResult,
    absorption_check,
    expected_visits,
    fundamental_matrix,
    start_vector,
)
from .montecarlo import MonteCarloResult, simulate_visits
from .perron import PerronResult, eigenvalue_spectrum, linear_perron_estimate, perron_vector
from .radius import check_gamma, collatz_wielandt_bounds, gamma_margin, spectral_radius
from .summary import LayerSpectrum, layer_spectra

__all__ = [
    "UNLEARNED_GAMMA",
    "Discount",
    "MATRICES",
    "AbsorptionResult",
    "DenseOperator",
    "InfSAOperator",
    "LayerSpectrum",
    "MonteCarloResult",
    "NeumannResult",
    "PerronResult",
    "RankOneOperator",
    "SoftmaxOperator",
    "SpectralOperator",
    "VisitResult",
    "absorption_check",
    "as_operator",
    "check_gamma",
    "gamma_margin",
    "collatz_wielandt_bounds",
    "cosine_similarity",
    "eigencheck",
    "eigenvalue_spectrum",
    "expected_visits",
    "fundamental_matrix",
    "gaussian_baseline",
    "layer_graph",
    "resolve_discount",
    "layer_spectra",
    "linear_perron_estimate",
    "mean_over_heads",
    "neumann_across_layers",
    "perron_cosines",
    "perron_vector",
    "simulate_visits",
    "spectral_radius",
    "start_vector",
]
