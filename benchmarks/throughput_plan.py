"""The throughput benchmark's cases: which run, in which order, what the worker receives, and
when a larger size is skipped (after a failure, or when its time is predicted past the limit).

Importable from :mod:`benchmarks.throughput` as well.
"""

from __future__ import annotations

import math
from typing import Any

from infsa_viz.model import num_tokens

from . import SHIPPED_MODELS
from .throughput_settings import GB, SECTIONS, SHAPES, BenchSettings, shape_config

__all__ = [
    "FAILED",
    "case_spec",
    "failure_key",
    "plan_cases",
    "predicted_seconds",
    "time_limit",
]

#: Statuses after which the variant's larger sizes (same section and shape) are skipped.
FAILED = ("oom", "timeout")


def _spectral_cases(settings: BenchSettings) -> list[dict[str, Any]]:
    """The shipped models' maps: variant (with a checkpoint) × method × side ascending."""
    config = SHAPES["shipped"]
    return [{"section": "spectral", "shape": "shipped", "variant": variant, "method": method,
             "checkpoint": SHIPPED_MODELS[variant], "resolution": side, "tokens": num_tokens(config, side),
             "batch": 1}
            for variant in settings.spectral_variants if variant in SHIPPED_MODELS
            for method in settings.spectral_methods for side in sorted(settings.spectral_resolutions)]


def plan_cases(settings: BenchSettings) -> list[dict[str, Any]]:
    """All cases, in run order: section, shape, size ascending, variant (baseline first per size).

    The spectral section runs once, on the ``shipped`` shape (the trained models' architecture).
    """
    cases = []
    for section in (s for s in SECTIONS if s in settings.sections):
        if section == "spectral":
            cases += _spectral_cases(settings)
            continue
        for shape in settings.shapes:
            config = shape_config(shape, settings)
            sizes = {"model": settings.resolutions, "attention": settings.attention_tokens,
                     "naive": settings.naive_tokens}[section]
            for size in sorted(sizes):
                for variant in settings.variants:
                    case: dict[str, Any] = {"section": section, "shape": shape, "variant": variant}
                    if section == "model":
                        case.update(resolution=size, tokens=num_tokens(config, size), batch=settings.batch)
                    else:
                        case.update(resolution=None, tokens=size, batch=1)
                    cases.append(case)
    return cases


def failure_key(case: dict[str, Any]) -> tuple[str, ...]:
    """Cases sharing this key are skipped at larger sizes after one of them fails."""
    return (case["section"], case["shape"], case["variant"], case.get("method", ""))


def time_limit(case: dict[str, Any], settings: BenchSettings) -> float:
    """The case's wall-clock limit: ``spectral_time_limit_s`` for spectral maps, else ``time_limit_s``."""
    return settings.spectral_time_limit_s if case["section"] == "spectral" else settings.time_limit_s


def predicted_seconds(history: list[dict[str, Any]], tokens: int) -> float | None:
    """One forward's time at ``tokens``, extrapolated from the last two completed sizes of the same key.

    The exponent is the one those two sizes show (clipped to [1, 2]: linear to quadratic), so a
    size is predicted from how the variant itself scales. ``None`` with fewer than two sizes.
    """
    if len(history) < 2:
        return None
    (n0, t0), (n1, t1) = [(r["tokens"], r["latency_s"]) for r in history[-2:]]
    if not (n1 > n0 > 0 and t0 > 0 and t1 > 0):
        return None
    exponent = min(2.0, max(1.0, math.log(t1 / t0) / math.log(n1 / n0)))
    return t1 * (tokens / n1) ** exponent


def case_spec(case: dict[str, Any], settings: BenchSettings) -> dict[str, Any]:
    """The JSON the worker process receives for ``case`` (a spectral case: one timed call, no warm-up)."""
    spectral = case["section"] == "spectral"
    return {
        **case,
        "config": shape_config(case["shape"], settings, case["variant"]).to_dict(),
        "warmup": 0 if spectral else settings.warmup,
        "repeats": 1 if spectral else settings.repeats,
        "min_timing_s": settings.min_timing_s,
        "threads": settings.threads,
        "device": settings.device,
        "dtype": settings.dtype,
        "memory_limit_bytes": int(settings.memory_limit_gb * GB),
        "seed": settings.seed,
    }
