"""Maps read from the token graph of each layer: expected visits, the Neumann series across
layers, Perron vectors and Linear-InfSA's estimate (numerics in :mod:`infsa_viz.spectral`).

Each method captures the model's attention once, builds the graph of one layer (or of every
layer) with :func:`~infsa_viz.spectral.graph.layer_graph`, computes over all ``N`` tokens (CLS
included) and only then drops the prefix tokens and reshapes the rest to the patch grid; maps
are not renormalised after the drop. Visits and the Neumann series rely on the absorbing-chain
reading of ``γ·A``, so their results carry a :class:`~infsa_viz.maps.base.Validity`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Sequence

import torch
from torch import Tensor

from ..estimate import TILE_BYTES, Estimate, Workload
from ..forward import ForwardRecord
from ..model.capture import AttentionRecord
from ..model.operators import SpectralOperator
from ..model.operators.base import DENSE_BUDGET
from ..spectral.graph import UNLEARNED_GAMMA, Discount, check_head, layer_graph
from ..spectral.layers import neumann_across_layers
from ..spectral.markov import absorption_check, expected_visits
from ..spectral.perron import perron_vector
from .base import MapMethod, Validity, register, select_layer, tokens_to_grid

__all__ = ["UNLEARNED_GAMMA", "LinearEstimate", "Neumann", "Perron", "Visits", "start_row"]

def start_row(start: str, record: AttentionRecord) -> str:
    """Resolve ``"auto"`` to ``"cls"`` (model with a CLS token) or ``"uniform"``; check the others."""
    if start not in ("auto", "cls", "uniform"):
        raise ValueError(f"start={start!r} must be 'auto', 'cls' or 'uniform'")
    if start == "auto":
        return "cls" if record.num_prefix_tokens else "uniform"
    if start == "cls" and not record.num_prefix_tokens:
        raise ValueError("start='cls' needs a model with a CLS token (pool='cls'); use start='uniform'")
    return start


@contextmanager
def _at_layer(record: AttentionRecord) -> Iterator[None]:
    """Name the layer in a refusal of its numerics (a NaN/Inf graph, a singular solve, no Perron vector)."""
    try:
        yield
    except ValueError as error:
        raise ValueError(f"layer {record.layer} ({record.variant}): {error}") from None


def _head_share(record: AttentionRecord, options: dict[str, Any]) -> Tensor:
    """``(B,)`` share of (head, row) pairs with ``γ_h·Σ_j A^h_ij ≤ 1``, each head with its own γ."""
    shares = []
    for h in range(record.q.shape[1]):
        op, discount = layer_graph(record, head=h, matrix=options["matrix"], block_size=options["block_size"],
                                   gamma=options["gamma"])
        shares.append(absorption_check(op, discount.value).valid_share)
    return torch.stack(shares, -1).float().mean(-1)


def _validity(records: Sequence[AttentionRecord], graphs: Sequence[tuple[SpectralOperator, Discount]],
              options: dict[str, Any]) -> Validity:
    """Row-wise absorbing-chain check of each layer's graph the map used (and, for the head mean,
    of every head's own graph)."""
    checks = [absorption_check(op, discount.value) for op, discount in graphs]
    rows = torch.stack([c.valid_share for c in checks], -1).float()  # (B, L)
    heads = rows if options["head"] != "mean" else torch.stack([_head_share(r, options) for r in records], -1)
    return Validity(
        layers=[r.layer for r in records],
        row_share=rows,
        head_row_share=heads,
        max_row_mass=torch.stack([1.0 - c.absorption.amin(-1) for c in checks], -1).float(),  # max_i γ·Σ_j A_ij
        gamma=torch.stack([c.gamma for c in checks], -1).float(),
    )


def _graph_estimate(work: Workload, *, solver: str, dense_limit: int, vectors: float, what: str,
                    matrix_free: str, copies: int) -> Estimate:
    """One forward, every layer's q, k, then one layer's graph: solved densely (``copies`` float64
    ``(B, N, N)`` matrices: the graph and its factors) where ``solver`` is dense or ``"auto"`` picks it (at most
    :data:`DENSE_BUDGET` numbers and ``N ≤ dense_limit``), else matrix-free (``vectors`` float64
    vectors of length N per image and head, and one tile)."""
    base = work.forward() + work.capture()
    dense = solver == "dense" or (solver == "auto" and work.tokens <= dense_limit
                                  and work.batch * work.tokens**2 <= DENSE_BUDGET)
    if dense:
        return Estimate(base + work.square() + work.square(copies, heads=False, itemsize=8),
                        f"every layer's q, k, a (B, H, N, N) matrix and the dense (B, N, N) {what}",
                        lower=f"solver={matrix_free!r} (matrix-free)" if solver == "dense" else "")
    return Estimate(base + TILE_BYTES + work.vectors(vectors * work.heads * 2),
                    f"every layer's q, k and the {what} from q, k in tiles (matrix-free)")


def _gamma_value(gamma: Any) -> float | list[float]:
    g = torch.as_tensor(gamma).detach().flatten()
    return float(g[0]) if bool((g == g[0]).all()) else g.tolist()


@register
class Visits(MapMethod):
    """Expected visits ``sᵀ(I − γA)⁻¹`` of one layer's graph, from the CLS token (or uniform).

    ``γ`` defaults to the layer's learned ``ρ`` (:data:`UNLEARNED_GAMMA` for softmax layers).
    """

    name = "visits"
    family = "spectral"
    description = "expected visits s^T (I - gamma A)^-1 of one layer's graph"
    reference = "Kemeny & Snell, Finite Markov Chains (1960); Roffo & Palmer, arXiv 2603.00175"
    defaults = {"layer": -1, "head": "mean", "gamma": None, "start": "auto", "matrix": "native",
                "include_start": True, "solver": "auto", "tol": 1e-10, "block_size": None}
    per_layer = True
    reads_attention = True
    reads_operator = True
    cost = "1 forward; a dense solve (N ≤ 2048) or GMRES on matrix-free products"

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        return _graph_estimate(work, solver=options["solver"], dense_limit=2048, vectors=52,
                               what="solve of (I - gamma A) x = s", matrix_free="gmres", copies=1)

    def _compute(self, forward, options):
        records = forward.attention
        record = select_layer(records, options["layer"])
        op, discount = layer_graph(record, head=options["head"], matrix=options["matrix"],
                                   block_size=options["block_size"], gamma=options["gamma"])
        with _at_layer(record):
            result = expected_visits(op, discount.value, start_row(options["start"], record),
                                     include_start=options["include_start"], solver=options["solver"],
                                     tol=options["tol"])
        metadata = {**result.metadata(), "layer": record.layer, "variant": record.variant,
                    "gamma": _gamma_value(result.gamma), "gamma_source": discount.source}
        validity = _validity([record], [(op, discount)], options)
        return tokens_to_grid(result.visits, record), metadata, validity


@register
class Neumann(MapMethod):
    """Neumann series across layers ``sᵀ Σ_t (γ₁⋯γ_t) A⁽ᵗ⁾⋯A⁽¹⁾`` (Horner, vector products only)."""

    name = "neumann"
    family = "spectral"
    description = "Neumann series across layers s^T sum_t gamma^t A(t)...A(1)"
    reference = "Roffo & Palmer, arXiv 2603.00175 (the stacked-layer series)"
    defaults = {"gamma": None, "head": "mean", "start": "auto", "matrix": "native", "include_start": False,
                "block_size": None}
    reads_attention = True
    reads_operator = True
    cost = "1 forward; L matrix-free row-vector products"

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        return Estimate(work.forward() + work.capture() + TILE_BYTES + work.vectors(4 * work.heads * 2),
                        "one forward, every layer's q, k and row vectors through the layers in tiles (matrix-free)")

    def _compute(self, forward, options):
        records = forward.attention
        start = start_row(options["start"], records[0])
        graphs = [layer_graph(r, head=options["head"], matrix=options["matrix"], block_size=options["block_size"],
                              gamma=options["gamma"]) for r in records]
        result = neumann_across_layers([op for op, _ in graphs], [d.value for _, d in graphs], start,
                                       include_start=options["include_start"])
        metadata = {**result.metadata(), "variants": [r.variant for r in records],
                    "gamma_source": sorted({d.source for _, d in graphs})}
        validity = _validity(records, graphs, options)
        return tokens_to_grid(result.vector, records[0]), metadata, validity


@register
class Perron(MapMethod):
    """Perron vector of one layer's graph (left: the stationary distribution for softmax)."""

    name = "perron"
    family = "spectral"
    description = "dense left Perron vector of one layer's graph"
    reference = "Perron–Frobenius; Roffo & Palmer, arXiv 2603.00175"
    defaults = {"layer": -1, "head": "mean", "side": "left", "matrix": "native", "normalize": "sum",
                "solver": "auto", "block_size": None}
    per_layer = True
    reads_attention = True
    reads_operator = True
    cost = "1 forward; closed form (rank one), LAPACK eig (N ≤ 1024) or matrix-free power iteration"

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        return _graph_estimate(work, solver=options["solver"], dense_limit=1024, vectors=4, what="eigenproblem",
                               matrix_free="power", copies=3)

    def _compute(self, forward, options):
        records = forward.attention
        record = select_layer(records, options["layer"])
        op, _ = layer_graph(record, head=options["head"], matrix=options["matrix"],
                            block_size=options["block_size"])
        with _at_layer(record):
            result = perron_vector(op, side=options["side"], normalize=options["normalize"], method=options["solver"])
        metadata = {**result.metadata(), "layer": record.layer, "variant": record.variant,
                    "eigenvalue": result.eigenvalue.tolist()}
        return tokens_to_grid(result.vector, record), metadata, None


@register
class LinearEstimate(MapMethod):
    """Linear-InfSA's Perron estimate ``a`` from one layer's ``q``, ``k`` (any variant), O(N·D).

    ``head="mean"`` averages the heads' ``a`` (each sums to 1, so the mean does too).
    """

    name = "linear_estimate"
    family = "spectral"
    description = "Linear-InfSA's Perron estimate a from one layer's q, k"
    reference = "Roffo & Palmer, arXiv 2603.00175 (Linear-InfSA)"
    defaults = {"layer": -1, "head": "mean"}
    per_layer = True
    reads_attention = True
    reads_operator = True
    cost = "1 forward; O(N·D)"

    def estimate(self, work: Workload, options: dict[str, Any]) -> Estimate:
        return Estimate(work.forward() + work.capture() + work.vectors(2 * work.heads),
                        "one forward, every layer's q, k and the (B, H, N) weights a")

    def _compute(self, forward: ForwardRecord, options: dict[str, Any]) -> tuple[Tensor, dict[str, Any], None]:
        records = forward.attention
        record = select_layer(records, options["layer"])
        head = options["head"]
        check_head(head, record.q.shape[1])
        a = record.linear_estimate()  # (B, H, N)
        tokens = a.mean(1) if head == "mean" else a[:, head]
        metadata = {"layer": record.layer, "variant": record.variant,
                    "matrix": "Linear-InfSA a = ReLU(q_bar k^T)/sum, from the layer's q, k",
                    "side": "left (estimate of the left Perron vector of A_hat)", "normalize": "sum"}
        return tokens_to_grid(tokens, record), metadata, None
