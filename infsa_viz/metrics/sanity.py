"""Sanity checks for explanations (Adebayo et al., NeurIPS 2018): does the map depend on the model
and on the class it explains?

* Cascading model-parameter randomisation: the model's parameters are randomised from the top
  (the head and final norm, then the blocks from the last to the first, then the embeddings),
  one stage more at a time; the map of every stage is compared with the trained model's.
* Random logit: the map of a random other class is compared with the map of the explained class
  (methods that explain a class only).

Similarity per image: Spearman rank correlation of the raw maps, and SSIM of the maps min–max
normalised to ``[0, 1]`` (one window over the whole ``h × w`` map: the maps are 6 × 6). A method
whose map stays similar after full randomisation fails the check: its map does not depend on
what the model learned.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .._checks import check_int
from ._checks import check_maps

__all__ = ["FAIL_THRESHOLD", "cascading_randomisation", "map_similarity", "random_other_class", "sanity_report",
           "spearman", "ssim"]

#: Mean Spearman correlation above which a fully randomised model's maps count as "the same".
FAIL_THRESHOLD = 0.5


def _rankdata(values: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(values, axis=1)


def spearman(a: Any, b: Any) -> np.ndarray:
    """Spearman rank correlation per image of ``(B, h, w)`` maps (average ranks for ties);
    ``nan`` where a map is constant."""
    x, y = check_maps(a, name="a"), check_maps(b, name="b")
    if x.shape != y.shape:
        raise ValueError(f"a has shape {x.shape} and b {y.shape}; expected equal shapes")
    rx, ry = _rankdata(x.reshape(len(x), -1)), _rankdata(y.reshape(len(y), -1))
    rx -= rx.mean(1, keepdims=True)
    ry -= ry.mean(1, keepdims=True)
    denominator = np.sqrt((rx ** 2).sum(1) * (ry ** 2).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (rx * ry).sum(1) / np.where(denominator > 0, denominator, 1), np.nan)


def ssim(a: Any, b: Any) -> np.ndarray:
    """Structural similarity per image (Wang et al. 2004) of ``(B, h, w)`` maps min–max normalised
    to ``[0, 1]`` (a constant map becomes 0), one window over the whole map, ``c1 = 0.01²``,
    ``c2 = 0.03²`` (data range 1)."""
    x, y = check_maps(a, name="a"), check_maps(b, name="b")
    if x.shape != y.shape:
        raise ValueError(f"a has shape {x.shape} and b {y.shape}; expected equal shapes")

    def norm(m: np.ndarray) -> np.ndarray:
        flat = m.reshape(len(m), -1)
        lo, hi = flat.min(1, keepdims=True), flat.max(1, keepdims=True)
        return np.where(hi > lo, (flat - lo) / np.where(hi > lo, hi - lo, 1), 0.0)

    u, v = norm(x), norm(y)
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    mu, mv = u.mean(1), v.mean(1)
    cov = ((u - mu[:, None]) * (v - mv[:, None])).mean(1)
    return ((2 * mu * mv + c1) * (2 * cov + c2)) / ((mu ** 2 + mv ** 2 + c1) * (u.var(1) + v.var(1) + c2))


def map_similarity(a: Any, b: Any) -> dict[str, np.ndarray]:
    """``{"spearman": (B,), "ssim": (B,)}``."""
    return {"spearman": spearman(a, b), "ssim": ssim(a, b)}


def _randomise(module: nn.Module, generator: torch.Generator) -> None:
    """Each parameter tensor → Gaussian noise with that tensor's own mean and std (tensors of one
    element, e.g. a layer's ρ logit, are kept: they have no spread to draw from)."""
    with torch.no_grad():
        for p in module.parameters(recurse=True):
            if p.numel() < 2:
                continue
            std = float(p.std())
            noise = torch.randn(p.shape, generator=generator, dtype=torch.float64)
            p.copy_((float(p.mean()) + (std if std > 0 else 1.0) * noise).to(p.dtype))


def _stages(model: nn.Module) -> list[tuple[str, list[nn.Module]]]:
    """The cascade, top first: ``(name, modules randomised at this stage)``."""
    blocks = list(getattr(model, "blocks", []))
    if not blocks:
        raise ValueError(f"{type(model).__name__} has no .blocks; cascading randomisation needs a ViT")
    top = [m for m in (getattr(model, "head", None), getattr(model, "norm", None)) if m is not None]
    stages = [("head", top)] + [(f"block_{i}", [blocks[i]]) for i in reversed(range(len(blocks)))]
    embed = [m for m in (getattr(model, "patch_embed", None),) if m is not None]
    return [*stages, ("embedding", embed)]


def cascading_randomisation(model: nn.Module, *, seed: int = 0) -> Iterator[tuple[str, nn.Module]]:
    """Yield ``(stage, model copy)`` with the parameters randomised from the top down, cumulatively.

    The trained ``model`` is not changed. Stage ``"embedding"`` also randomises the position
    embedding and CLS token. Randomisation is seeded by ``torch.Generator().manual_seed(seed)``.
    """
    seed = check_int("seed", seed, minimum=0)
    generator = torch.Generator().manual_seed(seed)
    randomised = copy.deepcopy(model).eval()
    for name, modules in _stages(randomised):
        for m in modules:
            _randomise(m, generator)
        if name == "embedding":
            with torch.no_grad():
                for attr in ("pos_embed", "cls_token"):
                    p = getattr(randomised, attr, None)
                    if isinstance(p, Tensor):
                        p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float64).to(p.dtype) * 0.02)
        yield name, randomised


def random_other_class(targets: Any, num_classes: int, *, seed: int = 0) -> np.ndarray:
    """A class ``≠ targets[i]`` per image, uniform over the others, from ``default_rng([seed, 2])``."""
    t = np.asarray(targets, dtype=np.int64)
    draw = np.random.default_rng([seed, 2]).integers(0, num_classes - 1, size=t.shape)
    return draw + (draw >= t)


def sanity_report(model: nn.Module, images: Tensor, maps_of: Callable[[nn.Module, Tensor | None], Tensor],
                  targets: Tensor | None, *, num_classes: int, seed: int = 0,
                  threshold: float = FAIL_THRESHOLD, trained: Tensor | None = None) -> dict[str, Any]:
    """Both checks for one method on one model.

    Args:
        model: the trained model.
        images: ``(B, C, H, W)`` inputs.
        maps_of: ``(model, target or None) → (B, h, w)`` the method's maps.
        targets: ``(B,)`` explained classes, or ``None`` for a method that explains no class.
        num_classes: for the random other class.
        threshold: mean Spearman at full randomisation above which the method fails.
        trained: ``(B, h, w)`` the trained model's maps of ``targets`` when the caller has them (an
            evaluation's chunk computed them; default ``maps_of(model, targets)``).

    Returns:
        JSON-able: per stage mean/median Spearman and SSIM, the random-logit similarity
        (``None`` without targets) and ``fails`` (mean Spearman at full randomisation > threshold).
    """
    trained = maps_of(model, targets) if trained is None else trained
    stages = []
    for name, randomised in cascading_randomisation(model, seed=seed):
        sim = map_similarity(trained, maps_of(randomised, targets))
        stages.append({"stage": name, **{k: _stats(v) for k, v in sim.items()}})
    logit = None
    if targets is not None:
        other = torch.as_tensor(random_other_class(targets.numpy(), num_classes, seed=seed))
        logit = {k: _stats(v) for k, v in map_similarity(trained, maps_of(model, other)).items()}
    final = stages[-1]["spearman"]["mean"]
    return {"n_images": int(images.shape[0]), "stages": stages, "random_logit": logit,
            "randomised_spearman": final, "randomised_ssim": stages[-1]["ssim"]["mean"],
            "fails": None if final is None else bool(final > threshold), "threshold": threshold,
            "rule": "fails when the mean Spearman correlation between the trained model's maps and the fully "
                    "randomised model's maps exceeds the threshold (Adebayo et al. 2018)",
            "randomisation": "top-down cascade (head+norm, blocks last..first, embeddings); each parameter tensor "
                             "replaced by N(its mean, its std), one-element tensors (rho logits) kept; "
                             "position embedding and CLS token N(0, 0.02^2)"}


def _stats(values: np.ndarray) -> dict[str, float | None]:
    finite = values[np.isfinite(values)]
    if not finite.size:
        return {"mean": None, "median": None, "n": 0}
    return {"mean": round(float(finite.mean()), 5), "median": round(float(np.median(finite)), 5), "n": int(finite.size)}
