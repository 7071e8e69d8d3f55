"""A layer's token graph as a linear operator: an ``N × N`` matrix applied without forming it.

Each attention class builds its own graph from ``q`` and ``k``
(:meth:`~infsa_viz.model.attention.Attention.graph`); the spectral routines of
:mod:`infsa_viz.spectral` (visits, absorption, Perron vectors, Neumann across layers) take either a
dense tensor ``(..., N, N)`` or one of these operators.

* :mod:`.base`: the interface, :class:`SpectralOperator`.
* :mod:`.dense`: :class:`DenseOperator`, :class:`RankOneOperator` (Linear-InfSA's ``1 · aᵀ``),
  :func:`mean_over_heads`, :func:`as_operator`.
* :mod:`.tiled`: :class:`InfSAOperator` and :class:`SoftmaxOperator`, from ``q`` and ``k`` in tiles.
"""

from .base import DENSE_BUDGET, SpectralOperator, compute_dtype, convergence
from .dense import DenseOperator, RankOneOperator, as_operator, mean_over_heads
from .tiled import InfSAOperator, SoftmaxOperator

__all__ = [
    "DENSE_BUDGET",
    "DenseOperator",
    "InfSAOperator",
    "RankOneOperator",
    "SoftmaxOperator",
    "SpectralOperator",
    "as_operator",
    "compute_dtype",
    "convergence",
    "mean_over_heads",
]
