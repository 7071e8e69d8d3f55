"""One benchmark case, measured in a fresh process: ``python -m benchmarks.worker SPEC OUT``.

``SPEC`` is a JSON object (see :func:`benchmarks.throughput.case_spec`), ``OUT`` the path the
result JSON is written to. The runner starts one such process per case (:func:`child_command`),
so peak memory is the case's own and a blow-up (out of memory, runaway time) ends only this
process.

Memory is read from ``/proc/self/status``: ``VmHWM`` (peak resident set of this process) and
``VmRSS`` (current). ``getrusage(RUSAGE_SELF).ru_maxrss`` is recorded too, but on Linux it starts
at the *parent's* peak RSS after ``exec`` (the kernel folds the old address space's high-water mark
into it), so it overstates small cases; it is the fallback only where ``/proc`` does not exist.

The worker also ends itself with ``SIGALRM`` :data:`ALARM_GRACE_S` seconds after the runner's
deadline, so a case outlives a killed runner by seconds, not hours.
"""

from __future__ import annotations

import json
import math
import os
import resource
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

#: The repository root, put on the ``PYTHONPATH`` of every child process so that
#: ``python -m benchmarks.…`` starts whatever the caller's working directory.
REPOSITORY_ROOT = Path(__file__).resolve().parent.parent

#: The worker ends itself (SIGALRM) this many seconds after the runner's deadline, so a case whose
#: runner died (killed, session closed) cannot keep the machine busy.
ALARM_GRACE_S = 10

#: Substrings (lower case) of an exception message or traceback that mean an allocation failed;
#: ``memoryerror`` is Python's own ``MemoryError`` as a traceback prints it.
OOM_MARKERS = ("out of memory", "can't allocate memory", "cannot allocate memory", "not enough memory",
               "failed to allocate", "bad_alloc", "memoryerror")


def is_oom_message(message: str) -> bool:
    """True when an error message reports a failed allocation."""
    lowered = message.lower()
    return any(marker in lowered for marker in OOM_MARKERS)


def child_command(module: str, *args: str) -> tuple[list[str], dict[str, str]]:
    """Command line and environment that run ``python -m module args`` in a fresh process.

    The child gets :data:`REPOSITORY_ROOT` in front of its ``PYTHONPATH`` (the benchmarks are not
    installed), so it does not depend on the caller's working directory.

    Example:
        >>> command, env = child_command("benchmarks.worker", "{}", "/tmp/out.json")
        >>> command[1:]
        ['-m', 'benchmarks.worker', '{}', '/tmp/out.json']
    """
    paths = [str(REPOSITORY_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return [sys.executable, "-m", module, *args], {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def _proc_status_bytes(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        return None
    return None


def _ru_maxrss_bytes() -> int:
    value = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(value) if sys.platform == "darwin" else int(value) * 1024  # bytes on macOS, kB on Linux


def _memory_snapshot() -> dict[str, Any]:
    peak = _proc_status_bytes("VmHWM")
    maxrss = _ru_maxrss_bytes()
    return {
        "rss_bytes": _proc_status_bytes("VmRSS"),
        "peak_rss_bytes": peak if peak is not None else maxrss,
        "peak_rss_source": "VmHWM" if peak is not None else "ru_maxrss",
        "ru_maxrss_bytes": maxrss,
        "address_space_bytes": _proc_status_bytes("VmSize"),
    }


def peak_rss_bytes() -> int:
    """Peak resident set of this process in bytes (``VmHWM``; ``ru_maxrss`` where /proc is missing)."""
    return int(_memory_snapshot()["peak_rss_bytes"])


class MapCase:
    """One map of a trained model as a timed callable: ``case(images)`` runs
    :func:`~infsa_viz.maps.attribute` and keeps the result's metadata (solver, iterations, residual)."""

    def __init__(self, model: Any, method: str) -> None:
        self.model, self.method = model, method
        self.metadata: dict[str, Any] = {}
        self.finite = True

    def __call__(self, images: Any) -> Any:
        import torch

        from infsa_viz.maps import attribute_images

        result = attribute_images(self.model, images, self.method)
        self.metadata = result.metadata
        self.finite = bool(torch.isfinite(result.maps).all())
        return result.maps

    def details(self) -> dict[str, Any]:
        return {"map_metadata": self.metadata, "finite": self.finite}


def build_case(spec: dict[str, Any], device: Any) -> tuple[Any, Any, int]:
    """The callable (eval mode) and its random input for the case.

    ``spec`` needs ``config`` (a :class:`ViTConfig` dict), ``section``, ``batch`` and
    ``resolution`` (``model``, ``spectral``) or ``tokens`` (``attention``, ``naive``). Sections:
    ``model`` a whole ViT (random weights); ``attention`` one attention layer; ``naive`` the same
    layer through the paper's dense formulas (:class:`benchmarks.naive.NaiveAttention`);
    ``spectral`` the ``method`` map of the trained model in ``checkpoint`` (a :class:`MapCase`).
    """
    import torch

    from infsa_viz.model import VisionTransformer, ViTConfig, build_attention, count_parameters

    config = ViTConfig.from_dict(spec["config"], source="spec config")
    section = spec["section"]
    if section in ("model", "spectral"):
        side = spec["resolution"]
        inputs = torch.rand(spec["batch"], config.in_chans, side, side)  # (B, C, H, W)
        if section == "spectral":
            from infsa_viz import load_model

            model = load_model(spec["checkpoint"]).to(device).eval()
            return MapCase(model, spec["method"]), inputs.to(device), count_parameters(model)
        module = VisionTransformer(config)
        module.set_fused_attention(True)
    else:
        module = build_attention(config.attention, config.embed_dim, config.num_heads,
                                 rho_init=config.rho_init, rho_per_head=config.rho_per_head, fused=True)
        if section == "naive":
            from .naive import NaiveAttention

            module = NaiveAttention(module)
        inputs = torch.randn(spec["batch"], spec["tokens"], config.embed_dim)  # (B, N, C)
    dtype = getattr(torch, spec.get("dtype", "float32"))
    return module.to(device, dtype).eval(), inputs.to(device, dtype), count_parameters(module)


def _timed_loop(module: Any, inputs: Any, loops: int, sync: Any) -> tuple[float, float]:
    """Wall-clock and process CPU seconds (all threads) per forward, over ``loops`` forwards."""
    sync()
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(loops):
        module(inputs)
    sync()
    return (time.perf_counter() - start) / loops, (time.process_time() - cpu_start) / loops


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one case and return its measurements (status ``ok``), or raise.

    Timing: ``warmup`` untimed forwards (the first also picks ``loops``, the forwards per timing,
    so that one timing lasts about ``min_timing_s`` or more; 1 for slow cases), then up to
    ``repeats`` timings, each reported as wall-clock and process CPU seconds per forward. A timing
    is not started when it would overrun ``deadline_unix`` (the runner's wall-time limit as a Unix
    time); ``repeats_done`` says how many ran. When not even the first fits, the warmup forward is
    reported as the only timing (``latency_from_warmup``: true, ``repeats_done``: 0).

    Memory: on CPU ``RLIMIT_AS`` is set to ``memory_limit_bytes`` after the imports (a cap on the
    whole address space, so an over-large allocation fails at once instead of swapping); on CUDA
    the allocator is capped with ``torch.cuda.set_per_process_memory_fraction``.
    """
    import torch

    if spec.get("threads"):
        torch.set_num_threads(int(spec["threads"]))
    torch.manual_seed(int(spec.get("seed", 0)))
    cuda = spec["device"] == "cuda"
    limit = spec.get("memory_limit_bytes")
    if cuda:
        if not torch.cuda.is_available():
            raise RuntimeError("device 'cuda' requested but torch.cuda.is_available() is False")
        device = torch.device("cuda")
        if limit:
            total = torch.cuda.get_device_properties(device).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, limit / total), device)
        torch.cuda.reset_peak_memory_stats(device)

        def sync() -> None:
            torch.cuda.synchronize(device)
    else:
        device = torch.device("cpu")
        if limit:
            # After imports: the cap is on the whole address space of this process.
            resource.setrlimit(resource.RLIMIT_AS, (int(limit), int(limit)))

        def sync() -> None:
            pass

    with torch.inference_mode():
        module, inputs, parameters = build_case(spec, device)
        before = _memory_snapshot()
        warmup = [_timed_loop(module, inputs, 1, sync) for _ in range(spec["warmup"])]
        loops = 1
        if warmup and warmup[0][0] > 0:
            loops = max(1, math.ceil(spec["min_timing_s"] / warmup[0][0]))
        timings: list[tuple[float, float]] = []
        from_warmup = False
        for _ in range(spec["repeats"]):
            remaining = spec["deadline_unix"] - time.time()
            last = timings[-1][0] if timings else (warmup[-1][0] if warmup else 0.0)
            if 1.1 * last * loops > remaining:
                if not timings:  # only the warmup forward fits in the time limit: report it
                    timings, loops, from_warmup = [warmup[-1]], 1, True
                break
            timings.append(_timed_loop(module, inputs, loops, sync))
    after = _memory_snapshot()
    times = [wall for wall, _ in timings]
    median = statistics.median(times)
    result: dict[str, Any] = {
        "status": "ok",
        "message": "one forward only: the warmup forward, a timed one would overrun the time limit"
        if from_warmup else None,
        "threads": torch.get_num_threads(),
        "parameters": parameters,
        "latency_s": median,
        "times_s": times,
        "cpu_s": statistics.median(cpu for _, cpu in timings),
        "cpu_times_s": [cpu for _, cpu in timings],
        "warmup_times_s": [wall for wall, _ in warmup],
        "loops_per_timing": loops,
        "repeats_done": 0 if from_warmup else len(timings),
        "latency_from_warmup": from_warmup,
        "rss_before_forward_bytes": before["rss_bytes"],
        "peak_rss_bytes": after["peak_rss_bytes"],
        "peak_rss_source": after["peak_rss_source"],
        "ru_maxrss_bytes": after["ru_maxrss_bytes"],
        "address_space_before_forward_bytes": before["address_space_bytes"],
    }
    if hasattr(module, "details"):
        result.update(module.details())
    if spec["section"] == "model":
        result["images_per_s"] = spec["batch"] / median if median > 0 else None
    if cuda:
        result["peak_cuda_bytes"] = int(torch.cuda.max_memory_allocated(device))
        result["device_name"] = torch.cuda.get_device_name(device)
    result["peak_memory_bytes"] = result["peak_cuda_bytes"] if cuda else result["peak_rss_bytes"]
    return result


def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """:func:`measure`, with a failure turned into a result: ``oom`` if an allocation failed, else ``error``."""
    try:
        return measure(spec)
    except Exception as err:  # noqa: BLE001 - a case's failure is data, reported to the runner
        message = f"{type(err).__name__}: {err}".strip().splitlines()[0][:500]
        oom = isinstance(err, MemoryError) or is_oom_message(str(err))
        return {"status": "oom" if oom else "error", "message": message,
                "peak_rss_bytes": _memory_snapshot()["peak_rss_bytes"]}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python -m benchmarks.worker SPEC_JSON OUT_PATH", file=sys.stderr)
        return 2
    spec = json.loads(argv[0])
    if hasattr(signal, "alarm"):
        signal.alarm(max(1, math.ceil(spec["deadline_unix"] - time.time()) + ALARM_GRACE_S))
    result = run_spec(spec)
    Path(argv[1]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
