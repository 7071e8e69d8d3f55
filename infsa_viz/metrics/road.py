"""ROAD: MoRF / LeRF with noisy linear imputation instead of a constant baseline (Rong, Leemann,
Borisov, Kasneci & Kasneci, "A Consistent and Efficient Evaluation Strategy for Attribution
Methods", ICML 2022).

A constant fill leaks the removed region's shape to the model (the fill itself is a signal);
ROAD fills each removed pixel with the weighted mean of its 8 neighbours (weight 1/6 for the 4
direct ones, 1/12 for the diagonals; neighbours outside the image are left out), solved jointly
for all removed pixels as one sparse linear system, then adds Gaussian noise to the filled
pixels. A linear ramp is filled exactly (a harmonic function of the stencil).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .._checks import check_float, check_int
from .perturbation import patch_ranks
from .removal import check_removal_inputs, resolve_device, trapezoid

__all__ = ["ROADCurves", "noisy_linear_imputation", "road_curves"]

_NEIGHBOURS = [(-1, 0, 1 / 6), (1, 0, 1 / 6), (0, -1, 1 / 6), (0, 1, 1 / 6),
               (-1, -1, 1 / 12), (-1, 1, 1 / 12), (1, -1, 1 / 12), (1, 1, 1 / 12)]


def _impute_one(image: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``image (C, H, W)`` with the ``mask (H, W)`` pixels solved from the neighbour equations."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.linalg import spsolve

    C, H, W = image.shape
    unknown = np.flatnonzero(mask.ravel())
    if unknown.size == 0:
        return image.copy()
    index = np.full(H * W, -1)
    index[unknown] = np.arange(unknown.size)
    ys, xs = np.divmod(unknown, W)
    flat = image.reshape(C, -1)
    rows, cols, vals = [np.arange(unknown.size)], [np.arange(unknown.size)], []
    diagonal = np.zeros(unknown.size)
    rhs = np.zeros((unknown.size, C))
    for dy, dx, weight in _NEIGHBOURS:
        ny, nx = ys + dy, xs + dx
        inside = (ny >= 0) & (ny < H) & (nx >= 0) & (nx < W)
        eq = np.flatnonzero(inside)
        neighbour = ny[eq] * W + nx[eq]
        diagonal[eq] += weight
        solved = index[neighbour] >= 0
        rows.append(eq[solved])
        cols.append(index[neighbour[solved]])
        vals.append(np.full(int(solved.sum()), -weight))
        np.add.at(rhs, eq[~solved], weight * flat[:, neighbour[~solved]].T)
    matrix = coo_matrix((np.concatenate([diagonal, *vals]), (np.concatenate(rows), np.concatenate(cols))),
                        shape=(unknown.size, unknown.size)).tocsc()
    solution = spsolve(matrix, rhs).reshape(unknown.size, C)
    out = flat.copy()
    out[:, unknown] = solution.T
    return out.reshape(C, H, W)


def noisy_linear_imputation(images: Tensor, masks: Any, *, noise: float = 0.01, seed: int = 0,
                            keys: Any = None) -> Tensor:
    """ROAD's noisy linear imputation of the ``masks`` pixels of each image.

    Args:
        images: ``(B, C, H, W)`` images (any units; the model's input space in the evaluation).
        masks: ``(B, H, W)`` bool, ``True`` = removed.
        noise: standard deviation of the Gaussian noise added to each filled pixel (default 0.01,
            in the images' units).
        seed: noise seed; image ``i`` draws from ``default_rng([seed, *keys[i]])``.
        keys: ``(B, k)`` non-negative integers naming each image's noise stream (default ``[[i]]``),
            so that an image's noise does not depend on the batch it comes in.

    Returns:
        ``(B, C, H, W) float64`` filled images (unmasked pixels unchanged).

    Example:
        >>> ramp = torch.arange(5.0).expand(1, 1, 5, 5)
        >>> mask = torch.zeros(1, 5, 5, dtype=torch.bool); mask[0, 1:4, 1:4] = True
        >>> noisy_linear_imputation(ramp, mask, noise=0.0)[0, 0, 2].tolist()
        [0.0, 1.0, 2.0, 3.0, 4.0]
    """
    x = images.detach().cpu().double().numpy()
    m = np.asarray(masks.detach().cpu() if isinstance(masks, Tensor) else masks, dtype=bool)
    if x.ndim != 4 or m.shape != (x.shape[0], *x.shape[2:]):
        raise ValueError(f"masks has shape {m.shape}; expected (B, H, W) = {(x.shape[0], *x.shape[2:])}")
    noise = check_float("noise", noise, minimum=0.0)
    seed = check_int("seed", seed, minimum=0)
    streams = np.arange(len(x))[:, None] if keys is None else np.asarray(keys, dtype=np.int64).reshape(len(x), -1)
    if (streams < 0).any():
        raise ValueError("keys must be non-negative integers")
    out = np.empty_like(x)
    for i in range(len(x)):
        out[i] = _impute_one(x[i], m[i])
        if noise > 0:
            jitter = np.random.default_rng([seed, *streams[i].tolist()]).normal(0.0, noise, size=x[i].shape)
            out[i] = np.where(m[i][None], out[i] + jitter, out[i])
    return torch.from_numpy(out)


@dataclass(frozen=True, eq=False)
class ROADCurves:
    """Probabilities ``(B, F)`` of the explained class at ``fractions`` (``0`` = clean) and the scores ``(B,)``."""

    fractions: np.ndarray
    morf: np.ndarray
    lerf: np.ndarray
    morf_aoc: np.ndarray
    lerf_auc: np.ndarray
    protocol: dict[str, Any]


def road_curves(model: nn.Module, images: Tensor, maps: Any, targets: Any, *, patch_size: int, steps: int = 10,
                noise: float = 0.01, seed: int = 0, batch_size: int = 256, image_ids: Any = None) -> ROADCurves:
    """ROAD MoRF / LeRF curves on ViT patches with noisy linear imputation.

    At ``f_k = n_k/(h·w)``, ``n_k = floor(k·h·w/K + 1/2)``, ``k = 0..K−1`` (the last step, every
    patch removed, has nothing left to impute from and is left out), the first ``n_k`` patches of
    the order are imputed; scores as :func:`~infsa_viz.metrics.morf_aoc` /
    :func:`~infsa_viz.metrics.lerf_auc`: ``100·trapz(1 − p_k/p_0, f)`` and ``100·trapz(p_k/p_0, f)``
    over ``[0, f_{K−1}]``. The noise of image ``b``'s copy at step ``k`` of order ``o`` (0 MoRF,
    1 LeRF) is drawn from ``default_rng([seed, image_ids[b], o, k])`` (``image_ids`` default
    ``0..B−1``; the evaluation passes each image's index in the data set).
    """
    images, values, labels = check_removal_inputs(model, images, maps, targets, patch_size)
    steps = check_int("steps", steps, minimum=2)
    B = images.shape[0]
    h, w = values.shape[1:]
    counts = ((2 * np.arange(steps) * h * w + steps) // (2 * steps)).astype(np.int64)  # (K,)
    fractions = counts / (h * w)
    device = resolve_device(model, images, None)
    ids = np.arange(B) if image_ids is None else np.asarray(image_ids, dtype=np.int64).reshape(B)
    out = {}
    for code, order in enumerate(("morf", "lerf")):
        ranks = patch_ranks(values, order, seed)  # (B, N)
        masks = (ranks[:, None, :] < counts[None, :, None]).reshape(B * steps, h, w)
        masks = masks.repeat(patch_size, 1).repeat(patch_size, 2)
        repeated = images.repeat_interleave(steps, 0)
        keys = np.stack([np.repeat(ids, steps), np.full(B * steps, code), np.tile(np.arange(steps), B)], 1)
        filled = noisy_linear_imputation(repeated, masks, noise=noise, seed=seed, keys=keys)
        filled = filled.to(device=device, dtype=images.dtype)
        probs = []
        with torch.inference_mode():
            for s in range(0, len(filled), batch_size):
                probs.append(torch.softmax(model(filled[s:s + batch_size]).double(), -1).cpu())
        p = torch.cat(probs).numpy().reshape(B, steps, -1)[np.arange(B), :, labels]  # (B, K)
        out[order] = p
    with np.errstate(divide="ignore", invalid="ignore"):
        p0 = out["morf"][:, :1]
        morf_ratio = np.where(p0 > 0, out["morf"] / np.where(p0 > 0, p0, 1), np.nan)
        lerf_ratio = np.where(p0 > 0, out["lerf"] / np.where(p0 > 0, p0, 1), np.nan)
    protocol = {"metric": "road", "reference": "Rong et al., ICML 2022 (ROAD)", "steps": steps,
                "fractions": fractions.round(6).tolist(), "noise": noise, "seed": seed,
                "imputation": "noisy linear: 8-neighbour mean (1/6 direct, 1/12 diagonal) solved jointly "
                              "(scipy spsolve), plus N(0, noise^2) per filled pixel, "
                              "default_rng([seed, image index, order (0 morf, 1 lerf), step])",
                "morf_aoc": "100 * trapz(1 - p_k/p_0, f_k)", "lerf_auc": "100 * trapz(p_k/p_0, f_k)"}
    return ROADCurves(fractions=fractions, morf=out["morf"], lerf=out["lerf"],
                      morf_aoc=100 * trapezoid(1 - morf_ratio, fractions), lerf_auc=100 * trapezoid(lerf_ratio, fractions),
                      protocol=protocol)
