"""Deletion / insertion (Petsiuk et al., RISE, BMVC 2018) with a blur baseline, and positive /
negative perturbation (Chefer, Gur & Wolf, CVPR 2021), on ViT patches in map order.

* deletion: start from the image, replace the most relevant patches first by the blurred image;
  insertion: start from the blurred image, put back the most relevant patches first. The score
  is the area under the probability of the explained class over the fraction of patches
  (trapezoid); deletion lower is better, insertion higher.
* positive / negative perturbation: remove (baseline fill, default 0 = the dataset mean after
  normalisation) the most / least relevant patches first at fractions ``0, 0.1, …, 0.9`` and
  record whether the top-1 prediction is still the label; the score is the area under that
  0/1 curve divided by the fraction range (a mean accuracy; averaged over images it is the
  area under the accuracy curve); positive lower is better, negative higher.

Ties in the map are broken as in :func:`~infsa_viz.metrics.removal_order` (one seeded order).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .._checks import check_float, check_int
from .perturbation import patch_ranks, removed_counts
from .removal import check_removal_inputs, resolve_device, trapezoid

__all__ = ["DeletionInsertion", "PositiveNegative", "blurred", "deletion_insertion", "masked_probabilities",
           "positive_negative_perturbation"]

#: Chefer et al.'s removal fractions.
CHEFER_FRACTIONS = tuple(round(0.1 * k, 1) for k in range(10))


def blurred(images: Tensor, sigma: float) -> Tensor:
    """``cv2.GaussianBlur`` (``ksize`` from ``sigma``, ``BORDER_REFLECT_101``) per channel, float64."""
    import cv2

    x = images.detach().cpu().double()
    planes = x.numpy().astype(np.float32).reshape(-1, *x.shape[2:])
    out = np.stack([cv2.GaussianBlur(p, (0, 0), sigmaX=sigma, sigmaY=sigma, borderType=cv2.BORDER_REFLECT_101)
                    for p in planes])
    return torch.from_numpy(out.astype(np.float64)).reshape(x.shape)


def masked_probabilities(model: nn.Module, base: Tensor, fill: Tensor, ranks: np.ndarray, counts: np.ndarray,
                         patch_size: int, batch_size: int) -> np.ndarray:
    """Softmax of every copy ``where(rank < n, fill, base)`` for each image and count ``n``.

    Args:
        base, fill: ``(B, C, H, W)`` images on the model's device.
        ranks: ``(B, N)`` position of each patch in the order.
        counts: ``(U,)`` numbers of patches taken from ``fill``.

    Returns:
        ``(B, U, M) float64`` probabilities.
    """
    B = ranks.shape[0]
    h, w = base.shape[2] // patch_size, base.shape[3] // patch_size
    jobs = np.stack(np.meshgrid(np.arange(B), np.arange(len(counts)), indexing="ij"), -1).reshape(-1, 2)
    ranks_t = torch.from_numpy(ranks).to(base.device)
    counts_t = torch.from_numpy(np.asarray(counts)).to(base.device)
    out: list[Tensor] = []
    with torch.inference_mode():
        for start in range(0, len(jobs), batch_size):
            job = torch.from_numpy(jobs[start:start + batch_size]).to(base.device)
            b, u = job[:, 0], job[:, 1]
            mask = (ranks_t[b] < counts_t[u, None]).view(-1, 1, h, w)
            mask = mask.repeat_interleave(patch_size, 2).repeat_interleave(patch_size, 3)
            copies = torch.where(mask, fill[b], base[b])
            out.append(torch.softmax(model(copies).double(), -1).cpu())
    return torch.cat(out).numpy().reshape(B, len(counts), -1)


@dataclass(frozen=True, eq=False)
class DeletionInsertion:
    """Deletion and insertion curves ``(B, K + 1)`` at ``fractions`` and their areas ``(B,)``."""

    fractions: np.ndarray
    deletion: np.ndarray
    insertion: np.ndarray
    deletion_auc: np.ndarray
    insertion_auc: np.ndarray
    protocol: dict[str, Any]


def deletion_insertion(model: nn.Module, images: Tensor, maps: Any, targets: Any, *, patch_size: int,
                       steps: int = 20, blur_sigma: float | None = None, seed: int = 0,
                       batch_size: int = 256) -> DeletionInsertion:
    """RISE deletion and insertion curves with a Gaussian-blur baseline (Petsiuk et al. 2018).

    At step ``k`` the first ``n_k = floor(k·h·w/K + 1/2)`` patches of the most-relevant-first order
    are blurred (deletion) or clean on a blurred image (insertion); the probability of
    ``targets`` is recorded, and its trapezoid area over ``f_k = n_k/(h·w)`` is the score.

    Args:
        model: classifier in eval mode.
        images: ``(B, C, H, W)`` model inputs.
        maps: ``(B, h, w)`` maps.
        targets: ``(B,)`` the explained classes.
        patch_size: the ViT patch side.
        steps: ``K`` (default 20).
        blur_sigma: Gaussian sigma in pixels (default ``patch_size / 2``).
        seed: tie-breaking seed.
        batch_size: copies per forward pass (does not change the results).
    """
    images, values, labels = check_removal_inputs(model, images, maps, targets, patch_size)
    steps = check_int("steps", steps, minimum=1)
    sigma = patch_size / 2 if blur_sigma is None else check_float("blur_sigma", blur_sigma, positive=True)
    device = resolve_device(model, images, None)
    x = images.to(device)
    fill = blurred(images, sigma).to(device=device, dtype=images.dtype)
    ranks = patch_ranks(values, "morf", seed)
    removed = removed_counts(steps, values.shape[1] * values.shape[2])
    fractions = removed / (values.shape[1] * values.shape[2])
    rows = np.arange(len(labels))[:, None]
    deletion = masked_probabilities(model, x, fill, ranks, removed, patch_size, batch_size)[rows, :, labels[:, None]][:, 0]
    insertion = masked_probabilities(model, fill, x, ranks, removed, patch_size, batch_size)[rows, :, labels[:, None]][:, 0]
    protocol = {"metric": "deletion_insertion", "reference": "Petsiuk, Das & Saenko, RISE, BMVC 2018",
                "steps": steps, "blur_sigma": sigma, "seed": seed, "unit": f"ViT patch of {patch_size} px",
                "order": "most relevant first (descending map value), ties by default_rng([seed, 0]).permutation",
                "baseline_rule": "cv2.GaussianBlur(image, ksize=(0, 0), sigma=blur_sigma, BORDER_REFLECT_101)",
                "deletion": "first n_k patches blurred; score trapz(p_k, f_k) (lower is better)",
                "insertion": "blurred image with the first n_k patches clean; score trapz(p_k, f_k) (higher is better)",
                "probability": "softmax (float64) of the scored class"}
    return DeletionInsertion(fractions=fractions, deletion=deletion, insertion=insertion,
                             deletion_auc=trapezoid(deletion, fractions), insertion_auc=trapezoid(insertion, fractions),
                             protocol=protocol)


@dataclass(frozen=True, eq=False)
class PositiveNegative:
    """Top-1 correctness ``(B, F)`` under positive / negative perturbation, and their areas ``(B,)``."""

    fractions: np.ndarray
    positive: np.ndarray
    negative: np.ndarray
    positive_auc: np.ndarray
    negative_auc: np.ndarray
    protocol: dict[str, Any]


def positive_negative_perturbation(model: nn.Module, images: Tensor, maps: Any, labels: Any, *, patch_size: int,
                                   fractions: tuple[float, ...] = CHEFER_FRACTIONS, fill_value: float = 0.0,
                                   seed: int = 0, batch_size: int = 256) -> PositiveNegative:
    """Positive and negative perturbation (Chefer, Gur & Wolf, CVPR 2021, Sec. 4).

    At each fraction ``f`` the ``round(f·h·w)`` most (positive) or least (negative) relevant
    patches are set to ``fill_value`` and the top-1 prediction is compared with ``labels``.

    Returns:
        :class:`PositiveNegative`; areas are ``trapz(correct, f) / (f_max − f_min)``.
    """
    images, values, labels = check_removal_inputs(model, images, maps, labels, patch_size)
    grid = np.asarray(fractions, dtype=np.float64)
    if grid.ndim != 1 or len(grid) < 2 or (np.diff(grid) <= 0).any() or grid[0] < 0 or grid[-1] > 1:
        raise ValueError(f"fractions={fractions!r} must increase within [0, 1] with at least two values")
    fill_value = check_float("fill_value", fill_value)
    N = values.shape[1] * values.shape[2]
    counts = np.floor(grid * N + 0.5).astype(np.int64)
    device = resolve_device(model, images, None)
    x = images.to(device)
    fill = torch.full_like(x, fill_value)
    curves = {}
    for name, order in (("positive", "morf"), ("negative", "lerf")):
        probs = masked_probabilities(model, x, fill, patch_ranks(values, order, seed), counts, patch_size, batch_size)
        curves[name] = (probs.argmax(-1) == labels[:, None]).astype(np.float64)  # (B, F)
    span = grid[-1] - grid[0]
    protocol = {"metric": "positive_negative_perturbation", "reference": "Chefer, Gur & Wolf, CVPR 2021, Sec. 4",
                "fractions": grid.round(6).tolist(), "counts": counts.tolist(), "fill_value": fill_value,
                "seed": seed, "positive": "most relevant patches removed first; lower is better",
                "negative": "least relevant patches removed first; higher is better",
                "score": "trapz(top-1 correct, f) / (f_max - f_min): mean top-1 accuracy over the removal range"}
    return PositiveNegative(fractions=grid, positive=curves["positive"], negative=curves["negative"],
                            positive_auc=trapezoid(curves["positive"], grid) / span,
                            negative_auc=trapezoid(curves["negative"], grid) / span, protocol=protocol)
