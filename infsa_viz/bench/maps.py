"""Cost of producing each map method vs tokens: wall time and peak RSS, one process per case.

Run as ``infsa-viz bench-maps``. Each case builds a random-weight model of the shipped shape
(patch 8, width 64, 4 heads, depth 4) for the given variant, warms the method up once on a small
image (imports, lazy initialisation; timed separately), then times one
:func:`~infsa_viz.maps.explain` call on one ``side × side`` image in a fresh process (peak RSS =
that process's VmHWM; an address-space cap turns an N×N allocation that cannot fit into ``oom``).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from typing import Any

from ..progress import progress
from .throughput import SHAPES
from .worker import is_oom_message, peak_rss_bytes

__all__ = ["CASES", "WARMUP_SIDE", "run_map_benchmark"]

#: Side of the image used for the untimed warm-up call (65 tokens at patch 8).
WARMUP_SIDE = 64

#: (method, options) pairs measured; ``visits/infsa`` is the matrix-free path on Â from q, k.
CASES: tuple[tuple[str, dict[str, Any]], ...] = (
    ("linear_estimate", {}),
    ("visits", {}),
    ("visits", {"matrix": "infsa"}),
    ("perron", {}),
    ("neumann", {}),
    ("rollout", {}),
    ("integrated_gradients", {"n_steps": 16}),
)


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    from ..maps import explain
    from ..vit import VisionTransformer

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    model = VisionTransformer(SHAPES["shipped"].replace(attention=spec["variant"])).eval()
    t0 = time.perf_counter()
    explain(model, torch.randn(1, 1, WARMUP_SIDE, WARMUP_SIDE), spec["method"], **spec["options"])
    warmup = time.perf_counter() - t0
    x = torch.randn(1, 1, spec["side"], spec["side"])
    base = peak_rss_bytes()
    limit = int(spec["memory_gb"] * 1e9)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    t0 = time.perf_counter()
    m = explain(model, x, spec["method"], **spec["options"])
    seconds = time.perf_counter() - t0
    return {"seconds": round(seconds, 4), "warmup_seconds": round(warmup, 4), "peak_rss_bytes": peak_rss_bytes(),
            "rss_before_bytes": base, "finite": bool(torch.isfinite(m).all())}


def run_map_benchmark(*, variants: tuple[str, ...] = ("linear_infsa",),
                      sides: tuple[int, ...] = (256, 512, 1024, 2048), threads: int = 2,
                      time_limit_s: float = 120.0, memory_gb: float = 16.0, on_case=None) -> list[dict[str, Any]]:
    """Every variant × :data:`CASES` entry at every side; a case that fails is skipped at larger sides."""
    rows: list[dict[str, Any]] = []
    plan = [(variant, method, options) for variant in variants for method, options in CASES]
    for variant, method, options in progress(plan, desc="bench-maps", unit="method"):
        failed = None
        for side in sides:
            spec = {"variant": variant, "method": method, "options": options, "side": side, "threads": threads,
                    "memory_gb": memory_gb}
            row = {"method": method, "options": options, "variant": variant, "side": side,
                   "tokens": (side // SHAPES["shipped"].patch_size) ** 2 + 1}
            if failed:
                row.update(status="skipped", message=f"{failed} at a smaller size")
            else:
                try:
                    proc = subprocess.run([sys.executable, "-m", "infsa_viz.bench.maps", json.dumps(spec)],
                                          capture_output=True, text=True, timeout=time_limit_s)
                    if proc.returncode == 0:
                        row.update(status="ok", **json.loads(proc.stdout.strip().splitlines()[-1]))
                    else:
                        tail = (proc.stderr.strip().splitlines() or ["killed"])[-1][:200]
                        memory = is_oom_message(tail) or proc.returncode < 0  # killed by a signal: the OOM killer
                        row.update(status="oom" if memory else "error", message=tail)
                except subprocess.TimeoutExpired:
                    row.update(status="timeout", message=f"over {time_limit_s:g} s")
                if row["status"] != "ok":
                    failed = row["status"]
            rows.append(row)
            if on_case:
                on_case(row)
    return rows


if __name__ == "__main__":
    print(json.dumps(_child(json.loads(sys.argv[1]))))
