"""Inference throughput, latency and peak memory vs resolution, one fresh process per case.

Four sections share one runner:

* ``model``: a whole :class:`~infsa_viz.model.vit.VisionTransformer` (random weights, fused softmax SDPA)
  on random images of each resolution, position embeddings interpolated to the grid;
* ``attention``: one attention layer on ``(1, N, C)`` random tokens, for the log-log slope of
  time vs tokens (:func:`benchmarks.report.loglog_slope`);
* ``naive``: the same layer through the paper's formulas written out densely
  (:mod:`benchmarks.naive`), at ``naive_tokens``, beside the ``attention`` rows of the same sizes;
* ``spectral``: the ``spectral_methods`` maps (visits, Perron) of the shipped trained models
  (:data:`benchmarks.SHIPPED_MODELS`) at ``spectral_resolutions``, matrix-free above 1,024 tokens,
  with the solver's iterations and residual.

Each case runs in ``python -m benchmarks.worker`` under a memory cap (``RLIMIT_AS`` on CPU,
a CUDA memory fraction on GPU) and a wall-time limit, so one blow-up ends only its own process:
its status is ``oom`` or ``timeout`` and the variant's larger sizes in that shape are ``skipped``.

This module runs the cases (:func:`run_case`, :func:`run_benchmark`). What to measure is
:class:`BenchSettings` (:mod:`benchmarks.throughput_settings`), the cases and the skip rule are
:mod:`benchmarks.throughput_plan`, the stored protocol :mod:`benchmarks.throughput_protocol`; every
name of :data:`__all__` is importable from here.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from infsa_viz.io import write_json
from infsa_viz.progress import progress

from .throughput_plan import FAILED, case_spec, failure_key, plan_cases, predicted_seconds, time_limit
from .throughput_protocol import protocol

# What to measure, re-exported: benchmarks.throughput.X keeps working.
from .throughput_settings import (  # noqa: F401  (re-exported)
    DTYPES,
    GB,
    SECTIONS,
    SHAPES,
    BenchSettings,
    check_fit,
    image_bytes,
    memory_budget,
    shape_config,
)
from .worker import child_command, is_oom_message

__all__ = [
    "FAILED",
    "SECTIONS",
    "SHAPES",
    "BenchSettings",
    "plan_cases",
    "protocol",
    "run_benchmark",
    "run_case",
    "shape_config",
]


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])[:500]


def run_case(spec: dict[str, Any], *, time_limit_s: float) -> dict[str, Any]:
    """Run one case in a fresh ``python -m benchmarks.worker`` process (:func:`~benchmarks.worker.child_command`).

    Returns:
        The worker's measurements (status ``ok``, ``oom`` or ``error``), or status ``timeout``
        when the process ran past ``time_limit_s`` (it is killed), or ``oom`` when it was killed
        by a signal (the kernel's out-of-memory killer sends SIGKILL); ``wall_s`` is the process's
        wall time.
    """
    with tempfile.TemporaryDirectory(prefix="infsa-bench-") as tmp:
        out = Path(tmp) / "result.json"
        spec = {**spec, "deadline_unix": time.time() + time_limit_s}
        command, env = child_command("benchmarks.worker", json.dumps(spec), str(out))
        start = time.perf_counter()
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=time_limit_s, env=env)
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "message": f"ran past the {time_limit_s:g} s time limit; killed",
                    "wall_s": time.perf_counter() - start}
        wall = time.perf_counter() - start
        if out.is_file():
            return {**json.loads(out.read_text(encoding="utf-8")), "wall_s": wall}
    if proc.returncode == -signal.SIGALRM:  # the worker's own alarm, after the deadline
        return {"status": "timeout", "message": f"ran past the {time_limit_s:g} s time limit; "
                "ended by its own alarm", "wall_s": wall}
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        return {"status": "oom", "message": f"killed by {name} (out-of-memory killer or failed allocation)",
                "wall_s": wall}
    stderr = proc.stderr or ""
    oom = is_oom_message(stderr)
    return {"status": "oom" if oom else "error",
            "message": f"worker exited with code {proc.returncode}: {_tail(stderr)}", "wall_s": wall}


def run_benchmark(
    settings: BenchSettings,
    *,
    out: str | Path | None = None,
    on_case: Callable[[dict[str, Any]], None] | None = None,
    extra_protocol: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run every case of ``settings``; returns ``{"protocol", "cases", "summary", "complete"}``.

    Args:
        settings: what to measure.
        out: if given, the JSON report is rewritten atomically after every case
            (``"complete": false`` until the last), so an interrupted run keeps its results.
        on_case: called with each finished (or skipped) case row.
        extra_protocol: merged into the protocol (e.g. the command line).

    Raises:
        ValueError: ``device="cuda"`` without an available CUDA device.
    """
    import torch

    from .report import summarize

    if settings.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' but torch.cuda.is_available() is False "
                         f"(torch {torch.__version__}); use device='cpu'")
    report: dict[str, Any] = {"protocol": {**protocol(settings), **(extra_protocol or {})},
                              "cases": [], "summary": {}, "complete": False}
    failed: dict[tuple[str, ...], dict[str, Any]] = {}
    done: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    cases = plan_cases(settings)
    for case in progress(cases, desc="throughput", unit="case", total=len(cases)):
        key = failure_key(case)
        if key in failed:
            first = failed[key]
            where = f"{first['resolution']}²" if first["resolution"] else f"{first['tokens']} tokens"
            row = {**case, "status": "skipped",
                   "message": f"{first['status']} at {where}; larger sizes are not run"}
        elif (guess := predicted_seconds(done.get(key, []), case["tokens"])) is not None \
                and guess > time_limit(case, settings):
            row = {**case, "status": "skipped", "predicted_s": round(guess, 1),
                   "message": f"one forward predicted at {guess:.0f} s (from the two smaller sizes) > the "
                              f"{time_limit(case, settings):g} s time limit; not run"}
            failed[key] = row
        else:
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            row = {**case, "load_1min": load,
                   **run_case(case_spec(case, settings), time_limit_s=time_limit(case, settings))}
            if row["status"] in FAILED:
                failed[key] = row
            elif row["status"] == "ok":
                done.setdefault(key, []).append(row)
        report["cases"].append(row)
        if on_case is not None:
            on_case(row)
        if out is not None:
            report["summary"] = summarize(report["cases"])
            write_json(out, report)
    report["protocol"]["load_average_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    report["summary"] = summarize(report["cases"])
    report["complete"] = True
    if out is not None:
        write_json(out, report)
    return report
