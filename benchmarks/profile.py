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

__all__ = ["largest_completed", "op_slopes", "profile_forward"]


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


def profile_forward(variant: str, resolution: int | None = None, *, shape: str = "shipped", top: int = 12,
                    seed: int = 0, tokens: int | None = None, min_seconds: float = 0.2) -> dict[str, Any]:
    """Profile forwards (after one untimed warm-up) and summarise operators by self CPU time.

    Give ``resolution`` for a whole model (the throughput benchmark's model section) or ``tokens``
    for one attention layer on ``(1, tokens, C)`` random tokens (its attention section). Enough
    forwards are profiled to last about ``min_seconds`` (at most 200), and every time is per forward.

    Returns:
        ``variant``, ``shape``, ``section``, ``resolution``, ``tokens``, ``forwards``, ``wall_s``
        (per forward, profiler overhead included), ``self_cpu_total_ms`` and ``top_ops``: the
        ``top`` operators by self CPU time (``name``, ``calls``, ``self_cpu_ms``, ``percent``).

    Raises:
        ValueError: for an unknown variant or shape, neither or both of ``resolution`` and
            ``tokens``, a resolution not divisible by the patch, or ``top < 1``.
    """
    import math

    import torch
    from torch.profiler import ProfilerActivity, profile

    from .throughput import BenchSettings, shape_config
    from .worker import build_case

    if top < 1:
        raise ValueError(f"top={top} must be >= 1")
    if (resolution is None) == (tokens is None):
        raise ValueError("give either resolution (a whole model) or tokens (one attention layer)")
    config = shape_config(shape, BenchSettings(), variant)
    if tokens is not None:
        if tokens < 1:
            raise ValueError(f"tokens={tokens} must be >= 1")
        spec = {"config": config.to_dict(), "section": "attention", "tokens": tokens, "batch": 1}
    else:
        if resolution < config.patch_size or resolution % config.patch_size:
            raise ValueError(f"resolution={resolution} must be a positive multiple of the patch size "
                             f"{config.patch_size}")
        spec = {"config": config.to_dict(), "section": "model", "resolution": resolution, "batch": 1}
        tokens = (resolution // config.patch_size) ** 2 + 1
    torch.manual_seed(seed)
    model, x, _ = build_case(spec, "cpu")  # the bench's own set-up: eval, fused softmax, random inputs
    with torch.inference_mode():
        start = time.perf_counter()
        model(x)  # warm-up: lazy initialisation and allocator growth stay out of the profile
        forwards = max(1, min(200, math.ceil(min_seconds / max(time.perf_counter() - start, 1e-9))))
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            start = time.perf_counter()
            for _ in range(forwards):
                model(x)
            wall = (time.perf_counter() - start) / forwards
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)  # microseconds, all forwards
    ranked = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:top]
    return {
        "variant": variant, "shape": shape, "section": spec["section"], "resolution": resolution,
        "tokens": tokens, "threads": torch.get_num_threads(), "forwards": forwards,
        "wall_s": round(wall, 6), "self_cpu_total_ms": round(total / 1e3 / forwards, 4),
        "top_ops": [{"name": e.key, "calls": int(e.count) // forwards,
                     "self_cpu_ms": round(e.self_cpu_time_total / 1e3 / forwards, 4),
                     "percent": round(100 * e.self_cpu_time_total / total, 1)} for e in ranked],
    }


def op_slopes(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per ``section/variant`` profiled at several sizes: each operator's log-log slope of self CPU
    time per forward vs tokens (over the sizes where it is in the top list), and the total's.

    An operator with a slope well above 1 is the super-linear part of an O(N) layer.
    """
    from .report import loglog_slope

    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(f"{row.get('section', 'model')}/{row['variant']}", []).append(row)
    out: dict[str, dict[str, Any]] = {}
    for key, group in groups.items():
        if len({r["tokens"] for r in group}) < 2:
            continue
        group = sorted(group, key=lambda r: r["tokens"])
        ops: dict[str, list[tuple[int, float]]] = {}
        for row in group:
            for op in row["top_ops"]:
                if op["self_cpu_ms"] > 0:
                    ops.setdefault(op["name"], []).append((row["tokens"], op["self_cpu_ms"]))
        slopes = {name: {"slope": round(loglog_slope(*zip(*points)), 3), "points": len(points),
                         "ms_at_largest": points[-1][1] if points[-1][0] == group[-1]["tokens"] else None}
                  for name, points in ops.items() if len({n for n, _ in points}) >= 2}
        out[key] = {"tokens": [r["tokens"] for r in group],
                    "total": round(loglog_slope([r["tokens"] for r in group],
                                                [r["self_cpu_total_ms"] for r in group]), 3),
                    "wall": round(loglog_slope([r["tokens"] for r in group], [r["wall_s"] for r in group]), 3),
                    "ops": dict(sorted(slopes.items(), key=lambda kv: -(kv[1]["ms_at_largest"] or 0)))}
    return out
