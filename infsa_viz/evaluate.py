"""Dataset-level evaluation of explanation maps: MoRF/LeRF, box ROC/PR-AUC, pointing game.

:func:`evaluate_maps` scores every (model, method) pair on the same images with the protocols
of :mod:`infsa_viz.metrics` and returns a JSON-able report whose ``protocol`` records every
choice. Work is sharded over torchrun ranks by image index; per-image results are gathered on
rank 0 and aggregated there exactly as in a single process, so the report is the same.
"""

from __future__ import annotations

import logging
import math
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from .distributed import Dist, shard_indices
from .maps import check_method, explain_with_metadata
from .metrics import (
    PerturbationCurves,
    UndefinedMetricWarning,
    aopc,
    box_auc,
    lerf_auc,
    morf_aoc,
    perturbation_curves,
    pointing_game,
)
from .progress import progress

__all__ = ["EvalData", "EvalSettings", "evaluate_maps", "DEFAULT_METHODS"]

log = logging.getLogger(__name__)

#: Methods of the published report (every map family; Captum input_x_gradient is left to users).
DEFAULT_METHODS = ("attention", "rollout", "visits", "neumann", "perron", "linear_estimate",
                   "integrated_gradients", "saliency", "occlusion", "random")


@dataclass(frozen=True)
class EvalSettings:
    """The evaluation protocol's free choices (the metrics' own rules are in their protocols).

    Args:
        steps: MoRF/LeRF removal steps K (K + 1 points, both endpoints).
        baseline: what removed patches become (``"mean"`` = 0 in normalised space).
        score: ``"target"`` (probability of the ground-truth class) or ``"predicted"``.
        select: images in the curve scores: ``"correct"`` (correctly classified) or ``"all"``.
        seed: tie-breaking seed (and random-map seed).
        chunk: images explained per call (also bounds memory of dense spectral maps).
        batch_size: perturbed copies per forward pass.
    """

    steps: int = 20
    baseline: str = "mean"
    score: str = "target"
    select: str = "correct"
    seed: int = 0
    chunk: int = 50
    batch_size: int = 512


@dataclass
class EvalData:
    """Images with labels and boxes (``(x0, y0, x1, y1)``, x1/y1 exclusive)."""

    images: Tensor  # (B, C, H, W) normalised
    labels: Tensor  # (B,)
    target_boxes: list[np.ndarray]  # B × (K_i, 4)
    negative_boxes: list[np.ndarray] | None
    description: dict[str, Any]


def _per_image(model: nn.Module, method: str, data: EvalData, chunks: list[list[int]], settings: EvalSettings,
               bar_desc: str | None) -> dict[str, Any]:
    """Maps and per-image metric values for the image ``chunks`` of ``data``.

    Each chunk is computed on its own (same batch, same seeds) whichever rank runs it, so a
    sharded run reproduces the single-process figures exactly.
    """
    patch = model.patch_size
    size = tuple(data.images.shape[-2:])
    morf, lerf, predicted, scored, roc, pr, neg_roc, hits, posfrac, prc = ([] for _ in range(10))
    metadata: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for sel in progress(chunks, desc=bar_desc, unit="chunk"):
        images, labels = data.images[sel], data.labels[sel]
        extra = {"seed": settings.seed + sel[0]} if method == "random" else {}
        result = explain_with_metadata(model, images, method, targets=labels, **extra)
        metadata, options = result.metadata, result.options
        maps = result.map
        curves = perturbation_curves(model, images, maps, labels, patch_size=patch, order="both",
                                     steps=settings.steps, baseline=settings.baseline, score=settings.score,
                                     seed=settings.seed, batch_size=settings.batch_size)
        morf.append(curves["morf"].probs)
        lerf.append(curves["lerf"].probs)
        predicted.append(curves["morf"].predicted)
        scored.append(curves["morf"].scored_class)
        boxes = [data.target_boxes[i] for i in sel]
        negatives = None if data.negative_boxes is None else [data.negative_boxes[i] for i in sel]
        with warnings.catch_warnings():  # undefined images are counted in the report instead
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            auc = box_auc(maps, boxes, image_size=size, negatives_boxes=negatives)
            point = pointing_game(maps, boxes, image_size=size)
        roc.append(auc.roc_auc)
        pr.append(auc.pr_auc)
        posfrac.append(auc.positive_fraction)
        neg_roc.append(auc.negatives_roc_auc if auc.negatives_roc_auc is not None else np.full(len(sel), np.nan))
        hits.append(point.hits)
        prc.append(_pr_curves(maps, boxes, size))
        protocols = {"perturbation": curves["morf"].protocol, "perturbation_lerf": curves["lerf"].protocol, "box_auc": auc.protocol,
                     "pointing_game": point.protocol}
    cat = np.concatenate
    return {"index": [i for c in chunks for i in c], "morf": cat(morf), "lerf": cat(lerf), "predicted": cat(predicted), "scored": cat(scored),
            "roc": cat(roc), "pr": cat(pr), "neg_roc": cat(neg_roc), "hits": cat(hits), "posfrac": cat(posfrac), "prc": cat(prc),
            "fractions": curves["morf"].fractions, "removed": curves["morf"].removed,
            "metadata": metadata, "options": options, "protocols": protocols}


RECALL_GRID = np.linspace(0.0, 1.0, 51)


def _pr_curves(maps: Tensor, boxes: list[np.ndarray], size: tuple[int, int]) -> np.ndarray:
    """Per image, interpolated precision (max precision at recall ≥ r) on :data:`RECALL_GRID`."""
    from sklearn.metrics import precision_recall_curve

    from .metrics import boxes_to_mask, upsample_map

    pixel = upsample_map(maps.numpy(), size)  # (B, H, W)
    out = np.full((len(boxes), len(RECALL_GRID)), np.nan)
    for i, (m, b) in enumerate(zip(pixel, boxes)):
        mask = boxes_to_mask(b, size).ravel()
        if mask.all() or not mask.any():
            continue
        precision, recall, _ = precision_recall_curve(mask, m.ravel())
        best = np.maximum.accumulate(precision)  # recall decreases along the array: max over recall >= r
        out[i] = np.interp(RECALL_GRID, recall[::-1], best[::-1])
    return out


def _merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    order = np.argsort(np.concatenate([p["index"] for p in parts]), kind="stable")
    merged = {k: np.concatenate([p[k] for p in parts])[order]
              for k in ("morf", "lerf", "predicted", "scored", "roc", "pr", "neg_roc", "hits", "posfrac", "prc")}
    first = parts[0]
    return {**merged, **{k: first[k] for k in ("fractions", "removed", "metadata", "options", "protocols")}}


def _curves(order: str, probs: np.ndarray, part: dict[str, Any], labels: np.ndarray) -> PerturbationCurves:
    key = "perturbation" if order == "morf" else "perturbation_lerf"
    return PerturbationCurves(order=order, fractions=part["fractions"], removed=part["removed"], probs=probs,
                              targets=labels, predicted=part["predicted"], scored_class=part["scored"],
                              protocol=part["protocols"][key])


def _nanmean(x: np.ndarray) -> float:
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else math.nan


def _row(name: str, model: nn.Module, method: str, part: dict[str, Any], labels: np.ndarray,
         settings: EvalSettings) -> dict[str, Any]:
    morf = morf_aoc(_curves("morf", part["morf"], part, labels), select=settings.select)  # type: ignore[arg-type]
    lerf = lerf_auc(_curves("lerf", part["lerf"], part, labels), select=settings.select)  # type: ignore[arg-type]
    gap = aopc(_curves("morf", part["morf"], part, labels), select=settings.select)  # type: ignore[arg-type]
    included = morf.included
    ratio = lambda p: p[included] / p[included, :1]  # noqa: E731
    return {
        "model": name,
        "variant": getattr(model.config, "attention", "unknown"),
        "method": method,
        "n_images": int(len(labels)),
        "n_scored": int(morf.n_included),
        "accuracy": round(float((part["predicted"] == labels).mean()), 5),
        "morf_aoc": round(morf.mean, 3),
        "lerf_auc": round(lerf.mean, 3),
        "aopc": round(gap.mean, 5),
        "box_roc_auc": round(_nanmean(part["roc"]), 5),
        "box_pr_auc": round(_nanmean(part["pr"]), 5),
        "box_undefined": int(np.isnan(part["roc"]).sum()),
        "distractor_roc_auc": round(_nanmean(part["neg_roc"]), 5),
        "pointing_game": round(_nanmean(part["hits"]), 5),
        "positive_fraction": round(_nanmean(part["posfrac"]), 5),
        "options": part["options"],
        "map": {k: v for k, v in part["metadata"].items() if k in ("matrix", "side", "gamma", "gamma_source",
                                                                   "start", "head", "layer", "captum")},
        "curves": {
            "fractions": part["fractions"].round(5).tolist(),
            "morf_mean": ratio(part["morf"]).mean(0).round(5).tolist() if included.any() else None,
            "lerf_mean": ratio(part["lerf"]).mean(0).round(5).tolist() if included.any() else None,
            "recall": RECALL_GRID.round(3).tolist(),
            "precision_mean": np.nanmean(part["prc"], axis=0).round(5).tolist()
            if (~np.isnan(part["prc"][:, 0])).any() else None,
        },
    }


def evaluate_maps(
    models: Sequence[tuple[str, nn.Module]],
    methods: Sequence[str],
    data: EvalData,
    *,
    settings: EvalSettings = EvalSettings(),
    dist: Dist = Dist(),
) -> dict[str, Any] | None:
    """Score every ``(model, method)`` on ``data``; the report on rank 0, ``None`` elsewhere.

    Args:
        models: ``(name, model)`` pairs (models in eval mode, same input size as the images).
        methods: map methods (keys of :data:`infsa_viz.maps.METHODS`).
        data: images, labels and boxes.
        settings: the protocol's free choices.
        dist: torchrun rank/world (default single process).
    """
    for method in methods:
        check_method(method)
    n = len(data.labels)
    all_chunks = [list(range(s, min(s + settings.chunk, n))) for s in range(0, n, settings.chunk)]
    chunks = [all_chunks[i] for i in shard_indices(len(all_chunks), dist)]
    if not chunks:
        raise ValueError(f"{n} images in chunks of {settings.chunk} leave rank {dist.rank} of "
                         f"{dist.world_size} without work; use fewer processes")
    labels = data.labels.numpy()
    rows: list[dict[str, Any]] = []
    protocols: dict[str, Any] = {}
    for name, model in models:
        model.eval()
        for method in methods:
            desc = f"{getattr(model.config, 'attention', name)} {method}" if dist.is_main else None
            part = _per_image(model, method, data, chunks, settings, desc)
            gathered = dist.gather(part)
            if dist.is_main:
                merged = _merge(gathered)  # type: ignore[arg-type]
                protocols = merged["protocols"]
                rows.append(_row(name, model, method, merged, labels, settings))
                log.info("%s %s: MoRF-AOC %.1f, PR-AUC %.3f", name, method, rows[-1]["morf_aoc"],
                         rows[-1]["box_pr_auc"])
    if not dist.is_main:
        return None
    return {
        "protocol": {"settings": asdict(settings), **protocols,
                     "aggregation": "per-image values averaged over images; curve scores over the "
                                    f"'{settings.select}' images that are defined; box/pointing over images "
                                    "with a defined value",
                     "world_size": dist.world_size},
        "dataset": data.description,
        "results": rows,
    }
