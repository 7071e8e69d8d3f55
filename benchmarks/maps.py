"""Cost of producing each map method vs tokens: wall time and peak RSS, one process per case.

Run as ``python -m benchmarks maps``. The methods come from the registry
(:data:`infsa_viz.maps.METHODS`, see :func:`map_cases`). Each case builds a random-weight model
of the shipped shape (patch 8, width 64, 4 heads, depth 4) for the given variant, warms the
method up once on a small image (imports, lazy initialisation; timed separately), then times one
:func:`~infsa_viz.maps.attribute` call on one ``side × side`` image in a fresh process
(``python -m benchmarks.maps SPEC``; peak RSS = that process's VmHWM; an address-space cap turns
an N×N allocation that cannot fit into ``oom``).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from typing import Any, Sequence

from infsa_viz.model import VARIANTS
from infsa_viz.progress import progress

from .throughput import SHAPES
from .worker import child_command, is_oom_message, peak_rss_bytes

__all__ = ["GRADIENT_STEPS", "WARMUP_SIDE", "map_cases", "run_map_benchmark"]

#: Side of the image used for the untimed warm-up call (65 tokens at patch 8).
WARMUP_SIDE = 64

#: ``n_steps`` of the gradient-family methods that take one (fewer than their default, for speed).
GRADIENT_STEPS = 16


def map_cases() -> list[tuple[str, dict[str, Any]]]:
    """The ``(method, options)`` pairs measured, in registry order (:data:`~infsa_viz.maps.METHODS`).

    Rules:

    * every registered method except the ``baseline`` family, with its default options, except
      that gradient-family methods with an ``n_steps`` (or ``steps``, e.g. TAM) option run with
      :data:`GRADIENT_STEPS` steps;
    * in addition, for every method whose defaults contain a ``matrix`` option, the InfSA reading
      ``{"matrix": "infsa"}``: the graph ``Â`` built from the layer's q, k whatever the variant,
      matrix-free where the method works on operators (e.g. ``visits`` through GMRES).

    Options not named here keep the method's defaults (``options`` lists only the changed ones).
    """
    from infsa_viz.maps import METHODS

    cases: list[tuple[str, dict[str, Any]]] = []
    for name, method in METHODS.items():
        if method.role != "explanation":  # the floor and the oracles cost nothing worth measuring
            continue
        key = next((k for k in ("n_steps", "steps") if k in method.defaults), None)
        steps = {key: GRADIENT_STEPS} if method.family == "gradient" and key else {}
        cases.append((name, steps))
        if "matrix" in method.defaults:
            cases.append((name, {"matrix": "infsa"}))
    return cases


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    """Measure one case in this process (``python -m benchmarks.maps SPEC``)."""
    import torch

    from infsa_viz.maps import attribute_images
    from infsa_viz.model import VisionTransformer

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    model = VisionTransformer(SHAPES["shipped"].replace(attention=spec["variant"])).eval()
    t0 = time.perf_counter()
    attribute_images(model, torch.randn(1, 1, WARMUP_SIDE, WARMUP_SIDE), spec["method"], **spec["options"])
    warmup = time.perf_counter() - t0
    x = torch.randn(1, 1, spec["side"], spec["side"])  # (B, C, H, W)
    base = peak_rss_bytes()
    limit = int(spec["memory_gb"] * 1e9)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    t0 = time.perf_counter()
    maps = attribute_images(model, x, spec["method"], **spec["options"]).maps  # (B, h, w)
    seconds = time.perf_counter() - t0
    return {"seconds": round(seconds, 4), "warmup_seconds": round(warmup, 4), "peak_rss_bytes": peak_rss_bytes(),
            "rss_before_bytes": base, "finite": bool(torch.isfinite(maps).all())}


def _run_child(spec: dict[str, Any], time_limit_s: float) -> dict[str, Any]:
    """Status and measurements of one case, run in a fresh process."""
    command, env = child_command("benchmarks.maps", json.dumps(spec))
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=time_limit_s, env=env)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "message": f"over {time_limit_s:g} s"}
    if proc.returncode == 0:
        return {"status": "ok", **json.loads(proc.stdout.strip().splitlines()[-1])}
    tail = (proc.stderr.strip().splitlines() or ["killed"])[-1][:200]
    memory = is_oom_message(tail) or proc.returncode < 0  # killed by a signal: the OOM killer
    return {"status": "oom" if memory else "error", "message": tail}


def run_map_benchmark(*, variants: tuple[str, ...] = VARIANTS,
                      sides: tuple[int, ...] = (256, 512, 1024, 2048), threads: int = 2,
                      time_limit_s: float = 120.0, memory_gb: float = 16.0, methods: Sequence[str] | None = None,
                      on_case=None) -> list[dict[str, Any]]:
    """Every variant × :func:`map_cases` entry (of ``methods`` only, when given) at every side; a case that
    fails is skipped at larger sides.

    Returns:
        One row per (variant, method, options, side): ``status`` (``ok``, ``oom``, ``timeout``,
        ``error`` or ``skipped``), ``tokens``, ``cost`` (the method's forwards/backwards per image,
        :attr:`~infsa_viz.maps.MapMethod.cost`), ``reference``, and for ``ok`` the child's
        ``seconds``, ``warmup_seconds``, ``peak_rss_bytes``, ``rss_before_bytes`` and ``finite``.
    """
    from infsa_viz.maps import METHODS

    rows: list[dict[str, Any]] = []
    plan = [(variant, method, options) for variant in variants for method, options in map_cases()
            if methods is None or method in methods]
    for variant, method, options in progress(plan, desc="maps", unit="method"):
        failed = None
        for side in sides:
            spec = {"variant": variant, "method": method, "options": options, "side": side, "threads": threads,
                    "memory_gb": memory_gb}
            row = {"method": method, "options": options, "variant": variant, "side": side,
                   "tokens": (side // SHAPES["shipped"].patch_size) ** 2 + 1, "cost": METHODS[method].cost,
                   "reference": METHODS[method].reference}
            if failed:
                row.update(status="skipped", message=f"{failed} at a smaller size")
            else:
                row.update(_run_child(spec, time_limit_s))
                if row["status"] != "ok":
                    failed = row["status"]
            rows.append(row)
            if on_case:
                on_case(row)
    return rows


if __name__ == "__main__":
    print(json.dumps(_child(json.loads(sys.argv[1]))))
