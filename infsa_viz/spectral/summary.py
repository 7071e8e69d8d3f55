"""Per layer and head of one image: eigenvalues, the absorbing-chain check and the
Linear-vs-Perron cosine (what the app's spectral page shows, reachable from a script)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..model.capture import AttentionRecord
from .eigencheck import perron_cosines
from .graph import Matrix, layer_graph
from .markov import absorption_check
from .perron import eigenvalue_spectrum

__all__ = ["LayerSpectrum", "layer_spectra"]


@dataclass(frozen=True, eq=False)
class LayerSpectrum:
    """The graph of one layer and head for one image.

    Attributes:
        eigenvalues: complex ``(N,)``, by decreasing modulus.
        spectral_radius: largest modulus.
        gamma: discount (:func:`~infsa_viz.spectral.graph.resolve_discount`: the learned ``ρ``, or
            the default for layers without one).
        absorption_valid_share: share of rows with ``γ·Σ_j A_ij ≤ 1``.
        min_absorption: smallest ``1 − γ·Σ_j A_ij``.
        cosine_left / cosine_right: cosine between Linear-InfSA's ``a`` and the dense left / right
            Perron vector of ``Â`` from the layer's ``q``, ``k`` (head ``"mean"``: mean over heads).
    """

    layer: int
    head: int | str
    variant: str
    matrix: str
    eigenvalues: np.ndarray
    spectral_radius: float
    gamma: float
    absorption_valid_share: float
    min_absorption: float
    cosine_left: float
    cosine_right: float

    def row(self) -> dict[str, Any]:
        """A flat JSON-able row (no eigenvalues)."""
        return {"layer": self.layer, "head": str(self.head), "variant": self.variant, "matrix": self.matrix,
                "spectral_radius": self.spectral_radius, "gamma": self.gamma,
                "gamma_x_radius": self.gamma * self.spectral_radius,
                "absorption_valid_share": self.absorption_valid_share, "min_absorption": self.min_absorption,
                "cosine_left": self.cosine_left, "cosine_right": self.cosine_right}


def layer_spectra(records: Sequence[AttentionRecord], *, matrix: Matrix = "native",
                  image: int = 0) -> list[LayerSpectrum]:
    """Spectrum, absorption check and Linear-vs-Perron cosine of every layer × (head mean, heads).

    Args:
        records: one forward's records (:func:`~infsa_viz.model.capture.capture_attention`).
        matrix: ``"native"`` (what each layer applies) or ``"infsa"`` (``Â`` from its q, k).
        image: which image of the batch (default 0).

    Returns:
        One :class:`LayerSpectrum` per layer and head, the head mean first.
    """
    out = []
    for record in records:
        q, k = record.q[image : image + 1], record.k[image : image + 1]
        cos = perron_cosines(q, k, eps=record.eps)  # each (1, H)
        one = AttentionRecord(layer=record.layer, variant=record.variant, q=q, k=k, rho=record.rho,
                              num_prefix_tokens=record.num_prefix_tokens, grid=record.grid, eps=record.eps)
        for head in ["mean", *range(q.shape[1])]:
            op, discount = layer_graph(one, head=head, matrix=matrix)  # type: ignore[arg-type]
            g = discount.as_float()
            values = eigenvalue_spectrum(op)[0].numpy()  # (N,) complex, by decreasing modulus
            check = absorption_check(op, g)
            left = cos["left"][0].mean() if head == "mean" else cos["left"][0, head]
            right = cos["right"][0].mean() if head == "mean" else cos["right"][0, head]
            out.append(LayerSpectrum(
                layer=record.layer, head=head, variant=record.variant, matrix=matrix, eigenvalues=values,
                spectral_radius=float(np.abs(values).max()), gamma=g,
                absorption_valid_share=float(check.valid_share[0]), min_absorption=float(check.absorption[0].min()),
                cosine_left=float(left), cosine_right=float(right),
            ))
    return out
