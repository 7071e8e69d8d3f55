"""Where the time goes: ``torch.profiler`` over one inference forward of a benchmark model.

Run as ``python -m benchmarks profile``. Each case is a (variant, resolution) pair of one
benchmark shape (:data:`benchmarks.throughput.SHAPES`), random weights, batch 1, eval mode under
``torch.inference_mode`` with fused softmax attention — the same set-up as the throughput
benchmark's model section (:func:`benchmarks.worker.build_case`). :func:`largest_completed`
reads a throughput report and picks, per variant, the largest resolution that finished (the
issue's "largest resolution it completes").
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

__all__ = ["largest_completed", "profile_forward"]


def largest_completed(report: Mapping[str, Any], *, shape: str) -> dict[str, int]:
    """``{variant: resolution}``: the largest model-section resolution with status ``ok`` per variant.

    Args:
        report: a throughput report (:func:`benchmarks.throughput.run_benchmark`).
        shape: the benchmark shape whose cases are read.

    Raises:
        ValueError: if the report has no completed model-section case for ``shape``.
    """
    best: dict[str, int] = {}
    for case in report.get("cases", []):
        if case.get("section") == "model" and case.get("shape") == shape and case.get("status") == "ok":
            best[case["variant"]] = max(best.get(case["variant"], 0), int(case["resolution"]))
    if not best:
        raise ValueError(f"shape={shape!r}: the throughput report has no completed model-section case for this shape")
    return best


def profile_forward(variant: str, resolution: int, *, shape: str = "shipped", top: int = 12,
                    seed: int = 0) -> dict[str, Any]:
    """Profile one forward (after one untimed warm-up) and summarise operators by self CPU time.

    Returns:
        ``variant``, ``shape``, ``resolution``, ``tokens``, ``wall_s`` (the profiled forward,
        profiler overhead included), ``self_cpu_total_ms`` and ``top_ops``: the ``top`` operators
        by self CPU time (``name``, ``calls``, ``self_cpu_ms``, ``percent`` of the total).

    Raises:
        ValueError: for an unknown variant or shape, a resolution not divisible by the patch, or
            ``top < 1``.
    """
    import torch
    from torch.profiler import ProfilerActivity, profile

    from .throughput import BenchSettings, shape_config
    from .worker import build_case

    if top < 1:
        raise ValueError(f"top={top} must be >= 1")
    config = shape_config(shape, BenchSettings(), variant)
    if resolution < config.patch_size or resolution % config.patch_size:
        raise ValueError(f"resolution={resolution} must be a positive multiple of the patch size {config.patch_size}")
    torch.manual_seed(seed)
    spec = {"config": config.to_dict(), "section": "model", "resolution": resolution, "batch": 1}
    model, x, _ = build_case(spec, "cpu")  # the bench's own set-up: eval, fused softmax, random images
    with torch.inference_mode():
        model(x)  # warm-up: lazy initialisation and allocator growth stay out of the profile
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            start = time.perf_counter()
            model(x)
            wall = time.perf_counter() - start
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)  # microseconds
    ranked = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:top]
    return {
        "variant": variant, "shape": shape, "resolution": resolution,
        "tokens": (resolution // config.patch_size) ** 2 + 1, "threads": torch.get_num_threads(),
        "wall_s": round(wall, 4), "self_cpu_total_ms": round(total / 1e3, 3),
        "top_ops": [{"name": e.key, "calls": int(e.count), "self_cpu_ms": round(e.self_cpu_time_total / 1e3, 3),
                     "percent": round(100 * e.self_cpu_time_total / total, 1)} for e in ranked],
    }
