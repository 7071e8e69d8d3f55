"""An estimate of MoRF's ceiling: a beam search over deletion orders, scored by the area.

MoRF-AOC (:func:`~.scores.morf_aoc`) of a removal order depends only on the nested sets ``S_k`` of
patches removed after each step ``k`` (``|S_k| = n_k``, :func:`~.perturbation.removed_counts`):
``AOC = 100·Σ_k (f_k − f_{k−1})·(1 − (p_{k−1} + p_k) / 2p_0)`` with ``f_k = n_k / N`` and ``p_k`` the
explained class's probability with ``S_k`` removed. Maximising it is minimising the weighted sum
``Σ_k c_k·p_k`` with the trapezoid weights ``c_k = (f_{k+1} − f_{k−1}) / 2`` (``c_K = (f_K − f_{K−1}) / 2``).
The greedy oracle (:mod:`.greedy_deletion`) picks each ``S_k`` by the next probability alone, one
patch at a time; this search is less myopic:

* a **beam** of the ``width`` cheapest partial orders (by their partial sum ``Σ_{j≤k} c_j·p_j``, the
  area so far, not the next probability) is kept after every step; orders that reach the same set
  are merged (the future depends on the set only), the cheaper kept;
* each order is **expanded** by probing every patch still present (one forward each, as the greedy
  step does) and trying groups of the step's ``g_k`` patches: for ``g_k = 1`` the ``expand`` best
  single patches; for ``g_k ≥ 2`` the ``g_k`` best singles, the ``expand − 1`` groups that replace the
  weakest of them by the next best singles, and one group per position of compact windows
  (:func:`window_shapes`: the window's present patches, best singles first, topped up with the best
  singles outside) — patches that matter together (two halves of a digit) but little alone, which
  the greedy step cannot see; one forward per group;
* the **greedy path** (always the best singles from the greedy order's own state) is kept in the beam,
  so the estimate is never below the greedy oracle.

It is an *estimate*: the best of the orders it tried, a lower bound on the true ceiling (the best of
all ``N!`` orders), tighter than the greedy one. Patches are removed as MoRF removes them (baseline,
steps, seeded tie order); the result is a map whose MoRF order is the best order found, so
``perturbation_curves(model, images, result.maps, …)`` reproduces ``result.curves``.

Cost, stated per image (:attr:`BeamDeletion.forwards_per_image`, counted as run): at each step with
``g_k > 0``, (states kept) × (patches still present) probes, plus (states) × (groups) where
``g_k ≥ 2``; at most :func:`beam_forwards` (``width + 1`` states), plus MoRF's own ``steps + 2``
forwards for the curve and input checks. Measured with the defaults (width 4, expand 8, 20 steps) on
shipped seed models: about 3,700–4,100 forwards per image on the 6 × 6 grid (10× the greedy
oracle's 378) and 14,600 on the 12 × 12 grid (10× its 1,512).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .._checks import check_int
from .greedy_deletion import order_search
from .perturbation import PerturbationCurves, perturbed_probabilities, removed_counts
from .protocol import Baseline, Explained, PerturbationProtocol

__all__ = ["BeamDeletion", "beam_deletion", "beam_forwards", "step_weights", "window_shapes"]


@dataclass(frozen=True, eq=False)
class BeamDeletion:
    """The beam-search estimate of MoRF's ceiling for a batch of images.

    Attributes:
        maps: ``(B, h, w) float64``: ``h·w − position`` of each patch in the best order found.
        order: ``(B, h·w) int64`` flat patch indices, first removed first.
        curves: the MoRF curves of :attr:`maps`.
        forwards_per_image: ``(B,) int64`` search forwards spent per image (probes and groups).
        protocol: MoRF's resolved protocol plus the search's rule and settings (JSON-able).
    """

    maps: np.ndarray
    order: np.ndarray
    curves: PerturbationCurves
    forwards_per_image: np.ndarray
    protocol: dict[str, Any]


def step_weights(steps: int, num_patches: int) -> np.ndarray:
    """``(K + 1,)`` trapezoid weights ``c_k`` of ``p_k`` in the area: ``AOC = 100·(1 − Σ_k c_k p_k / p_0)``."""
    f = removed_counts(steps, num_patches) / num_patches
    padded = np.concatenate([f[:1], f, f[-1:]])
    return (padded[2:] - padded[:-2]) / 2


def window_shapes(g: int) -> list[tuple[int, int]]:
    """The windows a group of ``g >= 2`` patches is drawn from: the near-square rectangles (sides
    differing by at most one, either orientation) of the smallest area ``>= g``, and the smallest square."""
    side = int(np.ceil(np.sqrt(g)))
    shapes = {(a, b) for a in range(1, side + 1) for b in (a, a + 1) if a * b >= g and a * (b - 1) < g}
    shapes |= {(side, side)} | {(b, a) for a, b in shapes}
    return sorted(shapes)


def beam_forwards(steps: int, grid: tuple[int, int], *, width: int, expand: int) -> int:
    """The most search forwards per image :func:`beam_deletion` can spend (the cost it states):
    ``Σ_k (width + 1)·(N − n_{k−1} + [g_k ≥ 2]·(expand + windows(g_k)))``."""
    h, w = grid
    N = h * w
    removed = removed_counts(steps, N)
    total = 0
    for k in range(1, steps + 1):
        g = int(removed[k] - removed[k - 1])
        if g:
            windows = sum((h - a + 1) * (w - b + 1) for a, b in window_shapes(g) if a <= h and b <= w) if g >= 2 else 0
            total += (width + 1) * (N - int(removed[k - 1]) + (expand + windows if g >= 2 else 0))
    return total


@dataclass
class _State:
    cost: float  # Σ_{j<=k} c_j p_j so far
    last: float  # p_k
    removed: np.ndarray  # (N,) bool
    order: list[int]
    greedy: bool


def beam_deletion(
    model: nn.Module,
    images: Tensor,
    targets: Any,
    *,
    patch_size: int,
    steps: int = 20,
    width: int = 4,
    expand: int = 8,
    baseline: Baseline = "mean",
    baseline_value: float | None = None,
    blur_sigma: float | None = None,
    explained: Explained = "target",
    seed: int = 0,
    batch_size: int = 256,
    device: str | torch.device | None = None,
) -> BeamDeletion:
    """The best MoRF order a beam search finds per image, as a map MoRF can score (module doc).

    Args:
        model, images, targets, patch_size, steps, baseline, baseline_value, blur_sigma, explained,
            seed, batch_size, device: as :func:`~.perturbation.perturbation_curves` (``order`` is
            MoRF); the same values give the same removal unit, baseline, steps and explained class.
        width: partial orders kept after each step (default 4), besides the greedy path.
        expand: groups tried per kept order and step (default 8).

    Returns:
        :class:`BeamDeletion`.

    Raises:
        TypeError, ValueError: as :func:`~.perturbation.perturbation_curves`; a bad ``width`` or ``expand``.
    """
    width = check_int("width", width, minimum=1)
    expand = check_int("expand", expand, minimum=1)
    if width > 64 or expand > 256:
        raise ValueError(f"width={width}, expand={expand} is too large; expected width <= 64 and expand <= 256")
    search = order_search(model, images, targets, steps=steps, patch_size=patch_size, baseline=baseline,
                          baseline_value=baseline_value, blur_sigma=blur_sigma, explained=explained, seed=seed,
                          batch_size=batch_size, device=device)
    B, N = len(search.explained), len(search.perm)
    beam = _Search(model, search.protocol, search.perm, width, expand)
    order = np.zeros((B, N), dtype=np.int64)
    forwards = np.zeros(B, dtype=np.int64)
    for b in range(B):
        order[b], forwards[b] = beam.run(search.x[b:b + 1], search.fill[b:b + 1], int(search.explained[b]))
    maps, curves = search.finish(model, images, targets, np.argsort(order, axis=1))
    return BeamDeletion(
        maps=maps, order=order, curves=curves, forwards_per_image=forwards,
        protocol={**curves.protocol, "map": "beam-search estimate of MoRF's ceiling",
                  "search": f"beam of {width} partial orders (plus the greedy path) ranked by the area so far; "
                            "each expanded by probing every present patch and trying groups of the step's size: "
                            f"the {expand} best singles (steps of one patch), else the best singles, "
                            f"{expand - 1} substitutions of the weakest and one group per compact window",
                  "width": width, "expand": expand,
                  "forwards_per_image_max": beam_forwards(search.protocol.steps, search.protocol.grid, width=width,
                                                          expand=expand)},
    )


class _Search:
    """The beam search of one image at a time (states × candidates batched per step)."""

    def __init__(self, model: nn.Module, protocol: PerturbationProtocol, perm: np.ndarray, width: int,
                 expand: int) -> None:
        self.model, self.protocol, self.perm, self.width, self.expand = model, protocol, perm, width, expand
        self.N = len(perm)
        self.removed = removed_counts(protocol.steps, self.N)
        self.weights = step_weights(protocol.steps, self.N)

    def _probs(self, x: Tensor, fill: Tensor, sets: np.ndarray, explained: int) -> np.ndarray:
        """Probability of ``explained`` with each row of ``sets`` (``(P, N)`` bool) removed → ``(P,)``."""
        ranks = np.where(sets, 0, 1)[None]  # (1, P, N): removed patches rank below the count 1
        P = len(sets)
        return perturbed_probabilities(self.model, x.expand(P, *x.shape[1:]), fill.expand(P, *fill.shape[1:]), ranks,
                                       np.array([1]), np.full(P, explained), self.protocol.patch_size,
                                       self.protocol.batch_size)[0, :, 0]

    def run(self, x: Tensor, fill: Tensor, explained: int) -> tuple[np.ndarray, int]:
        """``(order (N,), forwards)`` of the best order found for one image."""
        states = [_State(0.0, 1.0, np.zeros(self.N, dtype=bool), [], True)]
        spent = 0
        for k in range(1, self.protocol.steps + 1):
            g, before = int(self.removed[k] - self.removed[k - 1]), int(self.removed[k - 1])
            if g == 0:  # a repeated step: p_k = p_{k-1}
                for s in states:
                    s.cost += self.weights[k] * s.last
                continue
            present = [self.perm[~s.removed[self.perm]] for s in states]  # (M,) each, in tie order
            M = self.N - before
            probe = np.zeros((len(states) * M, self.N), dtype=bool)
            for i, (s, cand) in enumerate(zip(states, present, strict=True)):
                block = probe[i * M:(i + 1) * M]
                block[:] = s.removed
                block[np.arange(M), cand] = True
            singles = self._probs(x, fill, probe, explained).reshape(len(states), M)  # (S, M)
            spent += probe.shape[0]
            children, groups = [], []
            for s, cand, p in zip(states, present, singles, strict=True):
                ranked = cand[np.argsort(p, kind="stable")]
                best = np.sort(p, kind="stable")
                if g == 1:
                    for r in range(min(self.expand, M)):
                        children.append((s, [int(ranked[r])], float(best[r]), s.greedy and r == 0))
                    continue
                swaps = range(g, min(M, g - 1 + self.expand))  # the weakest of the best g replaced by the next
                tried = [list(ranked[:g])] + [[*ranked[:g - 1], ranked[r]] for r in swaps]
                tried += self._windows(g, ranked, s.removed)
                seen = set()
                for j, group in enumerate(tried):
                    key = frozenset(int(v) for v in group)
                    if len(key) != g or key in seen:
                        continue
                    seen.add(key)
                    children.append((s, [int(v) for v in group], None, s.greedy and j == 0))
                    groups.append(len(children) - 1)
            if groups:
                sets = np.zeros((len(groups), self.N), dtype=bool)
                for row, c in enumerate(groups):
                    sets[row] = children[c][0].removed
                    sets[row, children[c][1]] = True
                found = self._probs(x, fill, sets, explained)
                spent += len(groups)
                for row, c in enumerate(groups):
                    s, group, _, greedy = children[c]
                    children[c] = (s, group, float(found[row]), greedy)
            states = self._select(children, self.weights[k])
        best = min(states, key=lambda s: s.cost)
        rest = [int(v) for v in self.perm if not best.removed[v]]  # none when n_K = N
        return np.asarray(best.order + rest, dtype=np.int64), spent

    def _windows(self, g: int, ranked: np.ndarray, removed: np.ndarray) -> list[list[int]]:
        """Groups of ``g`` patches from compact windows: for each position of the near-square windows of
        the smallest area >= g, and of the smallest square, its present patches in probe order, topped
        up with the best singles outside it to ``g``."""
        h, w = self.protocol.grid
        rank = np.empty(self.N, dtype=np.int64)
        rank[ranked] = np.arange(len(ranked))
        out = []
        for a, b in window_shapes(g):
            for r in range(h - a + 1):
                for c in range(w - b + 1):
                    cells = (np.arange(r, r + a)[:, None] * w + np.arange(c, c + b)[None]).ravel()
                    cells = cells[~removed[cells]]
                    if not len(cells):
                        continue
                    inside = cells[np.argsort(rank[cells], kind="stable")][:g]
                    if len(inside) < g:  # top up with the best singles outside the window
                        inside = np.concatenate([inside, ranked[~np.isin(ranked, inside)][:g - len(inside)]])
                    out.append(inside.tolist())
        return out

    def _select(self, children: list[tuple[_State, list[int], float, bool]], weight: float) -> list[_State]:
        """The ``width`` cheapest distinct sets, and the greedy path's child."""
        merged: dict[bytes, _State] = {}
        for s, group, p, greedy in children:
            removed = s.removed.copy()
            removed[group] = True
            key = np.packbits(removed).tobytes()
            child = _State(s.cost + weight * p, p, removed, s.order + group, greedy)
            known = merged.get(key)
            if known is None or child.cost < known.cost:
                merged[key] = dataclasses.replace(child, greedy=greedy or (known is not None and known.greedy))
            elif greedy:
                known.greedy = True
        ranked = sorted(merged.values(), key=lambda s: s.cost)
        kept = ranked[:self.width]
        kept += [s for s in ranked[self.width:] if s.greedy]
        return kept
