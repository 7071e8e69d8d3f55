"""A MoRF ceiling: the model's own greedy deletion order, scored as MoRF scores a map.

MoRF (:func:`~.perturbation.perturbation_curves`) removes patches in a map's order, ``n_k`` of them
after step ``k``. The greedy oracle asks the model instead: at step ``k`` it tries, one at a time,
every patch still present on top of the patches already removed, and removes the ``g_k = n_k −
n_{k−1}`` patches whose single removal left the explained class's probability lowest (the best group
of a step is approximated by its best single patches, exactly the greedy order when ``g_k = 1``,
i.e. ``steps = h·w``). Patches are removed with the same baseline as MoRF, and ties keep the order
of MoRF's seeded tie-breaking permutation. The result is a map whose MoRF removal order *is* the
greedy order, so ``perturbation_curves(model, images, result.maps, …)`` reproduces ``result.curves``
and any MoRF score (MoRF-AOC, AOPC) of it is a ceiling that depends on the model, not on a box.

Cost, stated per image: ``Σ_{k: g_k > 0} (h·w − n_{k−1})`` candidate forwards (``steps ×``
remaining patches; 378 for the 6 × 6 grid and 20 steps, 1,512 for 12 × 12), plus the ``steps + 2``
forwards of MoRF's own curve and input checks; all batched ``batch_size`` copies at a time.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .perturbation import (
    PerturbationCurves,
    baseline_images,
    perturbation_curves,
    perturbed_probabilities,
    removed_counts,
)
from .removal import resolve_device
from .protocol import Baseline, Explained, PerturbationProtocol

__all__ = ["GreedyDeletion", "OrderSearch", "greedy_deletion", "greedy_forwards", "order_search"]

_STREAM_TIES = 0  # the tie-breaking stream of removal_order


@dataclass(frozen=True, eq=False)
class GreedyDeletion:
    """The greedy deletion oracle of a batch of images.

    Attributes:
        maps: ``(B, h, w) float64``: ``h·w − position`` of each patch in the greedy order (first
            removed highest; all distinct), a map MoRF removes in exactly that order.
        order: ``(B, h·w) int64`` flat patch indices, first removed first.
        curves: the MoRF curves of :attr:`maps` (:func:`~.perturbation.perturbation_curves`).
        forwards_per_image: candidate forwards spent per image (the greedy search alone).
        protocol: MoRF's resolved protocol plus the greedy rule (JSON-able).
    """

    maps: np.ndarray
    order: np.ndarray
    curves: PerturbationCurves
    forwards_per_image: int
    protocol: dict[str, Any]


@dataclass(frozen=True, eq=False)
class OrderSearch:
    """What a search over MoRF removal orders needs, resolved once as MoRF resolves it.

    Attributes:
        protocol: MoRF's resolved protocol (grid, steps, baseline, tie seed, batch size).
        explained: ``(B,) int64`` the explained class, whose probability is tracked.
        x: ``(B, C, H, W)`` the images on the forward device; ``fill``: their baseline images.
        perm: ``(h·w,)`` MoRF's seeded tie order.
        options: the keyword arguments of :func:`~.perturbation.perturbation_curves` it was given.
    """

    protocol: PerturbationProtocol
    explained: np.ndarray
    x: Tensor
    fill: Tensor
    perm: np.ndarray
    options: dict[str, Any]

    def finish(self, model: nn.Module, images: Tensor, targets: Any,
               position: np.ndarray) -> tuple[np.ndarray, PerturbationCurves]:
        """``(maps (B, h, w), their MoRF curves)`` of the orders ``position`` (``(B, h·w)``, each patch's
        place, first removed 0): ``h·w − position``, a map MoRF removes in exactly that order."""
        h, w = self.protocol.grid
        maps = (h * w - position).astype(np.float64).reshape(len(position), h, w)
        return maps, perturbation_curves(model, images, maps, targets, order="morf", steps=self.protocol.steps,
                                         **self.options)


def order_search(model: nn.Module, images: Tensor, targets: Any, *, steps: int, **options: Any) -> OrderSearch:
    """Check every input as :func:`~.perturbation.perturbation_curves` does (2 forwards per image) and
    resolve what a search over MoRF orders needs (``options``: its keyword arguments but ``order``)."""
    patch_size = options["patch_size"]
    B, _, H, W = images.shape if isinstance(images, Tensor) and images.ndim == 4 else (0, 0, 0, 0)
    h, w = (H // patch_size, W // patch_size) if isinstance(patch_size, int) and patch_size > 0 else (1, 1)
    check = perturbation_curves(model, images, np.zeros((B, h, w)), targets, order="morf", steps=1, **options)
    fields = {f.name for f in dataclasses.fields(PerturbationProtocol)}
    protocol = PerturbationProtocol(**{**{k: v for k, v in check.protocol.items() if k in fields},
                                       "grid": (h, w), "steps": steps})
    x = images.to(resolve_device(model, images, options["device"]))
    fill = baseline_images(images, protocol).to(device=x.device, dtype=images.dtype)
    perm = np.random.default_rng([protocol.seed, _STREAM_TIES]).permutation(h * w)  # (N,) MoRF's tie order
    return OrderSearch(protocol, check.explained, x, fill, perm, options)


def greedy_forwards(steps: int, num_patches: int) -> int:
    """Candidate forwards per image of :func:`greedy_deletion`: ``Σ_{k: g_k > 0} (N − n_{k−1})``."""
    removed = removed_counts(steps, num_patches)
    return int(sum(num_patches - removed[k - 1] for k in range(1, steps + 1) if removed[k] > removed[k - 1]))


def greedy_deletion(
    model: nn.Module,
    images: Tensor,
    targets: Any,
    *,
    patch_size: int,
    steps: int = 20,
    baseline: Baseline = "mean",
    baseline_value: float | None = None,
    blur_sigma: float | None = None,
    explained: Explained = "target",
    seed: int = 0,
    batch_size: int = 256,
    device: str | torch.device | None = None,
) -> GreedyDeletion:
    """The model's greedy MoRF order per image, as a map MoRF can score (module doc).

    Args:
        model, images, targets, patch_size, steps, baseline, baseline_value, blur_sigma, explained,
            seed, batch_size, device: as :func:`~.perturbation.perturbation_curves` (``order`` is
            MoRF); the same values give the same removal unit, baseline, steps and explained class.

    Returns:
        :class:`GreedyDeletion`.

    Raises:
        TypeError, ValueError: as :func:`~.perturbation.perturbation_curves`.
    """
    search = order_search(model, images, targets, steps=steps, patch_size=patch_size, baseline=baseline,
                          baseline_value=baseline_value, blur_sigma=blur_sigma, explained=explained, seed=seed,
                          batch_size=batch_size, device=device)
    protocol, x, fill, perm = search.protocol, search.x, search.fill, search.perm
    B, N = len(search.explained), len(perm)
    removed = removed_counts(protocol.steps, N)
    position = np.full((B, N), N, dtype=np.int64)  # greedy position of each patch; N = still present
    for k in range(1, protocol.steps + 1):
        group, before = int(removed[k] - removed[k - 1]), int(removed[k - 1])
        if group == 0:
            continue
        present = position[:, perm] == N  # (B, N) in tie order
        candidates = perm[np.nonzero(present)[1].reshape(B, N - before)]  # (B, M) flat indices, tie order
        M = candidates.shape[1]
        ranks = np.where(position < N, position, N + 1)[None].repeat(M, axis=0)  # (M, B, N): removed first
        ranks[np.arange(M)[:, None], np.arange(B)[None], candidates.T] = before  # candidate m next
        probs = perturbed_probabilities(model, x, fill, ranks, np.array([before + 1]), search.explained,
                                         protocol.patch_size, protocol.batch_size)[..., 0]  # (M, B)
        best = np.argsort(probs.T, axis=1, kind="stable")[:, :group]  # (B, g) lowest probability first
        chosen = np.take_along_axis(candidates, best, axis=1)
        position[np.arange(B)[:, None], chosen] = before + np.arange(group)[None]
    order = np.argsort(position, axis=1, kind="stable")  # (B, N)
    maps, curves = search.finish(model, images, targets, position)
    forwards = greedy_forwards(protocol.steps, N)
    return GreedyDeletion(
        maps=maps, order=order, curves=curves, forwards_per_image=forwards,
        protocol={**curves.protocol, "map": "greedy deletion oracle",
                  "greedy_rule": "at step k, each patch still present is removed alone on top of those removed "
                                 "before; the g_k = n_k - n_(k-1) whose removal leaves the scored class's "
                                 "probability lowest are removed (ties: the seeded tie order)",
                  "forwards_per_image": forwards},
    )
