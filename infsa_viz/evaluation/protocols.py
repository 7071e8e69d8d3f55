"""The evaluation's protocols beyond MoRF/LeRF and box AUC, per image and per (model, method).

Per image (:func:`score_extra`, called by :func:`~infsa_viz.evaluation.score_images`):

* on every image: energy-based pointing game, relevance rank accuracy, complexity;
* on the images whose index is below ``protocol.subsample`` (the first images of the data set,
  whatever the chunking): deletion / insertion with a blur baseline, positive / negative
  perturbation, and the class-switch test (images with a distractor of another class);
* on the images whose index is below ``protocol.road_images``: ROAD MoRF / LeRF.

Per (model, method) (:func:`sanity_row`, called by :func:`~infsa_viz.evaluation.evaluate`):
the sanity checks on the first ``protocol.sanity_images`` images. Then :func:`finish_rows`
flags the methods that pass MoRF (beat the random map) but fail the randomisation check, and
ranks the methods of each model on every criterion (:func:`~infsa_viz.metrics.rank_methods`).

Figures not measured on an image are ``nan`` in its record; each row counts its images.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..maps import MapResult, attribute, check_method
from ..metrics import (
    UndefinedMetricWarning,
    class_switch,
    complexity,
    deletion_insertion,
    energy_pointing_game,
    positive_negative_perturbation,
    rank_methods,
    relevance_rank_accuracy,
    road_curves,
    sanity_report,
    switch_classes,
)
from .reference import is_reference

__all__ = ["CURVE_FIELDS", "EXTRA_FIELDS", "extra_protocols", "finish_rows", "sanity_row", "score_extra", "summarise_extra"]

#: Per-image figures of these protocols: record field → (subset it is measured on, rule).
EXTRA_FIELDS: dict[str, str] = {
    "energy_pointing_game": "all",
    "relevance_rank_accuracy": "all",
    "complexity": "all",
    "deletion_auc": "subsample",
    "insertion_auc": "subsample",
    "positive_perturbation_auc": "subsample",
    "negative_perturbation_auc": "subsample",
    "class_switch_shift": "subsample",
    "class_switch_target_drop": "subsample",
    "class_switch_distractor_gain": "subsample",
    "road_morf_aoc": "road",
    "road_lerf_auc": "road",
}


def _nan(n: int) -> np.ndarray:
    return np.full(n, math.nan)


def score_extra(model: nn.Module, x: Tensor, labels: np.ndarray, result: MapResult, *, positions: Sequence[int],
                boxes: list[np.ndarray], negatives: list[np.ndarray] | None,
                negative_labels: Sequence[np.ndarray] | None, size: tuple[int, int], protocol: Any,
                map_options: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The per-image figures of :data:`EXTRA_FIELDS` for one chunk, and their protocols.

    Args:
        x: ``(B, C, H, W)`` prepared images; ``labels`` ``(B,)`` the scored classes.
        result: the chunk's maps.
        positions: each image's index in the whole data set.
        boxes, negatives: target and negative boxes in model-input pixels.
        negative_labels: the class of each negative box (``None`` where unknown: no class switch).
        map_options: the options the maps were made with (the class switch reuses them).
    """
    B = len(labels)
    maps = result.maps
    out = {name: _nan(B) for name in EXTRA_FIELDS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        out["energy_pointing_game"] = energy_pointing_game(maps, boxes, image_size=size)
        out["relevance_rank_accuracy"] = relevance_rank_accuracy(maps, boxes, image_size=size)
        out["complexity"] = complexity(maps)
    index = np.asarray(positions)
    protocols: dict[str, Any] = {
        "energy_pointing_game": {"reference": "Wang et al., Score-CAM, CVPRW 2020",
                                 "rule": "share of the map's positive mass inside the target box (nearest upsampling)"},
        "relevance_rank_accuracy": {"reference": "Arras, Osman & Samek, Information Fusion 2022",
                                    "rule": "share of the K highest pixels inside the box, K = box pixels; ties by expectation"},
        "complexity": {"reference": "Bhatt, Weller & Moura, IJCAI 2020",
                       "rule": "entropy (nats) of |m| / sum|m| over patches; log(h*w) for a flat map"},
    }
    sub = np.flatnonzero(index < protocol.subsample)
    if sub.size:
        xs, ls = x[sub], labels[sub]
        di = deletion_insertion(model, xs, maps[sub], ls, patch_size=model.patch_size, steps=protocol.insertion_steps,
                                blur_sigma=protocol.blur_sigma, seed=protocol.seed, batch_size=protocol.batch_size)
        out["deletion_auc"][sub], out["insertion_auc"][sub] = di.deletion_auc, di.insertion_auc
        pn = positive_negative_perturbation(model, xs, maps[sub], ls, patch_size=model.patch_size, seed=protocol.seed,
                                            batch_size=protocol.batch_size)
        out["positive_perturbation_auc"][sub], out["negative_perturbation_auc"][sub] = pn.positive_auc, pn.negative_auc
        protocols["deletion_insertion"] = di.protocol
        protocols["positive_negative_perturbation"] = pn.protocol
        if negatives is not None and negative_labels is not None:
            _class_switch(model, x, labels, result, sub, negatives, negative_labels, boxes, size, map_options, out)
            protocols["class_switch"] = {
                "rule": "explain the class of the first distractor whose class differs from the label; "
                        "shift = (distractor share after - before) - (target share after - before), positive "
                        "mass shares; target_drop = target share before - after; distractor_gain = after - before",
                "images": "subsample images with such a distractor",
                "maps_without_a_class": "the map does not change: shift 0"}
    road = np.flatnonzero(index < protocol.road_images)
    if road.size:
        rc = road_curves(model, x[road], maps[road], labels[road], patch_size=model.patch_size,
                         steps=protocol.road_steps, noise=protocol.road_noise, seed=protocol.seed,
                         batch_size=protocol.batch_size, image_ids=index[road])
        out["road_morf_aoc"][road], out["road_lerf_auc"][road] = rc.morf_aoc, rc.lerf_auc
        protocols["road"] = rc.protocol
    return out, protocols


def _class_switch(model: nn.Module, x: Tensor, labels: np.ndarray, result: MapResult, sub: np.ndarray,
                  negatives: list[np.ndarray], negative_labels: Sequence[np.ndarray], boxes: list[np.ndarray],
                  size: tuple[int, int], map_options: dict[str, Any], out: dict[str, np.ndarray]) -> None:
    which, classes = switch_classes(labels[sub], [negative_labels[i] for i in sub])
    keep = which >= 0
    if not keep.any():
        return
    rows = sub[keep]
    explains = not is_reference(result.method) and check_method(result.method).explains_class
    if explains:  # a reference map (the box oracle) reads the boxes, not the class: it does not move
        switched = attribute(model, x[rows], result.method, target=torch.as_tensor(classes[keep]), **map_options).maps
    else:
        switched = result.maps[rows]
    distractor = [np.asarray(negatives[i]).reshape(-1, 4)[w][None] for i, w in zip(rows, which[keep], strict=True)]
    found = class_switch(result.maps[rows], switched, [boxes[i] for i in rows], distractor, image_size=size)
    out["class_switch_shift"][rows] = found["shift"]
    out["class_switch_target_drop"][rows] = found["target_before"] - found["target_after"]
    out["class_switch_distractor_gain"][rows] = found["distractor_after"] - found["distractor_before"]


def extra_protocols(protocol: Any) -> dict[str, Any]:
    """The subsets the extra protocols run on, as stored in every row."""
    return {"subsample": f"deletion/insertion, positive/negative perturbation and class switch on images with "
                         f"index < {protocol.subsample}",
            "road": f"ROAD on images with index < {protocol.road_images}",
            "sanity": f"sanity checks on the first {protocol.sanity_images} images"}


#: Fields normalised by the clean probability ``p_0``, averaged like MoRF/LeRF over the curve selection.
CURVE_FIELDS = ("road_morf_aoc", "road_lerf_auc")


def summarise_extra(records: Sequence[Any], *, selected: np.ndarray | None = None) -> dict[str, Any]:
    """Row means of :data:`EXTRA_FIELDS` over the images where each is defined, with counts.

    Args:
        records: the (model, method)'s image records.
        selected: ``(B,)`` booleans, the images of the MoRF/LeRF curve scores (the protocol's
            ``select``, e.g. correctly classified). The ROAD scores (:data:`CURVE_FIELDS`) divide
            by ``p_0`` like MoRF, so a misclassified image with a tiny ``p_0`` would dominate
            the mean; they are averaged over these images only. Default: every image.
    """
    keep = np.ones(len(records), dtype=bool) if selected is None else np.asarray(selected, dtype=bool)
    if keep.shape != (len(records),):
        raise ValueError(f"selected has shape {keep.shape}; expected ({len(records)},)")
    row: dict[str, Any] = {}
    for name in EXTRA_FIELDS:
        values = np.array([getattr(r, name) for r in records], dtype=np.float64)
        ok = np.isfinite(values) & (keep if name in CURVE_FIELDS else True)
        row[name] = round(float(values[ok].mean()), 5) if ok.any() else None
    for group, key in (("subsample", "deletion_auc"), ("class_switch", "class_switch_shift")):
        row[f"n_{group}"] = int(sum(math.isfinite(getattr(r, key)) for r in records))
    row["n_road"] = int(sum(math.isfinite(r.road_morf_aoc) and k for r, k in zip(records, keep, strict=True)))
    return row


def sanity_row(model: nn.Module, x: Tensor, labels: np.ndarray, method: str, *, options: dict[str, Any],
               protocol: Any) -> dict[str, Any]:
    """The sanity checks of one (model, method) on prepared images ``x`` with their labels."""
    spec = check_method(method)
    num_classes = int(getattr(getattr(model, "config", None), "num_classes", int(labels.max()) + 1))

    def maps_of(m: nn.Module, target: Tensor | None) -> Tensor:
        return attribute(m, x, method, target=target, **options).maps

    targets = torch.as_tensor(labels) if spec.explains_class else None
    return sanity_report(model, x, maps_of, targets, num_classes=num_classes, seed=protocol.seed)


def finish_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flag passes-MoRF-fails-sanity per row (MoRF-AOC above the same model's random map) and add
    each method's ranks; returns the ranking records."""
    for row in rows:
        random = next((r for r in rows if r["model"] == row["model"] and r["method"] == "random"), None)
        fails = row.get("sanity_fails")
        beats = (None if random is None or row.get("morf_aoc") is None or random.get("morf_aoc") is None
                 else row["morf_aoc"] > random["morf_aoc"])
        row["passes_morf_fails_sanity"] = None if fails is None or beats is None else bool(beats and fails)
    rankings = rank_methods(rows)
    found = {(r["model"], r["method"]): r["mean_rank"] for r in rankings}
    for row in rows:
        row["mean_rank"] = found[row["model"], row["method"]]
    return rankings
