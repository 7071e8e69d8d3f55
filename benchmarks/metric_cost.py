"""What each registered metric costs per image, side by side, on the shipped-size and hard-size models.

Run as ``python -m benchmarks metric-cost``. For each model, the images, logits, ground truth and
map are prepared once (:func:`~infsa_viz.evaluation.engine.scoring_context`, timed as
``inputs_logits_and_map``), then every per-image metric of the registry
(:data:`~infsa_viz.metrics.registry.METRICS`) scores that same context on its own, as the engine
calls it. The scene objects' importance (the evidence protocol's interventions, shared by every map
of an evaluation) and the greedy deletion oracle (a reference map) are timed on their own. Medians
over ``repeats`` runs, on the threads the command sets.
"""

from __future__ import annotations

import platform
import time
from typing import Any

import numpy as np
import torch

__all__ = ["metric_cost"]


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def metric_cost(models: dict[str, tuple[str, str]], *, n_images: int = 20, repeats: int = 3,
                method: str = "attention") -> dict[str, Any]:
    """Milliseconds per image of every per-image metric, object importance and the greedy oracle.

    Args:
        models: label → ``(model directory, benchmark)``.
        n_images: the first images of each benchmark's test split.
        repeats: timed runs of each case (the median is reported).
        method: the map every metric scores.
    """
    from infsa_viz.data import test_split
    from infsa_viz.evaluation import EvalSettings, object_importance
    from infsa_viz.evaluation.engine import scoring_context
    from infsa_viz.formats import load_model
    from infsa_viz.maps import attribute_images
    from infsa_viz.metrics.registry import METRICS, RowMetric

    if n_images < 1 or repeats < 1:
        raise ValueError(f"--n-images={n_images} and --repeats={repeats} must be positive")
    everything = EvalSettings(subsample=n_images, road_images=n_images, sanity_images=0)
    metrics = [m for m in METRICS.values() if not isinstance(m, RowMetric)]
    out: dict[str, Any] = {}
    for label, (directory, benchmark) in models.items():
        model = load_model(directory).eval()
        data = test_split(n_images, benchmark=benchmark)
        evidence = object_importance(model, data, explained=data.labels)

        def context():
            return scoring_context(model, data, method, protocol=everything, evidence=evidence)[0]

        ctx = context()
        for metric in metrics:  # warm-up: imports and caches
            metric.score(ctx)
        per_metric = {m.name: round(1000 * _median_seconds(lambda m=m: m.score(ctx), repeats) / n_images, 3)
                      for m in metrics}
        base = _median_seconds(context, repeats)
        importance = _median_seconds(lambda: object_importance(model, data, explained=data.labels), repeats)
        x = ctx.images
        greedy = _median_seconds(lambda: attribute_images(model, x, "greedy_deletion", target=torch.as_tensor(data.labels)),
                                 1)
        out[label] = {"model": directory, "benchmark": benchmark, "image_side": int(x.shape[-1]),
                      "patches": int((x.shape[-1] // model.patch_size) ** 2),
                      "objects": len(evidence.objects), "ms_per_image": {
                          "inputs_logits_and_map": round(1000 * base / n_images, 3), **per_metric,
                          "object_importance (evidence interventions, once per model and image)":
                              round(1000 * importance / n_images, 3),
                          "greedy_deletion oracle map (one run)": round(1000 * greedy / n_images, 3)}}
    return {"protocol": {"what": "milliseconds per image: each metric's score() on one prepared context (images, "
                                 "logits, ground truth, map); the context itself, the object importance and the "
                                 "greedy oracle timed alone",
                         "method": method, "n_images": n_images, "repeats": repeats, "statistic": "median",
                         "threads": torch.get_num_threads(), "torch": torch.__version__,
                         "machine": platform.machine(), "processor": platform.processor() or None},
            "models": out}
