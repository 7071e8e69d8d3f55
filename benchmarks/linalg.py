"""Batched dense linear algebra on this torch build: which calls hang, fail or pass, and what each costs.

Run as ``python -m benchmarks linalg``. Every case runs in a fresh interpreter under a time limit (a
hang is a case that does not return in time, never a hung benchmark): one call of ``op`` on a batch
of ``B`` well-conditioned ``N × N`` systems (``I − 0.9·A``, ``A`` row-stochastic) with ``T`` intra-op
threads. ``op`` is a raw ``torch.linalg`` call (batched, or a loop over the batch), numpy's LAPACK, or
the library's guarded helper (:mod:`infsa_viz.linalg`). A case reports ``ok`` with its median
seconds over ``repeats`` calls, ``error`` with the exception, or ``hang``, and whether
``Intel oneMKL ERROR`` was printed. This is the measurement behind the helper's one-thread guard.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from typing import Any

import torch

__all__ = ["CASE", "OPS", "linalg_matrix"]

#: The calls compared, by name: Python statements on ``M (B, N, N)`` and ``b (B, N, 1)``.
OPS: dict[str, str] = {
    "solve": "torch.linalg.solve(M, b)",
    "solve_loop": "torch.stack([torch.linalg.solve(m, v) for m, v in zip(M, b)])",
    "lu_factor": "torch.linalg.lu_factor(M)",
    "inv": "torch.linalg.inv(M)",
    "lstsq": "torch.linalg.lstsq(M, b)",
    "eigvals": "torch.linalg.eigvals(M)",
    "eig": "torch.linalg.eig(M)",
    "numpy_solve": "numpy.linalg.solve(M.numpy(), b.numpy())",
    "numpy_eig": "numpy.linalg.eig(M.numpy())",
    "helper_solve": "linalg.solve(M, b)",
    "helper_eig": "linalg.eig(M)",
}

#: One case, run as ``python -c CASE OP B N T DTYPE REPEATS``; prints the median seconds.
CASE = r"""
import statistics, sys, time
import numpy, torch
from infsa_viz import linalg
op, B, N, T, dtype, repeats = sys.argv[1], *map(int, sys.argv[2:5]), sys.argv[5], int(sys.argv[6])
torch.set_num_threads(T)
dtype = getattr(torch, dtype)
g = torch.Generator().manual_seed(0)
A = torch.rand(B, N, N, generator=g, dtype=dtype)
M = torch.eye(N, dtype=dtype) - 0.9 * A / A.sum(-1, keepdim=True)
b = torch.rand(B, N, 1, generator=g, dtype=dtype)
call = CALLS[op]
times = []
for _ in range(repeats):
    start = time.perf_counter(); call(); times.append(time.perf_counter() - start)
print(statistics.median(times))
"""


def _case(op: str, batch: int, size: int, threads: int, dtype: str, repeats: int, timeout: float) -> dict[str, Any]:
    code = CASE.replace("call = CALLS[op]", "CALLS = {" + ", ".join(f"{name!r}: lambda: {expr}" for name, expr in OPS.items())
                        + "}\ncall = CALLS[op]")
    row: dict[str, Any] = {"op": op, "call": OPS[op], "batch": batch, "size": size, "threads": threads,
                           "dtype": dtype}
    try:
        done = subprocess.run([sys.executable, "-c", code, op, str(batch), str(size), str(threads), dtype,
                               str(repeats)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as stop:
        text = (stop.stderr or b"").decode() if isinstance(stop.stderr, bytes) else (stop.stderr or "")
        return {**row, "result": "hang", "seconds": None, "mkl_error": "oneMKL ERROR" in text,
                "note": f"no return within {timeout:g} s"}
    mkl = "oneMKL ERROR" in done.stderr + done.stdout
    if done.returncode:
        last = [line for line in done.stderr.splitlines() if "Error" in line][-1:] or ["exit " + str(done.returncode)]
        return {**row, "result": "error", "seconds": None, "mkl_error": mkl, "note": last[0][:200]}
    return {**row, "result": "ok", "seconds": float(done.stdout.split()[-1]), "mkl_error": mkl}


def linalg_matrix(*, ops: list[str], batches: list[int], sizes: list[int], threads: list[int], dtypes: list[str],
                  repeats: int = 3, timeout: float = 30.0) -> dict[str, Any]:
    """Every combination, each in its own interpreter under ``timeout`` seconds (starting it included)."""
    unknown = [op for op in ops if op not in OPS]
    if unknown:
        raise ValueError(f"ops {unknown} are unknown; expected some of {list(OPS)}")
    rows = [_case(op, b, n, t, d, repeats, timeout) for op in ops for b in batches for n in sizes for t in threads
            for d in dtypes]
    return {"protocol": {"what": "one call on a batch of B systems I - 0.9 A (A row-stochastic, seeded), each case in "
                                 "a fresh interpreter under a time limit; median seconds of the calls",
                         "repeats": repeats, "timeout_seconds": timeout, "torch": torch.__version__,
                         "lapack": next((line.strip() for line in torch.__config__.show().splitlines()
                                         if "Math Kernel" in line or "LAPACK" in line), None),
                         "machine": platform.machine(), "processor": platform.processor() or None},
            "cases": rows}
