"""What explaining and scoring a real-size backbone costs: seconds per image of every map and metric.

Run as ``python -m benchmarks backbones``. Each case of :data:`CASES` is a random-weight backbone of
a real configuration (the cost does not depend on the weights) read through its own input size, on
real photos with VOC boxes (Debian's ``labelme-examples``, or any ``folder:`` the command names).
For each attention variant and each map method, the engine's own calls are timed one by one on one
shared clean forward, as :func:`~infsa_viz.evaluation.evaluate` makes them: the map
(:func:`~infsa_viz.maps.attribute`), then MoRF/LeRF (the ``perturbation`` metric, its step grid
stated) and box AUC (``box_auc``) on that map (:func:`~infsa_viz.evaluation.score_images`). Every
row is set beside the floor: softmax's raw attention map on the same images, in the same run. The
whole job's time and memory, as :func:`~infsa_viz.evaluation.budget.evaluation_estimate` predicted
them before any image was scored, sit beside the measured sum; the peak resident memory after each
method is the process's high-water mark (``ru_maxrss``), so it only grows.

A case is one :class:`Case` entry: adding a backbone is one line in :data:`CASES`.
"""

from __future__ import annotations

import platform
import resource
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

__all__ = ["CASES", "Case", "backbone_cost"]

#: Debian's ``labelme-examples``: three VOC photos with boxes and the 21 VOC class names.
LABELME_VOC = "/usr/share/doc/labelme-examples/examples/bbox_detection/data_dataset_voc"


@dataclass(frozen=True)
class Case:
    """One backbone: what it is and how to build it at random weights.

    Attributes:
        description: the architecture in words (for the report).
        config: keyword arguments of :class:`~infsa_viz.model.ViTConfig` (``attention`` and the class
            names are set per run).
        data: the photos (``folder:PATH``) scored by default.
    """

    description: str
    config: dict[str, Any]
    data: str = f"folder:{LABELME_VOC}"


#: The backbones timed, by name.
CASES: dict[str, Case] = {
    "vit-b16-224": Case("ViT-B/16 at 224 x 224: 12 layers, width 768, 12 heads, 196 patches + CLS = 197 tokens",
                        dict(img_size=224, in_chans=3, patch_size=16, embed_dim=768, depth=12, num_heads=12,
                             mlp_ratio=4.0)),
    "dinov2-b14-reg4-518": Case("DINOv2-B/14 with 4 registers at 518 x 518: 12 layers, width 768, 12 heads, layer "
                                "scale, 37 x 37 = 1,369 patches + CLS + 4 registers = 1,374 tokens",
                                dict(img_size=518, in_chans=3, patch_size=14, embed_dim=768, depth=12, num_heads=12,
                                     mlp_ratio=4.0, register_tokens=4, layer_scale=True, pool="cls_mean",
                                     norm_eps=1e-6, pos_interpolation="bicubic_antialias")),
}


def _peak_rss() -> int:
    """The process's resident-memory high-water mark in bytes (Linux reports KiB)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def backbone_cost(case: str, *, variants: list[str], methods: list[str], data: str | None = None, n_images: int = 3,
                  steps: int = 20, step_grid: str = "auto", batch_size: int = 512, seed: int = 0,
                  against: tuple[str, int] | None = None, save_model: str | None = None) -> dict[str, Any]:
    """Seconds per image of each map, MoRF/LeRF and box AUC on one backbone, beside the softmax floor.

    Args:
        case: a key of :data:`CASES`.
        variants: attention variants (softmax first or added: it gives the floor).
        methods: map methods (keys of :data:`infsa_viz.maps.METHODS`).
        data: ``folder:PATH`` of photos with VOC boxes (default: the case's).
        n_images: photos scored (at most those the folder holds).
        steps: MoRF/LeRF steps ``K`` (the ``steps`` setting).
        step_grid: the ``step_grid`` setting (default ``"auto"``: uniform ``k/K`` up to 100 patches, cosine
            with at most 10 steps above; :func:`~infsa_viz.metrics.perturbation.resolve_step_grid`).
        batch_size: perturbed copies per forward.
        seed: weights and tie-breaking seed.
        against: ``(grid, steps)`` of an older protocol timed beside each row, right after it, in the same
            run: :func:`~infsa_viz.metrics.perturbation_curves` of both orders on the same map, without the
            copies the maps share (``("uniform", 20)``: the protocol before the step grid); ``None``: not timed.
        save_model: a directory to write softmax's random-weight model into (with the photos' class
            names), so ``infsa-viz evaluate`` on the same photos can be timed against this report.

    Returns:
        The JSON-ready report: ``protocol`` and one entry per variant with a row per method.
    """
    from infsa_viz.data import data_source
    from infsa_viz.data.voc import read_class_index
    from infsa_viz.estimate import format_bytes
    from infsa_viz.evaluation import EvalSettings, score_images
    from infsa_viz.evaluation.engine import chunk_record
    from infsa_viz.evaluation.budget import evaluation_estimate
    from infsa_viz.maps import attribute, check_method
    from infsa_viz.metrics import morf_aoc, perturbation_curves
    from infsa_viz.metrics.perturbation import resolve_step_grid
    from infsa_viz.model import ViTConfig, VisionTransformer
    from infsa_viz.model import save_model as write_model

    if case not in CASES:
        raise ValueError(f"case={case!r} must be one of {list(CASES)}")
    spec = CASES[case]
    data = data or spec.data
    source = data_source(data)
    root = source.root
    if root is None:
        raise ValueError(f"data={data!r} must be 'folder:PATH' (photos with VOC boxes)")
    for method in methods:
        check_method(method)
    variants = ["softmax", *[v for v in variants if v != "softmax"]]
    index = root / "class_names.txt"  # labelme's class list; a folder without one is labelled by class folders
    names = list(read_class_index(index)) if index.is_file() else None
    folder = source.open(classes=names, num_classes=len(names) if names else None)
    report: dict[str, Any] = {}
    floor: dict[str, float] = {}
    for variant in variants:
        torch.manual_seed(seed)
        config = ViTConfig(**spec.config, attention=variant, num_classes=len(names) if names else 21,
                           class_names=names)
        model = VisionTransformer(config).eval()
        if save_model is not None and variant == variants[0]:
            write_model(model, save_model)  # the model `infsa-viz evaluate` is timed with against this report
        images = folder.labelled(n_images)
        n = len(images)
        metrics = {"perturbation": EvalSettings(metrics=["perturbation"], steps=steps, step_grid=step_grid,
                                                batch_size=batch_size, select="all", seed=seed),
                   "box_auc": EvalSettings(metrics=["box_auc"], select="all", seed=seed)}
        whole = EvalSettings(metrics=["perturbation", "box_auc"], steps=steps, step_grid=step_grid,
                             batch_size=batch_size, select="all", seed=seed, chunk=max(n, 1))
        estimate = evaluation_estimate([(variant, model)], methods, whole, n_images=n)
        record = chunk_record(model, images, whole, capture=True)
        clean = _timed(lambda: record.attention)[1]  # the one clean forward, with attention, shared by every method
        rows = []
        fractions: list[float] = []
        for method in methods:
            result, seconds_map = _timed(lambda: attribute(record, method))
            scored, figures = {}, {}
            for name, protocol in metrics.items():
                (found, _, parts), seconds = _timed(lambda p=protocol: score_images(
                    model, images, method, protocol=p, record=record, result=result))
                scored[name] = seconds
                if name == "perturbation":
                    fractions = parts["perturbation"].get("fractions", fractions)
                    figures = {k: [r.figures.get(k) for r in found] for k in ("morf_aoc", "lerf_auc")}
            older = {}
            if against is not None:
                curves, seconds_old = _timed(lambda: perturbation_curves(
                    model, record.inputs, result.maps, record.explained, patch_size=model.patch_size, order="both",
                    steps=against[1], step_grid=against[0], batch_size=batch_size, seed=seed, logits=record.logits))
                older = {"morf_lerf_against": round(seconds_old / n, 4),
                         "x_against": round(seconds_old / scored["perturbation"], 2) if scored["perturbation"] else None,
                         "morf_aoc_against": [float(v) for v in morf_aoc(curves["morf"], select="all").per_image]}
            rows.append({"method": method,
                         "seconds_per_image": {"map": round(seconds_map / n, 4),
                                               "morf_lerf": round(scored["perturbation"] / n, 4),
                                               "box_auc": round(scored["box_auc"] / n, 4),
                                               "total": round((seconds_map + sum(scored.values())) / n, 4)},
                         "valid": bool(torch.isfinite(result.maps).all()),
                         "morf_aoc": figures.get("morf_aoc"), "lerf_auc": figures.get("lerf_auc"), **older,
                         "peak_rss_after": _peak_rss()})
        measured = clean + sum(r["seconds_per_image"]["total"] * n for r in rows)
        if variant == "softmax" and "attention" in methods:
            floor = next(r["seconds_per_image"] for r in rows if r["method"] == "attention")
        for row in rows:
            row["x_floor"] = {k: (round(v / floor[k], 2) if floor.get(k) else None)
                              for k, v in row["seconds_per_image"].items()}
        report[variant] = {
            "tokens": config.num_prefix_tokens + (config.img_size // config.patch_size) ** 2,
            "n_images": n, "clean_forward_seconds": round(clean, 3), "rows": rows,
            "measured_seconds": round(measured, 2),
            "estimate": {**estimate.to_dict(), "text": estimate.describe()},
            "estimate_over_measured": round(estimate.seconds / measured, 3) if measured else None,
            "peak_rss": format_bytes(_peak_rss()),
            "step_fractions": fractions,
        }
    patches = (spec.config["img_size"] // spec.config["patch_size"]) ** 2
    grid, used, why = resolve_step_grid(step_grid, steps, patches)
    return {"protocol": {
        "case": case, "description": spec.description, "config": spec.config, "data": data,
        "variants": variants, "methods": methods, "n_images": n_images, "steps": steps, "step_grid": step_grid,
        "fractions": f"{grid} grid of {used} steps ({why}; infsa_viz.metrics.perturbation.removed_counts), both "
                     "orders; the fully removed image scored once; a perturbed copy that several maps of a chunk "
                     "remove alike scored once",
        "against": None if against is None else
        f"morf_lerf_against: perturbation_curves of both orders on the {against[0]} grid of {against[1]} steps, "
        "on the same map, without copies shared between maps, timed right after each row; x_against = its "
        "seconds over the row's morf_lerf",
        "batch_size": batch_size, "seed": seed,
        "floor": "softmax's raw attention map ('attention') on the same photos in the same run: x_floor = seconds "
                 "over the floor's",
        "timing": "wall seconds of the engine's calls, one by one, on one shared clean forward with attention",
        "threads": torch.get_num_threads(), "torch": torch.__version__, "machine": platform.machine(),
        "processor": platform.processor() or None}, "variants": report}
