"""Eigencheck: how well does Linear-InfSA's ``a`` estimate the Perron vector of ``Â``?

For each image, layer and head, ``a = linear_infsa_weights(q, k)[2]`` (what a Linear-InfSA
layer computes, O(N·D)) is compared by cosine similarity with the dense LEFT Perron vector of
``Â = ReLU(q kᵀ)/(‖ReLU(q kᵀ)‖_F + ε)`` built from the same ``q``, ``k`` (all ``N`` tokens, CLS
included). The RIGHT Perron vector is reported too, for transparency. A Gaussian baseline
(random ``q``, ``k`` with the model's ``N`` and ``D``) gives the cosine expected by chance of
structure alone.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from ..attention import EPS
from ..capture import capture_attention
from .operators import InfSAOperator
from .perron import linear_perron_estimate, perron_vector

__all__ = ["cosine_similarity", "eigencheck", "gaussian_baseline", "perron_cosines"]

SOLVER = "numpy.linalg.eig (LAPACK geev) in float64; eigenvalue with the largest real part"


def cosine_similarity(x: Tensor, y: Tensor) -> Tensor:
    """Cosine of the angle between ``x`` and ``y`` along the last dim, ``(...)`` (NaN for zeros)."""
    x, y = x.double(), y.double()
    norms = torch.linalg.vector_norm(x, dim=-1) * torch.linalg.vector_norm(y, dim=-1)
    return (x * y).sum(-1) / norms


def perron_cosines(q: Tensor, k: Tensor, *, eps: float = EPS) -> dict[str, Tensor]:
    """Cosines between ``a`` and the left / right Perron vectors of ``Â``, per (..., head).

    Args:
        q: queries ``(..., N, D)``.
        k: keys ``(..., N, D)``.
        eps: as in the layer.

    Returns:
        ``{"left": (...), "right": (...), "residual": (...)}``; ``residual`` is the larger
        relative eigen-residual of the two dense eigenvectors.
    """
    a = linear_perron_estimate(q, k, eps=eps)  # (..., N)
    A = InfSAOperator(q.double(), k.double(), eps=eps).dense()  # (..., N, N)
    left = perron_vector(A, side="left", method="dense")
    right = perron_vector(A, side="right", method="dense")
    return {
        "left": cosine_similarity(a, left.vector),
        "right": cosine_similarity(a, right.vector),
        "residual": torch.maximum(left.residual, right.residual),
    }


def _stats(values: np.ndarray) -> dict[str, float | int | None]:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return {"mean": None, "median": None, "min": None, "p5": None, "count": 0, "nan": int(values.size)}
    return {
        "mean": float(finite.mean()),
        "median": float(np.median(finite)),
        "min": float(finite.min()),
        "p5": float(np.percentile(finite, 5)),
        "count": int(finite.size),
        "nan": int(values.size - finite.size),
    }


def gaussian_baseline(
    num_tokens: int, head_dim: int, *, samples: int = 256, seed: int = 0
) -> dict[str, Any]:
    """Cosine statistics for i.i.d. standard normal ``q``, ``k`` of shape ``(N, D)``.

    Both ``Â`` and ``a`` are invariant to the scale of ``q`` and ``k``, so unit variance loses
    nothing. Returns ``{"left": stats, "right": stats, "num_tokens", "head_dim", "samples", "seed"}``.
    """
    for name, value in (("num_tokens", num_tokens), ("head_dim", head_dim), ("samples", samples)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r} must be a positive integer")
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(samples, num_tokens, head_dim, generator=generator, dtype=torch.float64)
    k = torch.randn(samples, num_tokens, head_dim, generator=generator, dtype=torch.float64)
    cos = perron_cosines(q, k)
    return {
        "left": _stats(cos["left"].numpy()),
        "right": _stats(cos["right"].numpy()),
        "num_tokens": num_tokens,
        "head_dim": head_dim,
        "samples": samples,
        "seed": seed,
    }


def eigencheck(
    model: nn.Module,
    images: Tensor,
    *,
    layers: Sequence[int] | None = None,
    batch_size: int = 32,
    progress: Callable[[Iterable[int]], Iterable[int]] | None = None,
    seed: int | None = None,
    data: str | None = None,
    baseline_samples: int = 256,
) -> dict[str, Any]:
    """Cosine between Linear-InfSA's ``a`` and the dense Perron vectors of ``Â``, per layer × head.

    Args:
        model: a model with :class:`~infsa_viz.attention.Attention` layers (any variant: ``a``
            and ``Â`` are built from each layer's recorded ``q``, ``k``).
        images: ``(B, C, H, W)``.
        layers: layer indices to check (default all).
        batch_size: images per forward pass (default 32).
        progress: wraps the iterable of batch start indices, e.g.
            ``lambda it: infsa_viz.progress.progress(it, desc="eigencheck", total=n_batches)``.
        seed: recorded in the protocol (how ``images`` were drawn); not used otherwise.
        data: recorded in the protocol (what ``images`` are).
        baseline_samples: Gaussian-baseline samples at the model's N and D (0 to skip).

    Returns:
        JSON-ready dict: ``protocol``, ``per_layer_head`` (``left``/``right`` stats: mean,
        median, min, 5th percentile), ``per_layer``, ``overall``, ``gaussian_baseline``.

    Raises:
        ValueError: on empty images, bad ``layers`` or ``batch_size``.
    """
    if images.dim() != 4 or images.shape[0] == 0:
        raise ValueError(f"images has shape {tuple(images.shape)}; expected a non-empty (B, C, H, W) batch")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r} must be a positive integer")
    if layers is not None and len(layers) == 0:
        raise ValueError("layers is empty; pass None for all layers or at least one index")
    left: dict[int, list[Tensor]] = {}
    right: dict[int, list[Tensor]] = {}
    variants: dict[int, str] = {}
    max_residual = 0.0
    shape: tuple[int, int, int] = (0, 0, 0)
    starts: Iterable[int] = range(0, images.shape[0], batch_size)
    for begin in starts if progress is None else progress(starts):
        batch = images[begin : begin + batch_size]
        _, records = capture_attention(model, batch)
        chosen = list(range(len(records))) if layers is None else list(layers)
        for layer in chosen:
            if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < len(records):
                raise ValueError(f"layers contains {layer!r}; expected indices in [0, {len(records)})")
            record = records[layer]
            cos = perron_cosines(record.q, record.k, eps=record.eps)  # each (B, H)
            left.setdefault(layer, []).append(cos["left"])
            right.setdefault(layer, []).append(cos["right"])
            variants[layer] = record.variant
            max_residual = max(max_residual, float(cos["residual"].max()))
            shape = tuple(record.q.shape[1:])  # type: ignore[assignment]  # (H, N, D)
    num_heads, num_tokens, head_dim = shape
    per_layer_head, per_layer = [], []
    all_left, all_right = [], []
    for layer in sorted(left):
        lv = torch.cat(left[layer]).numpy()  # (n_images, H)
        rv = torch.cat(right[layer]).numpy()
        all_left.append(lv.ravel())
        all_right.append(rv.ravel())
        per_layer.append({"layer": layer, "variant": variants[layer], "left": _stats(lv.ravel()),
                          "right": _stats(rv.ravel())})
        for head in range(num_heads):
            per_layer_head.append({"layer": layer, "head": head, "variant": variants[layer],
                                   "left": _stats(lv[:, head]), "right": _stats(rv[:, head])})
    protocol = {
        "quantity": "cosine(a, Perron vector of A_hat) per image, layer and head",
        "estimate": "a = linear_infsa_weights(q, k)[2] from the layer's own q, k",
        "matrix": "A_hat = ReLU(q k^T) / (||ReLU(q k^T)||_F + eps) from the same q, k (float64)",
        "tokens": f"all {num_tokens} tokens (CLS included), as Linear-InfSA computes a",
        "side": "left (x^T A_hat = lambda x^T) is the check; right (A_hat x = lambda x) reported "
                "for transparency",
        "normalisation": "Perron vectors sign-fixed non-negative and normalised to sum 1; cosine is "
                         "scale-invariant",
        "solver": SOLVER,
        "tolerance": "direct solver (no iteration tolerance); max relative eigen-residual reported",
        "max_residual": max_residual,
        "n_images": int(images.shape[0]),
        "seed": seed,
        "data": data,
        "layers": sorted(left),
        "num_heads": num_heads,
        "num_tokens": num_tokens,
        "head_dim": head_dim,
    }
    result: dict[str, Any] = {
        "protocol": protocol,
        "overall": {"left": _stats(np.concatenate(all_left)), "right": _stats(np.concatenate(all_right))},
        "per_layer": per_layer,
        "per_layer_head": per_layer_head,
        "gaussian_baseline": gaussian_baseline(num_tokens, head_dim, samples=baseline_samples)
        if baseline_samples else None,
    }
    return result
