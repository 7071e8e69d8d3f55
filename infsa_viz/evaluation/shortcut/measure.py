"""One trained model's cue shares: every map, at every salience of the cue, on a stated set of test images.

The **cue share** of a map on an image is its area-normalised share of positive mass on the cue:
``d_cue = ρ_cue / Σ_k ρ_k`` with ``ρ_k = Σ_{p∈R_k} m⁺_p / |R_k|`` the map's positive density on
object ``k``'s region (:func:`~infsa_viz.metrics.evidence.object_density`; the maps spread to pixels
by ``"nearest"``), over the objects with a region on that image — the ``d`` of the evidence mass
accuracy, with the cue's region its whole box (:func:`~.salience.cue_regions`). 1 when the map lies
on the cue alone, ``1/O`` for a uniform map over ``O`` objects; ``nan`` for a map without positive mass.

The cue's **measured evidence** on an image is the drop of the explained class's probability when
the cue alone is removed (:func:`~infsa_viz.evaluation.interventions.object_importance`). Every map
explains the model's prediction (the cued verdict's protocol).

:func:`identical_maps` groups maps that agree up to a positive scale within a stated tolerance on
every image (Linear-InfSA's attention, expected visits and Perron vector are one rank-one map), so
a family counts each distinct map once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from torch import nn

from ...data import Scene
from .salience import CUE, SALIENCE, cue_regions, salient_scene

__all__ = ["IDENTICAL_TOLERANCE", "ModelCueShares", "cue_share", "identical_maps", "measure_model"]

#: Two maps are one when, each scaled to a maximum |value| of 1, they differ by at most this on
#: every patch of every image.
IDENTICAL_TOLERANCE = 1e-3


def cue_share(maps: Any, regions: Any, cue_object: int) -> np.ndarray:
    """``(B,) float64`` the cue share ``ρ_cue / Σ_k ρ_k`` of each map (module doc).

    Args:
        maps: ``(B, h, w)`` maps on the patch grid.
        regions: ``(B, O, H, W)`` bool disjoint object regions in the model's input.
        cue_object: the cue's object index.

    Returns:
        ``nan`` where the map has no positive mass on any region.
    """
    import warnings

    from ...metrics.evidence import object_density

    density = object_density(maps, regions)  # (B, O), nan for an empty region
    if not 0 <= cue_object < density.shape[1]:
        raise ValueError(f"cue_object={cue_object} is invalid; expected an object index < {density.shape[1]}")
    total = np.nansum(density, axis=1)
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.where(total > 0, density[:, cue_object] / total, np.nan)


def identical_maps(maps: Mapping[str, Any], *, tolerance: float = IDENTICAL_TOLERANCE) -> list[list[str]]:
    """Groups of maps identical up to a positive scale per image (the first name of each group first).

    Args:
        maps: method → ``(B, h, w)`` maps of the same images.
        tolerance: the largest patch difference of two maps each scaled to max |value| 1 (default
            :data:`IDENTICAL_TOLERANCE`).

    Returns:
        Every group of two or more methods, in the order of ``maps``.
    """
    if not 0.0 <= float(tolerance) < 1.0:
        raise ValueError(f"tolerance={tolerance!r} is invalid; expected 0 <= tolerance < 1")
    names = list(maps)
    scaled = {}
    for name in names:
        values = np.asarray(maps[name], dtype=np.float64)
        peak = np.abs(values).reshape(len(values), -1).max(axis=1)
        scaled[name] = values / np.where(peak > 0, peak, 1.0).reshape(-1, *([1] * (values.ndim - 1)))
    groups: list[list[str]] = []
    placed: set[str] = set()
    for i, a in enumerate(names):
        if a in placed:
            continue
        group = [a] + [b for b in names[i + 1:] if b not in placed and scaled[b].shape == scaled[a].shape
                       and float(np.abs(scaled[a] - scaled[b]).max(initial=0.0)) <= tolerance]
        if len(group) > 1:
            groups.append(group)
            placed.update(group)
    return groups


@dataclass(frozen=True, eq=False)
class ModelCueShares:
    """One model's cue shares and cue evidence on the test images.

    Attributes:
        methods: the maps, explanation methods and controls, in order.
        indices: ``(n,)`` the test images' positions.
        shares: salience → method → ``(n,) float64`` cue share.
        evidence: salience → ``(n,) float64`` the cue's measured evidence (probability drop).
        predicted: ``(n,) int64`` the model's class on the images as generated.
        identical: groups of methods whose maps are identical up to scale on these images (as generated).
        protocol: what was computed, JSON-ready.
    """

    methods: tuple[str, ...]
    indices: np.ndarray
    shares: dict[str, dict[str, np.ndarray]]
    evidence: dict[str, np.ndarray]
    predicted: np.ndarray
    identical: list[list[str]]
    protocol: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, digits: int = 6) -> dict[str, Any]:
        """JSON-ready builtins (``nan`` as ``None``)."""
        def values(a: np.ndarray) -> list[float | None]:
            return [None if not np.isfinite(v) else round(float(v), digits) for v in a]

        return {"methods": list(self.methods), "indices": self.indices.tolist(), "predicted": self.predicted.tolist(),
                "identical": self.identical, "protocol": self.protocol,
                "evidence": {s: values(e) for s, e in self.evidence.items()},
                "shares": {s: {m: values(v) for m, v in by.items()} for s, by in self.shares.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelCueShares:
        def array(values: Sequence[float | None]) -> np.ndarray:
            return np.array([np.nan if v is None else v for v in values], dtype=np.float64)

        return cls(tuple(data["methods"]), np.asarray(data["indices"], np.int64),
                   {s: {m: array(v) for m, v in by.items()} for s, by in data["shares"].items()},
                   {s: array(e) for s, e in data["evidence"].items()}, np.asarray(data["predicted"], np.int64),
                   [list(g) for g in data["identical"]], dict(data.get("protocol", {})))


def measure_model(model: nn.Module, scenes: Sequence[Scene], *, methods: Sequence[str],
                  salience: Sequence[str] = tuple(SALIENCE), indices: Sequence[int] | None = None,
                  batch_size: int = 256, tolerance: float = IDENTICAL_TOLERANCE) -> ModelCueShares:
    """Cue shares of every map in ``methods`` and the cue's evidence, at every salience.

    Per salience: one forward record of the changed images (maps explain the prediction on them),
    the objects' importance (one forward per object and image,
    :func:`~infsa_viz.evaluation.interventions.object_importance`), then each map. Reference maps
    that need the truth (the evidence oracle) read the scene's visible masks and that importance.

    Args:
        model: a cued-digits classifier in eval mode.
        scenes: the test scenes (each showing its cue).
        methods: registered map methods (default options; seeded ones at their default seed).
        salience: keys of :data:`~.salience.SALIENCE` (default all, the generated one first).
        indices: the scenes' positions in the test split (default ``0 .. n-1``).
        batch_size: images per forward pass of the importance. Default 256.
        tolerance: of :func:`identical_maps`.

    Raises:
        ValueError: no scenes, an unknown method or salience, or a model in training mode.
    """
    from ...forward import ForwardRecord
    from ...maps import GroundTruth, check_method
    from ...preprocess import prepare
    from ..interventions import object_importance

    found = list(scenes)
    if not found:
        raise ValueError("scenes is empty; expected cued-digits test scenes")
    specs = [check_method(m) for m in methods]
    for name in salience:
        if name not in SALIENCE:
            raise ValueError(f"salience={name!r} is invalid; expected keys of {list(SALIENCE)}")
    if model.training:
        raise ValueError("model is in training mode; expected eval mode (call model.eval() first)")
    positions = np.arange(len(found)) if indices is None else np.asarray(indices, dtype=np.int64)
    shares: dict[str, dict[str, np.ndarray]] = {}
    evidence: dict[str, np.ndarray] = {}
    identical: list[list[str]] = []
    predicted = np.zeros(0, np.int64)
    for name in salience:
        changed = [salient_scene(scene, name) for scene in found]
        shown = [scene for scene, _ in changed]
        images = np.stack([scene.render() for scene in shown])
        prepared = prepare(model, images)
        record = ForwardRecord(model, prepared.tensor, prepared=prepared)
        explained = record.explained.numpy()
        importance = object_importance(model, shown, explained=explained, indices=positions, batch_size=batch_size)
        c = shown[0].names.index(CUE)  # type: ignore[union-attr]
        regions = np.stack([prepared.masks(i, cue_regions(scene, box)) for i, (scene, box) in enumerate(changed)])
        truth = GroundTruth(boxes=[np.zeros((0, 4), np.int64)] * len(shown), objects=importance.objects,
                            masks=importance.masks, importance=importance.prob_drop, scenes=shown)
        maps = {spec.name: spec.attribute(record, truth=truth if spec.needs_truth else None).maps.numpy()
                for spec in specs}
        shares[name] = {m: cue_share(v, regions, c) for m, v in maps.items()}
        evidence[name] = importance.prob_drop[:, c].astype(np.float64)
        if name == salience[0]:
            predicted = record.predicted.astype(np.int64)
            identical = identical_maps(maps, tolerance=tolerance)
    protocol = {"cue_share": "rho_cue / sum_k rho_k, rho_k the positive map density on object k's region (the "
                             "cue's whole box; the other objects' visible pixels outside it), maps spread to pixels "
                             "by nearest", "evidence": "drop of the explained class's probability when the cue alone "
                "is removed", "explained": "the model's prediction on each shown image",
                "salience": {s: SALIENCE[s].description for s in salience},
                "identical": f"maps equal up to a positive scale per image: each scaled to max |value| 1, every "
                             f"patch within {tolerance}", "images": len(found)}
    return ModelCueShares(tuple(methods), positions, shares, evidence, predicted, identical, protocol)
