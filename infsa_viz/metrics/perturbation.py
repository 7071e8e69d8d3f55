"""MoRF / LeRF patch-removal curves (Samek et al., 2016), batched over (image x step) copies.

Removal unit = one ViT patch. Patches are ranked by the map (descending for MoRF, ascending for
LeRF, ties by one seeded random order), removed cumulatively in ``steps`` steps over the fraction
of patches removed, and replaced by a baseline; the curve is the softmax probability of the
explained class after each step. All perturbed copies are built with tensor ops and pushed through
the model ``batch_size`` at a time. See :class:`~infsa_viz.metrics.protocol.PerturbationProtocol`
for the resolved record returned with every curve.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np
import torch
from torch import Tensor, nn

from ._checks import check_choice, check_float, check_images, check_int, check_maps
from .protocol import STEP_GRIDS, Baseline, Explained, Order, PerturbationProtocol
from .removal import check_targets, resolve_device

__all__ = ["AUTO_COSINE_STEPS", "AUTO_UNIFORM_MAX_PATCHES", "PerturbationCurves", "perturbation_curves",
           "perturbed_forwards", "removal_order", "removed_counts", "resolve_step_grid"]

_STREAM_TIES, _STREAM_NOISE = 0, 1


@dataclass(frozen=True, eq=False)
class PerturbationCurves:
    """One family of perturbation curves (one removal order), one curve per image.

    Attributes:
        order: ``"morf"`` or ``"lerf"``.
        fractions: ``(K + 1,) float64`` fraction of patches removed at each step, ``n_k / (h w)``
            (0 first, 1 last).
        removed: ``(K + 1,) int64`` number of patches removed at each step, ``n_k``.
        probs: ``(B, K + 1) float64`` softmax probability of the explained class; column 0 is the
            clean image.
        targets: ``(B,) int64`` labels given by the caller.
        predicted: ``(B,) int64`` the model's argmax class on the clean images.
        explained: ``(B,) int64`` the explained class, whose probability ``probs`` tracks.
        protocol: The resolved protocol (:meth:`PerturbationProtocol.to_dict`).
    """

    order: str
    fractions: np.ndarray
    removed: np.ndarray
    probs: np.ndarray
    targets: np.ndarray
    predicted: np.ndarray
    explained: np.ndarray
    protocol: dict[str, Any]

    @property
    def correct(self) -> np.ndarray:
        """``(B,) bool``: the model's clean prediction equals the target."""
        return self.predicted == self.targets

    @property
    def num_images(self) -> int:
        return int(self.probs.shape[0])


def removal_order(maps: Any, *, order: Literal["morf", "lerf"] = "morf", seed: int = 0) -> np.ndarray:
    """The order in which patches are removed: flat patch indices, first removed first.

    MoRF sorts by descending, LeRF by ascending map value; equal values keep the order of one
    seeded random permutation ``numpy.random.default_rng([seed, 0]).permutation(h * w)``, the same
    for every image (so results do not depend on batch composition).

    Args:
        maps: ``(B, h, w)`` real per-patch importance.
        order: ``"morf"`` (default) or ``"lerf"``.
        seed: Non-negative seed of the tie-breaking permutation. Default 0.

    Returns:
        ``(B, h * w) int64``; entry ``[b, i]`` is the row-major index ``r * w + c`` of the
        ``i``-th removed patch of image ``b``.

    Example:
        >>> removal_order(np.array([[[0.1, 0.9], [0.5, 0.3]]]), order="morf").tolist()
        [[1, 2, 3, 0]]
    """
    values = check_maps(maps)
    check_choice("order", order, ("morf", "lerf"))
    seed = check_int("seed", seed, minimum=0)
    return _removal_order(values, order, seed)


def _removal_order(maps: np.ndarray, order: str, seed: int) -> np.ndarray:
    flat = maps.reshape(maps.shape[0], -1)  # (B, N)
    perm = np.random.default_rng([seed, _STREAM_TIES]).permutation(flat.shape[1])  # (N,)
    keys = -flat[:, perm] if order == "morf" else flat[:, perm]
    return perm[np.argsort(keys, axis=1, kind="stable")]  # (B, N)


def patch_ranks(maps: np.ndarray, order: str, seed: int) -> np.ndarray:
    """``(B, N)`` each patch's position in the removal order (:func:`removal_order`, seeded ties)."""
    return np.argsort(_removal_order(maps, order, seed), axis=1)


def removed_counts(steps: int, num_patches: int, grid: str = "uniform") -> np.ndarray:
    """Patches removed at steps ``k = 0..K`` of a step grid → ``(K + 1,) int64``, from 0 to ``N``.

    * ``"uniform"`` (default): ``n_k = floor(k * N / K + 1/2)`` in exact integer arithmetic;
    * ``"cosine"``: ``n_k = floor(N * (1 - cos(pi * k / K)) / 2 + 1/2)``: steps denser at both ends,
      where MoRF (early) and LeRF (late) curves move; ``n_0 = 0`` and ``n_K = N`` exactly.

    Example:
        >>> removed_counts(4, 100, "cosine").tolist()
        [0, 15, 50, 85, 100]
    """
    check_choice("grid", grid, STEP_GRIDS)
    k = np.arange(steps + 1, dtype=np.int64)
    if grid == "uniform":
        return (2 * k * num_patches + steps) // (2 * steps)
    share = (1.0 - np.cos(np.pi * k / steps)) / 2.0  # (K + 1,) in [0, 1]
    counts = np.floor(num_patches * share + 0.5).astype(np.int64)
    counts[0], counts[-1] = 0, num_patches
    return np.maximum.accumulate(counts)


#: Under ``step_grid="auto"``: patch grids of at most this many patches keep the uniform grid of ``steps``
#: steps (every shipped small model: 36 patches), so their figures do not move.
AUTO_UNIFORM_MAX_PATCHES = 100
#: Under ``step_grid="auto"`` on a larger grid: the cosine grid of at most this many steps.
AUTO_COSINE_STEPS = 10


def resolve_step_grid(step_grid: str, steps: int, num_patches: int) -> tuple[str, int, str]:
    """The step grid a MoRF/LeRF run uses: ``(grid, steps, why)``.

    ``"uniform"`` and ``"cosine"`` are used as given with ``steps``. ``"auto"`` keeps ``("uniform",
    steps)`` on grids of at most :data:`AUTO_UNIFORM_MAX_PATCHES` patches and takes ``("cosine",
    min(steps, AUTO_COSINE_STEPS))`` above, where one step of the uniform grid removes several patches
    anyway and the forwards dominate the cost of a large model (ViT-B/16 at 224: 196 patches, 18 forwards per
    image instead of 38 for both orders).

    Example:
        >>> resolve_step_grid("auto", 20, 196)[:2]
        ('cosine', 10)
    """
    check_choice("step_grid", step_grid, ("auto", *STEP_GRIDS))
    steps = check_int("steps", steps, minimum=1)
    if step_grid != "auto":
        return step_grid, steps, f"step_grid={step_grid!r}, steps={steps} as set"
    if num_patches <= AUTO_UNIFORM_MAX_PATCHES:
        return "uniform", steps, f"auto: uniform, {num_patches} patches <= {AUTO_UNIFORM_MAX_PATCHES}"
    return "cosine", min(steps, AUTO_COSINE_STEPS), (
        f"auto: cosine with min(steps, {AUTO_COSINE_STEPS}) steps, {num_patches} patches > {AUTO_UNIFORM_MAX_PATCHES}")


def perturbed_forwards(steps: int, num_patches: int, grid: str = "uniform", *, orders: int = 2) -> int:
    """Perturbed forwards per image of :func:`perturbation_curves`: one per distinct partial count
    ``0 < n_k < N`` per order, and one for the fully removed image (an upper bound: copies shared
    between orders or maps run once)."""
    counts = np.unique(removed_counts(steps, num_patches, grid))
    return orders * int(((counts > 0) & (counts < num_patches)).sum()) + 1


@overload
def perturbation_curves(
    model: nn.Module, images: Tensor, maps: Any, targets: Any, *, patch_size: int,
    order: Literal["morf", "lerf"] = ..., steps: int = ..., step_grid: str = ..., baseline: Baseline = ...,
    baseline_value: float | None = ..., blur_sigma: float | None = ..., explained: Explained = ...,
    seed: int = ..., batch_size: int = ..., device: str | torch.device | None = ..., logits: Tensor | None = ...,
    memo: dict[Any, float] | None = ...,
) -> PerturbationCurves: ...
@overload
def perturbation_curves(
    model: nn.Module, images: Tensor, maps: Any, targets: Any, *, patch_size: int,
    order: Literal["both"], steps: int = ..., step_grid: str = ..., baseline: Baseline = ...,
    baseline_value: float | None = ..., blur_sigma: float | None = ..., explained: Explained = ...,
    seed: int = ..., batch_size: int = ..., device: str | torch.device | None = ..., logits: Tensor | None = ...,
    memo: dict[Any, float] | None = ...,
) -> dict[str, PerturbationCurves]: ...


def perturbation_curves(
    model: nn.Module,
    images: Tensor,
    maps: Any,
    targets: Any,
    *,
    patch_size: int,
    order: Order = "morf",
    steps: int = 20,
    step_grid: str = "uniform",
    baseline: Baseline = "mean",
    baseline_value: float | None = None,
    blur_sigma: float | None = None,
    explained: Explained = "target",
    seed: int = 0,
    batch_size: int = 256,
    device: str | torch.device | None = None,
    logits: Tensor | None = None,
    memo: dict[Any, float] | None = None,
) -> PerturbationCurves | dict[str, PerturbationCurves]:
    """MoRF / LeRF curves: class probability as ViT patches are removed in map order.

    At step ``k = 0..K`` (``K = steps``) the first ``n_k`` patches of the removal order
    (:func:`removal_order`) are replaced by the baseline, cumulatively, and the softmax probability of
    the explained class is recorded; ``n_k = floor(k·h·w/K + 1/2)`` on the uniform step grid, or the cosine
    grid of :func:`removed_counts`. Steps with equal ``n_k`` (``K > h·w``) repeat a value. Each distinct
    perturbed copy (an image with a set of patches removed) runs once: a copy that both orders, or
    several maps sharing ``memo``, remove alike is read back. The work is batched over (image × step) copies: each chunk of
    ``batch_size`` copies is built by masking (patch mask expanded to pixels with
    ``repeat_interleave``) and run in one forward pass under ``torch.inference_mode``. The last step,
    every patch removed, is the fill itself whatever the order: it runs once per image for both orders,
    and once for all images when the fill is a constant (``"mean"``, ``"zero"``), so ``steps`` steps
    cost ``2·(steps − 1)`` forwards per image and one more (``order="both"``).

    Baselines (what removed pixels become):

    * ``"mean"`` (default): 0.0, the dataset mean of inputs normalised by their training set's
      mean and standard deviation (the model's :class:`~infsa_viz.preprocess.Preprocessing`).
    * ``"zero"``: the constant ``baseline_value``, which the caller must supply: the
      *normalised* value of a black pixel (raw 0 is not 0 after normalisation; for
      the model's preprocessing it is ``-mean / std``).
    * ``"blur"``: the image blurred by ``cv2.GaussianBlur`` with ``blur_sigma`` (default
      ``patch_size / 2``) pixels, per channel, border ``BORDER_REFLECT_101``.
    * ``"uniform"``: seeded uniform noise in the image's own ``[min, max]`` (one noise field
      ``default_rng([seed, 1]).random((C, H, W))`` shared by all images, rescaled per image).

    Args:
        model: Classifier in eval mode, ``model(x (P, C, H, W)) -> logits (P, M)``.
        images: ``(B, C, H, W)`` float images as the model expects them (normalised).
        maps: ``(B, h, w)`` per-patch importance, ``h = H / patch_size``, ``w = W / patch_size``.
        targets: ``(B,)`` integer labels in ``[0, M)``.
        patch_size: Removal unit side in pixels (the ViT patch size, ``model.patch_size``).
        order: ``"morf"`` (default), ``"lerf"`` or ``"both"``.
        steps: Number of removal steps ``K >= 1``. Default 20 (21 points).
        step_grid: ``"uniform"`` (default: fractions ``k/K``) or ``"cosine"`` (``(1 − cos(πk/K))/2``,
            denser at both ends; :func:`removed_counts`).
        baseline: ``"mean"`` (default), ``"zero"``, ``"blur"`` or ``"uniform"``.
        baseline_value: Fill value for ``baseline="zero"`` (required there, rejected elsewhere).
        blur_sigma: Gaussian sigma in pixels for ``baseline="blur"`` (rejected elsewhere).
        explained: the explained class: ``"target"`` (default): ``targets``; ``"predicted"``: the
            model's argmax on the clean image.
        seed: Non-negative seed for tie-breaking and uniform noise. Default 0.
        batch_size: Perturbed copies per forward pass. Default 256.
        device: Device for the forward passes; default the model's (first parameter's) device.
        logits: ``(B, M)`` the model's clean logits on ``images`` when the caller has them (a
            :class:`~infsa_viz.forward.ForwardRecord`'s): ``p_0`` is read from them instead of a
            forward pass of its own.
        memo: probabilities of perturbed copies already scored, shared by calls on the same ``images``
            and ``model`` (e.g. every map of one :class:`~infsa_viz.forward.ForwardRecord`); keyed by the
            fill, the image's row, its explained class and the set of patches removed, so only identical copies
            are read back. Default: shared within this call only.

    Returns:
        A :class:`PerturbationCurves`; for ``order="both"`` a dict ``{"morf": ..., "lerf": ...}``.

    Raises:
        TypeError: If ``images`` is not a float tensor or the model does not return a tensor.
        ValueError: On a bad shape, option or value, or if the model is in training mode.
    """
    images = check_images(images)
    B, C, H, W = images.shape
    patch_size = check_int("patch_size", patch_size, minimum=1)
    if H % patch_size or W % patch_size:
        raise ValueError(f"patch_size={patch_size} is invalid; expected a divisor of the image size {(H, W)}")
    h, w = H // patch_size, W // patch_size
    values = check_maps(maps, batch=B)
    if values.shape[1:] != (h, w):
        raise ValueError(
            f"maps has grid {values.shape[1:]}; expected (H/patch_size, W/patch_size) = {(h, w)}"
        )
    labels = check_targets(targets, B)
    steps = check_int("steps", steps, minimum=1)
    check_choice("step_grid", step_grid, STEP_GRIDS)
    seed = check_int("seed", seed, minimum=0)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    if blur_sigma is not None:
        blur_sigma = check_float("blur_sigma", blur_sigma, positive=True)
    if baseline_value is not None:
        baseline_value = check_float("baseline_value", baseline_value)
    if baseline == "mean" and baseline_value is not None:
        raise ValueError(f"baseline_value={baseline_value!r} is only used with baseline='zero'; got baseline='mean'")
    if not isinstance(model, nn.Module):
        raise TypeError(f"model has type {type(model).__name__}; expected a torch.nn.Module")
    if model.training:
        raise ValueError("model is in training mode; expected eval mode (call model.eval() first)")
    device = resolve_device(model, images, device)
    protocol = PerturbationProtocol(
        patch_size=patch_size, grid=(h, w), order=order, steps=steps, baseline=baseline,
        baseline_value=0.0 if baseline == "mean" else baseline_value,
        blur_sigma=(patch_size / 2 if blur_sigma is None else blur_sigma) if baseline == "blur" else blur_sigma,
        explained=explained, seed=seed, batch_size=batch_size, device=str(device), step_grid=step_grid,
    )
    names = ["morf", "lerf"] if order == "both" else [order]
    ranks = np.stack([np.argsort(_removal_order(values, name, seed), axis=1) for name in names])  # (O, B, N)
    removed = removed_counts(steps, h * w, step_grid)  # (K + 1,)

    x = images.to(device)
    fill = baseline_images(images, protocol).to(device=device, dtype=images.dtype)  # (B, C, H, W)
    if logits is None:
        clean = _probabilities(model, x, batch_size)  # (B, M)
    else:
        clean = _clean_probabilities(logits, B)
    if labels.max() >= clean.shape[1]:
        raise ValueError(f"targets has class {int(labels.max())}; expected classes in [0, {clean.shape[1]})")
    predicted = clean.argmax(axis=1)
    classes = labels if explained == "target" else predicted  # (B,) the explained classes

    counts = np.unique(removed[removed > 0])  # (U,) distinct positive counts, each run once
    partial = counts[counts < h * w]
    found = np.empty((len(names), B, len(counts)))  # (O, B, U)
    fill_key = (baseline, protocol.baseline_value, protocol.blur_sigma, seed if baseline == "uniform" else None,
                patch_size, str(x.dtype), str(device))
    image_keys = [(fill_key, b, int(classes[b])) for b in range(B)]
    found[..., :len(partial)] = perturbed_probabilities(model, x, fill, ranks, partial, classes, patch_size, batch_size,
                                                        memo=memo, image_keys=image_keys)
    if len(partial) < len(counts):  # every patch removed: the fill itself, whatever the order (and, for a constant
        found[..., -1] = _filled_probabilities(model, fill, classes, constant=baseline in ("mean", "zero"),
                                               batch_size=batch_size)  # fill, whatever the image)

    p0 = clean[np.arange(B), classes]  # (B,)
    column = np.searchsorted(counts, removed)  # (K + 1,) index into counts for n_k > 0
    results = {}
    for i, name in enumerate(names):
        curve = np.where(removed[None] > 0, found[i][:, column], p0[:, None])
        results[name] = PerturbationCurves(
            order=name,
            fractions=removed / (h * w),
            removed=removed.copy(),
            probs=curve,  # (B, K + 1)
            targets=labels.copy(),
            predicted=predicted,
            explained=classes.copy(),
            protocol={**protocol.to_dict(), "order": name},
        )
    return results if order == "both" else results[order]


def perturbed_probabilities(
    model: nn.Module,
    x: Tensor,
    fill: Tensor,
    ranks: np.ndarray,
    counts: np.ndarray,
    explained: np.ndarray,
    patch_size: int,
    batch_size: int,
    *,
    memo: dict[Any, float] | None = None,
    image_keys: Sequence[Any] | None = None,
) -> np.ndarray:
    """Probability of the explained class for every (order, image, count) work package.

    Each distinct perturbed copy runs once: packages whose image key and removed patch set agree (the
    two orders, a count repeated, another map's copy already in ``memo``) share one forward.

    Args:
        x: ``(B, C, H, W)`` clean images on the forward device.
        fill: ``(B, C, H, W)`` baseline images on the same device.
        ranks: ``(O, B, N)`` position of each patch in each removal order.
        counts: ``(U,)`` numbers of removed patches to evaluate.
        explained: ``(B,)`` the explained class per image.
        memo: copy key → probability, read and filled (default: a new one for this call).
        image_keys: ``(B,)`` hashable keys naming each image, its fill and its explained class in ``memo``
            (default: its row and explained class; pass keys with the fill whenever ``memo`` outlives a call).

    Returns:
        ``(O, B, U) float64``.
    """
    O, B, N = ranks.shape
    h, w = x.shape[2] // patch_size, x.shape[3] // patch_size
    device = x.device
    memo = {} if memo is None else memo
    image_keys = [(b, int(explained[b])) for b in range(B)] if image_keys is None else list(image_keys)
    grid = np.meshgrid(np.arange(O), np.arange(B), np.arange(len(counts)), indexing="ij")
    jobs = np.stack(grid, axis=-1).reshape(-1, 3)  # (O*B*U, 3): (order, image, count)
    keys = _copy_keys(ranks, counts, jobs, image_keys)  # (J,) one key per distinct perturbed copy
    first: dict[Any, int] = {}
    for j, key in enumerate(keys):
        if key not in memo:
            first.setdefault(key, j)
    pending = np.fromiter(first.values(), dtype=np.int64, count=len(first))  # the first job of each new copy
    ranks_t = torch.from_numpy(ranks).to(device)
    counts_t = torch.from_numpy(counts).to(device)
    explained_t = torch.from_numpy(explained).to(device)
    with torch.inference_mode():
        for start in range(0, len(pending), batch_size):
            rows = pending[start:start + batch_size]
            job = torch.from_numpy(jobs[rows]).to(device)  # (P, 3)
            o, b, u = job[:, 0], job[:, 1], job[:, 2]
            patch_mask = ranks_t[o, b] < counts_t[u, None]  # (P, N)
            pixel_mask = (
                patch_mask.view(-1, 1, h, w).repeat_interleave(patch_size, 2).repeat_interleave(patch_size, 3)
            )  # (P, 1, H, W)
            copies = torch.where(pixel_mask, fill[b], x[b])  # (P, C, H, W)
            probs = _softmax(model, copies)  # (P, M)
            for j, p in zip(rows.tolist(), probs.gather(1, explained_t[b, None])[:, 0].cpu().numpy().tolist()):
                memo[keys[j]] = p
    found = np.fromiter((memo[key] for key in keys), dtype=np.float64, count=len(keys))
    return found.reshape(O, B, len(counts))


def _copy_keys(ranks: np.ndarray, counts: np.ndarray, jobs: np.ndarray, image_keys: Sequence[Any]) -> list[Any]:
    """``(image key, digest of the removed patch set)`` of every job, in blocks (never all masks at once)."""
    keys: list[Any] = []
    block = max(1, (1 << 24) // max(ranks.shape[2], 1))
    for start in range(0, len(jobs), block):
        job = jobs[start:start + block]
        masks = np.packbits(ranks[job[:, 0], job[:, 1]] < counts[job[:, 2], None], axis=1)  # (P, ceil(N / 8))
        keys += [(image_keys[b], hashlib.blake2b(m.tobytes(), digest_size=16).digest())
                 for b, m in zip(job[:, 1].tolist(), masks)]
    return keys


def _filled_probabilities(model: nn.Module, fill: Tensor, explained: np.ndarray, *, constant: bool,
                          batch_size: int) -> np.ndarray:
    """``(B,)`` probability of each image's explained class once every patch is removed: one forward of the
    fill per image, or one for all images when the fill is the same constant everywhere."""
    probs = _probabilities(model, fill[:1] if constant else fill, batch_size)  # (1 or B, M)
    rows = np.zeros(len(explained), dtype=np.int64) if constant else np.arange(len(explained))
    return probs[rows, explained]


def baseline_images(images: Tensor, protocol: PerturbationProtocol) -> Tensor:
    """The replacement value of every pixel ``(B, C, H, W)``, on the CPU, in float64."""
    x = images.detach().cpu().to(torch.float64)
    if protocol.baseline in ("mean", "zero"):
        return torch.full_like(x, float(protocol.baseline_value))  # type: ignore[arg-type]
    if protocol.baseline == "uniform":
        B, C, H, W = x.shape
        noise = np.random.default_rng([protocol.seed, _STREAM_NOISE]).random((C, H, W))
        lo = x.amin(dim=(1, 2, 3), keepdim=True)  # (B, 1, 1, 1)
        hi = x.amax(dim=(1, 2, 3), keepdim=True)
        return lo + (hi - lo) * torch.from_numpy(noise)[None]
    import cv2

    planes = x.numpy().astype(np.float32).reshape(-1, *x.shape[2:])  # (B*C, H, W)
    blurred = np.stack([
        cv2.GaussianBlur(plane, (0, 0), sigmaX=protocol.blur_sigma, sigmaY=protocol.blur_sigma,
                         borderType=cv2.BORDER_REFLECT_101)
        for plane in planes
    ])
    return torch.from_numpy(blurred.astype(np.float64)).reshape(x.shape)


def _softmax(model: nn.Module, x: Tensor) -> Tensor:
    logits = model(x)
    if not isinstance(logits, Tensor) or logits.ndim != 2 or logits.shape[0] != x.shape[0]:
        raise TypeError(
            f"model returned {type(logits).__name__} of shape {tuple(getattr(logits, 'shape', ()))}; "
            f"expected a logits tensor of shape ({x.shape[0]}, num_classes)"
        )
    return torch.softmax(logits.to(torch.float64), dim=-1)


def _clean_probabilities(logits: Any, B: int) -> np.ndarray:
    """Softmax probabilities ``(B, M) float64`` of given clean logits (checked against the batch)."""
    if not isinstance(logits, Tensor) or logits.ndim != 2 or logits.shape[0] != B:
        raise ValueError(f"logits has shape {tuple(getattr(logits, 'shape', ()))}; expected the clean logits "
                         f"({B}, classes) of these images")
    return torch.softmax(logits.detach().to(torch.float64), dim=-1).cpu().numpy()


def _probabilities(model: nn.Module, x: Tensor, batch_size: int) -> np.ndarray:
    """Softmax probabilities of clean images ``(B, M) float64``."""
    with torch.inference_mode():
        return torch.cat([_softmax(model, x[i:i + batch_size]) for i in range(0, len(x), batch_size)]).cpu().numpy()
