"""Eigencheck: how well does Linear-InfSA's ``a`` estimate the Perron vector of ``Â``?

For each image, layer and head, ``a = linear_infsa_weights(q, k)[2]`` (what a Linear-InfSA
layer computes, O(N·D)) is compared by cosine similarity with the dense LEFT Perron vector of
``Â = ReLU(q kᵀ)/(‖ReLU(q kᵀ)‖_F + ε)`` built from the same ``q``, ``k`` (all ``N`` tokens, CLS
included). The RIGHT Perron vector is reported too, for transparency. A Gaussian baseline
(random ``q``, ``k`` with the model's ``N`` and ``D``) gives the cosine expected by chance of
structure alone.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from ..model.blockwise import EPS
from ..model.capture import capture_attention
from ..model.fingerprint import require_graph
from ..model.operators import InfSAOperator
from .perron import linear_perron_estimate, nilpotent, perron_vector

__all__ = ["REASON_TEXT", "UNDEFINED_REASONS", "cosine_similarity", "eigencheck", "gaussian_baseline",
           "perron_cosines"]

SOLVER = "LAPACK geev in float64 on one thread (infsa_viz.linalg.eig); eigenvalue with the largest real part"


#: Why a cosine is undefined (``nan``), by code; code 0 means defined. Recorded per case.
UNDEFINED_REASONS: dict[int, str] = {
    1: "estimate_zero",   # a = 0: ReLU(q_bar . k_j) = 0 for every token j (q_bar points away from every key)
    2: "affinity_zero",   # A_hat = 0: ReLU(q_i . k_j) = 0 for every pair, so there is no Perron vector
    3: "perron_degenerate",  # Â is nilpotent (ρ = 0), or the dense eigenvector is zero or not finite
}
REASON_TEXT = {
    "estimate_zero": "Linear-InfSA's a is all zero: ReLU(q_bar . k_j) = 0 for every token j, so the layer "
                     "passes no value and a has no direction",
    "affinity_zero": "A_hat is all zero: ReLU(q_i . k_j) = 0 for every pair, so it has no Perron vector",
    "perron_degenerate": "A_hat is nilpotent (its graph has no cycle, ρ = 0: no Perron vector), or the dense "
                         "Perron eigenvector is zero or not finite",
}


def cosine_similarity(x: Tensor, y: Tensor) -> Tensor:
    """Cosine of the angle between ``x`` and ``y`` along the last dim, ``(...)`` (NaN for zeros)."""
    x, y = x.double(), y.double()
    norms = torch.linalg.vector_norm(x, dim=-1) * torch.linalg.vector_norm(y, dim=-1)
    return (x * y).sum(-1) / norms


def _undefined(a: Tensor, A: Tensor, vectors: list[Tensor]) -> Tensor:
    """Reason code per case ``(...)`` (see :data:`UNDEFINED_REASONS`); 0 where the cosine is defined."""
    code = torch.zeros(a.shape[:-1], dtype=torch.int64)
    degenerate = torch.zeros_like(code, dtype=torch.bool)
    for v in vectors:
        degenerate |= ~torch.isfinite(v).all(-1) | (v == 0).all(-1)
    code[degenerate] = 3
    code[(a == 0).all(-1)] = 1
    code[(A == 0).all(-1).all(-1)] = 2
    return code


def perron_cosines(q: Tensor, k: Tensor, *, eps: float = EPS) -> dict[str, Tensor]:
    """Cosines between ``a`` and the left / right Perron vectors of ``Â``, per (..., head).

    Args:
        q: queries ``(..., N, D)``.
        k: keys ``(..., N, D)``.
        eps: as in the layer.

    Returns:
        ``{"left": (...), "right": (...), "residual": (...), "undefined": (...)}``; ``residual``
        is the larger relative eigen-residual of the two dense eigenvectors, ``undefined`` the
        reason code of each ``nan`` cosine (:data:`UNDEFINED_REASONS`; 0 = defined).
    """
    a = linear_perron_estimate(q, k, eps=eps)  # (..., N)
    A = InfSAOperator(q.double(), k.double(), eps=eps).dense()  # (..., N, N)
    zero = torch.from_numpy(nilpotent(A))  # (...): ρ(Â) = 0, no Perron vector; counted with its reason
    solvable = torch.where(zero[..., None, None], torch.ones_like(A), A)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        left = perron_vector(solvable, side="left", method="dense")
        right = perron_vector(solvable, side="right", method="dense")
    vectors = [v.vector.masked_fill(zero[..., None], float("nan")) for v in (left, right)]
    residual = torch.maximum(left.residual, right.residual).masked_fill(zero, 0.0)
    return {
        "left": cosine_similarity(a, vectors[0]),
        "right": cosine_similarity(a, vectors[1]),
        "residual": torch.nan_to_num(residual, nan=0.0),
        "undefined": _undefined(a, A, vectors),
    }


def _stats(values: np.ndarray, reasons: np.ndarray | None = None) -> dict[str, Any]:
    finite = values[np.isfinite(values)]
    undefined = {} if reasons is None else {
        name: int((reasons == code).sum()) for code, name in UNDEFINED_REASONS.items() if (reasons == code).any()}
    if finite.size == 0:
        return {"mean": None, "median": None, "min": None, "p5": None, "count": 0, "nan": int(values.size),
                "mean_undefined_as_zero": 0.0 if values.size else None, "undefined": undefined}
    return {
        "mean": float(finite.mean()),
        "median": float(np.median(finite)),
        "min": float(finite.min()),
        "p5": float(np.percentile(finite, 5)),
        "count": int(finite.size),
        "nan": int(values.size - finite.size),
        "mean_undefined_as_zero": float(np.nan_to_num(values, nan=0.0).mean()),
        "undefined": undefined,
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
    data: Any = None,
    baseline_samples: int = 256,
) -> dict[str, Any]:
    """Cosine between Linear-InfSA's ``a`` and the dense Perron vectors of ``Â``, per layer × head.

    Args:
        model: a model with :class:`~infsa_viz.model.attention.Attention` layers (any variant: ``a``
            and ``Â`` are built from each layer's recorded ``q``, ``k``).
        images: ``(B, C, H, W)``.
        layers: layer indices to check (default all).
        batch_size: images per forward pass (default 32).
        progress: wraps the iterable of batch start indices, e.g.
            ``lambda it: infsa_viz.progress.progress(it, desc="eigencheck", total=n_batches)``.
        data: recorded in the protocol (what ``images`` are, e.g. a data set description).
        baseline_samples: Gaussian-baseline samples at the model's N and D (0 to skip).

    Returns:
        JSON-ready dict: ``protocol``, ``per_layer_head`` (``left``/``right`` stats: mean,
        median, min, 5th percentile over defined cosines, the count of undefined ones by
        reason, and the mean with undefined cosines counted as 0), ``per_layer``, ``overall``,
        ``gaussian_baseline``.

    Raises:
        ValueError: on empty images, bad ``layers`` or ``batch_size``, or a chosen layer that does not compute
            the variant its class declares (:func:`~infsa_viz.model.fingerprint.require_graph`).
    """
    if images.dim() != 4 or images.shape[0] == 0:
        raise ValueError(f"images has shape {tuple(images.shape)}; expected a non-empty (B, C, H, W) batch")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size={batch_size!r} must be a positive integer")
    if layers is not None and len(layers) == 0:
        raise ValueError("layers is empty; pass None for all layers or at least one index")
    require_graph(model, layers, what="eigencheck")  # each layer must compute the variant its class declares
    found: dict[int, dict[str, list[Tensor]]] = {}
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
            for key in ("left", "right", "undefined"):
                found.setdefault(layer, {}).setdefault(key, []).append(cos[key])
            variants[layer] = record.variant
            max_residual = max(max_residual, float(cos["residual"].max()))
            shape = tuple(record.q.shape[1:])  # type: ignore[assignment]  # (H, N, D)
    num_heads, num_tokens, head_dim = shape
    per_layer_head, per_layer = [], []
    everything: dict[str, list[np.ndarray]] = {"left": [], "right": [], "undefined": []}
    for layer in sorted(found):
        arrays = {key: torch.cat(parts).numpy() for key, parts in found[layer].items()}  # each (n_images, H)
        for key, array in arrays.items():
            everything[key].append(array.ravel())
        why = arrays["undefined"]
        per_layer.append({"layer": layer, "variant": variants[layer],
                          **{side: _stats(arrays[side].ravel(), why.ravel()) for side in ("left", "right")}})
        for head in range(num_heads):
            per_layer_head.append({"layer": layer, "head": head, "variant": variants[layer],
                                   **{side: _stats(arrays[side][:, head], why[:, head]) for side in ("left", "right")}})
    merged = {key: np.concatenate(parts) for key, parts in everything.items()}
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
        "undefined": "a cosine is undefined (nan) when a vector has no direction; each case is counted under "
                     "its reason: " + "; ".join(f"{name}: {text}" for name, text in REASON_TEXT.items()),
        "aggregate": "mean/median/min/p5 over defined cosines; mean_undefined_as_zero counts undefined as 0",
        "n_images": int(images.shape[0]),
        "data": data,
        "layers": sorted(found),
        "num_heads": num_heads,
        "num_tokens": num_tokens,
        "head_dim": head_dim,
    }
    result: dict[str, Any] = {
        "protocol": protocol,
        "overall": {side: _stats(merged[side], merged["undefined"]) for side in ("left", "right")},
        "per_layer": per_layer,
        "per_layer_head": per_layer_head,
        "gaussian_baseline": gaussian_baseline(num_tokens, head_dim, samples=baseline_samples)
        if baseline_samples else None,
    }
    return result
