"""Inference throughput, latency and peak memory vs resolution, one fresh process per case.

Four sections share one runner:

* ``model``: a whole :class:`~infsa_viz.vit.VisionTransformer` (random weights, fused softmax SDPA)
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
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import platform
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from infsa_viz.attention import VARIANTS, check_variant
from infsa_viz.io import write_json
from infsa_viz.progress import progress
from infsa_viz.vit import ViTConfig, num_tokens

from . import SHIPPED_MODELS
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

#: Model shapes. ``shipped`` is ``ViTConfig()``'s defaults, the architecture of the shipped
#: models (48² images, 1 channel, patch 8, width 64, depth 4, 4 heads, MLP ratio 4, CLS token);
#: ``tiny`` is ViT-Tiny-like (224² RGB, patch 16, width 192, 3 heads), cut to depth 4.
SHAPES: dict[str, ViTConfig] = {
    "shipped": ViTConfig(),
    "tiny": ViTConfig(img_size=224, in_chans=3, patch_size=16, embed_dim=192, depth=4, num_heads=3),
}
SECTIONS = ("model", "attention", "naive", "spectral")
#: Precisions the model, attention and naive sections can run in (``torch`` dtype names).
DTYPES = ("float32", "bfloat16", "float16")
#: Statuses after which the variant's larger sizes (same section and shape) are skipped.
FAILED = ("oom", "timeout")
GB = 10**9


def _positive(name: str, value: Any, kind: type = int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int) or value <= 0:
        raise ValueError(f"{name}={value!r} must be a positive {'number' if kind is float else 'integer'}")


def _sizes(name: str, values: tuple[int, ...]) -> None:
    if not values:
        raise ValueError(f"{name} is empty; give at least one size")
    for value in values:
        _positive(name, value)
    if len(set(values)) != len(values):
        raise ValueError(f"{name}={list(values)} repeats a size")


def check_fit(name: str, values: tuple[int, ...], need: Callable[[int], float], budget: float, what: str) -> None:
    """Refuse a size whose smallest possible footprint ``need(size)`` (bytes) exceeds ``budget``, up
    front (the message gives the largest size that fits), instead of a case process that can only
    run out of memory.

    Raises:
        ValueError: naming the option, the size, the bytes it needs at least, the budget and the bound.
    """
    for value in values:
        if need(value) > budget:
            low, high = 0, value
            while low < high:  # the largest size that fits: need() grows with the size
                mid = (low + high + 1) // 2
                low, high = (mid, high) if need(mid) <= budget else (low, mid - 1)
            raise ValueError(f"{name}: {value:,} needs at least {need(value) / GB:,.3g} GB ({what}), over the "
                             f"{budget / GB:,.3g} GB this machine holds; expected at most {low:,}")


def memory_budget() -> float:
    """Bytes this machine holds: a size needing more can only fail, so it is refused up front. (A size
    over a case's ``--memory-limit`` but within the machine still runs: its ``oom`` status is a finding.)"""
    from infsa_viz._checks import machine_memory

    return float(machine_memory())


def image_bytes(config: ViTConfig, side: int, batch: int = 1) -> float:
    """The least a forward at ``side`` holds: the float32 images and one layer's tokens."""
    tokens = config.num_prefix_tokens + (side // config.patch_size) ** 2
    return 4.0 * batch * (side * side * config.in_chans + tokens * config.embed_dim)


@dataclass(frozen=True)
class BenchSettings:
    """What to measure, and under which limits.

    Args:
        variants: attention variants (names in ``VARIANTS``); default all.
        shapes: keys of :data:`SHAPES`; default both.
        sections: ``"model"`` and/or ``"attention"``; default both.
        resolutions: square image sides for the model section, each divisible by the patch size;
            default 224 … 9216 (1.33 M tokens at patch 8).
        attention_tokens: token counts for the attention section; default 2¹⁰ … 2¹⁸ (1k … 256k).
        naive_tokens: token counts for the naive dense formulas; default 4,096 and 16,384.
        spectral_resolutions: image sides for the spectral maps of the shipped models (``shipped``
            shape only); default 1024 and 2048.
        spectral_methods: map methods of the spectral section; default visits and Perron.
        spectral_variants: the shipped models the spectral section reads; default all three.
        spectral_time_limit_s: wall-clock limit of each spectral case (one timed map, no warm-up:
            a map at 2048² takes minutes); default 1800.
        patch_size, embed_dim, depth, num_heads: override the shapes' values (``None``: keep).
        batch: images per forward in the model section (the attention section uses 1); default 1.
        repeats: timings per case (median reported); default 5.
        warmup: untimed forwards before timing; default 1.
        time_limit_s: wall-clock limit of each case's process (start-up included); default 600.
        memory_limit_gb: cap per case process in GB (10⁹ bytes): its address space on CPU, its
            CUDA allocations on GPU; default 16.
        device: ``"cpu"`` or ``"cuda"``.
        dtype: weights and inputs of the model, attention and naive sections: ``"float32"``
            (default), ``"bfloat16"`` or ``"float16"`` (the spectral maps compute in float32).
        threads: torch CPU threads in each case process (``None``: torch's default).
        min_timing_s: a timing loops over enough forwards to last about this long; default 0.05.
        seed: seed for weights and inputs; default 0.
    """

    variants: tuple[str, ...] = VARIANTS
    shapes: tuple[str, ...] = tuple(SHAPES)
    sections: tuple[str, ...] = SECTIONS
    resolutions: tuple[int, ...] = (224, 512, 1024, 2048, 4096, 9216)
    attention_tokens: tuple[int, ...] = tuple(2**k for k in range(10, 19))
    naive_tokens: tuple[int, ...] = (4096, 16384)
    spectral_resolutions: tuple[int, ...] = (1024, 2048)
    spectral_methods: tuple[str, ...] = ("visits", "perron")
    spectral_variants: tuple[str, ...] = VARIANTS
    spectral_time_limit_s: float = 1800.0
    patch_size: int | None = None
    embed_dim: int | None = None
    depth: int | None = None
    num_heads: int | None = None
    batch: int = 1
    repeats: int = 5
    warmup: int = 1
    time_limit_s: float = 600.0
    memory_limit_gb: float = 16.0
    device: str = "cpu"
    dtype: str = "float32"
    threads: int | None = None
    min_timing_s: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        choices = (("variants", self.variants, VARIANTS), ("spectral_variants", self.spectral_variants, VARIANTS),
                   ("shapes", self.shapes, tuple(SHAPES)),
                   ("sections", self.sections, SECTIONS))
        for name, values, known in choices:
            if not values:
                raise ValueError(f"{name} is empty; expected some of {list(known)}")
            for value in values:
                if name in ("variants", "spectral_variants"):
                    check_variant(value, name=name)
                elif value not in known:
                    raise ValueError(f"{name}: {value!r} is not one of {list(known)}")
            if len(set(values)) != len(values):
                raise ValueError(f"{name}={list(values)} repeats a name")
        _sizes("resolutions", self.resolutions)
        _sizes("attention_tokens", self.attention_tokens)
        _sizes("naive_tokens", self.naive_tokens)
        _sizes("spectral_resolutions", self.spectral_resolutions)
        from infsa_viz.maps import METHODS

        if not self.spectral_methods:
            raise ValueError("spectral_methods is empty; expected map methods such as visits, perron")
        for method in self.spectral_methods:
            if method not in METHODS:
                raise ValueError(f"spectral_methods: {method!r} is not a registered map method; "
                                 f"expected one of {sorted(METHODS)}")
        for name in ("patch_size", "embed_dim", "depth", "num_heads", "threads"):
            if getattr(self, name) is not None:
                _positive(name, getattr(self, name))
        for name in ("batch", "repeats"):
            _positive(name, getattr(self, name))
        if isinstance(self.warmup, bool) or not isinstance(self.warmup, int) or self.warmup < 0:
            raise ValueError(f"warmup={self.warmup!r} must be a non-negative integer")
        for name in ("time_limit_s", "spectral_time_limit_s", "memory_limit_gb", "min_timing_s"):
            _positive(name, getattr(self, name), float)
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype={self.dtype!r} must be one of {list(DTYPES)}")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device={self.device!r} must be 'cpu' or 'cuda'")
        for shape in self.shapes:
            config = shape_config(shape, self)
            if "model" in self.sections:
                bad = [r for r in self.resolutions if r % config.patch_size]
                if bad:
                    raise ValueError(f"resolutions {bad} are not divisible by the {shape} shape's "
                                     f"patch size {config.patch_size}")
        budget = memory_budget()
        for shape in self.shapes:
            config = shape_config(shape, self)
            what = f"float32 images and one layer's tokens, {shape} shape, batch {self.batch}"
            if "model" in self.sections:
                check_fit("resolutions", self.resolutions, lambda s: image_bytes(config, s, self.batch), budget, what)
            for section, name in (("attention", "attention_tokens"), ("naive", "naive_tokens")):
                if section in self.sections:  # q, k and v of one layer
                    check_fit(name, getattr(self, name), lambda n: 12.0 * self.batch * n * config.embed_dim, budget,
                              f"float32 q, k, v of {config.embed_dim} channels, batch {self.batch}")
        if "spectral" in self.sections:
            check_fit("spectral_resolutions", self.spectral_resolutions,
                      lambda s: image_bytes(SHAPES["shipped"], s), budget, "float32 image and one layer's tokens")
            patch = SHAPES["shipped"].patch_size
            bad = [r for r in self.spectral_resolutions if r % patch]
            if bad:
                raise ValueError(f"spectral_resolutions {bad} are not divisible by the shipped models' "
                                 f"patch size {patch}")

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


def shape_config(shape: str, settings: BenchSettings, variant: str = VARIANTS[0]) -> ViTConfig:
    """The :class:`ViTConfig` of ``shape`` with the settings' overrides and ``variant``.

    A patch-size override keeps the shape's position-embedding grid (``img_size`` = grid × patch).

    Raises:
        ValueError: for an unknown shape or an invalid override (e.g. heads not dividing width).
    """
    if shape not in SHAPES:
        raise ValueError(f"shape={shape!r} is not one of {list(SHAPES)}")
    base = SHAPES[shape]
    patch = settings.patch_size or base.patch_size
    changes = {"patch_size": patch, "img_size": base.grid[0] * patch, "attention": variant}
    for name in ("embed_dim", "depth", "num_heads"):
        if getattr(settings, name) is not None:
            changes[name] = getattr(settings, name)
    try:
        return base.replace(**changes)
    except ValueError as err:
        raise ValueError(f"shape {shape!r} with the given overrides: {err}") from None


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


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def protocol(settings: BenchSettings) -> dict[str, Any]:
    """The resolved settings and the machine, stored with every benchmark result."""
    import numpy
    import torch

    cuda = settings.device == "cuda"
    return {
        "settings": settings.to_dict(),
        "shapes": {shape: {k: v for k, v in shape_config(shape, settings).to_dict().items()
                           if k != "attention"} for shape in settings.shapes},
        "device": settings.device,
        "cuda_device": torch.cuda.get_device_name(0) if cuda else None,
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads_requested": settings.threads,
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "load_average_start": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "load": "load_average_start/end and each case's load_1min (1-minute load average when it "
                "started) show whether other work shared the machine",
        "weights": "random (seeded) initialisation (model, attention, naive sections: speed and memory do "
                   "not depend on trained values); the shipped checkpoints (spectral section: solver "
                   "iterations do)",
        "inputs": "uniform random images in [0, 1) (model and spectral sections); standard-normal tokens, "
                  f"batch 1 (attention and naive sections); {settings.dtype} (spectral maps: float32)",
        "naive": "benchmarks.naive: the paper's formulas forming the full N x N matrix (softmax(QK^T/sqrt d), "
                 "ReLU(QK^T)/||ReLU(QK^T)||_F, the rank-one 1 a^T of Linear-InfSA) and applying it to V, "
                 "with the layer's own projections",
        "spectral": "one timed infsa_viz.maps.attribute(model, image, method) call (no warm-up, one repeat, "
                    "spectral_time_limit_s) with the method's defaults (head mean, "
                    "the layer's own matrix, matrix-free operators above 1,024 tokens); map_metadata holds "
                    "the solver, its iterations and residual",
        "mode": "eval, torch.inference_mode, fused softmax SDPA; position embeddings interpolated "
                "(bicubic) to each resolution's grid",
        "timing": "per case: warmup untimed forwards, then `repeats` timings; a timing loops over "
                  "`loops_per_timing` forwards (about min_timing_s or more) and reports wall-clock "
                  "seconds per forward (times_s) and process CPU seconds per forward, all threads "
                  "(cpu_times_s); latency_s and cpu_s are their medians, images_per_s = batch / "
                  "latency_s; a timing is not started when it would overrun the time limit "
                  "(repeats_done says how many ran); if not even one fits, the warmup forward is "
                  "reported (latency_from_warmup)"
                  + ("; torch.cuda.synchronize() around each timing" if cuda else ""),
        "memory": ("peak_memory_bytes = torch.cuda.max_memory_allocated; peak_rss_bytes is the host's"
                   if cuda else
                   "peak_memory_bytes = peak_rss_bytes = VmHWM (peak resident set) of the case's own "
                   "fresh process, nothing subtracted; rss_before_forward_bytes = VmRSS after imports, "
                   "model and input, before the first forward; ru_maxrss_bytes is kept for reference "
                   "but on Linux includes the launching process's peak"),
        "isolation": "one fresh process per case (python -m benchmarks.worker); memory cap "
                     + ("torch.cuda.set_per_process_memory_fraction" if cuda else
                        "RLIMIT_AS (address space) set after imports")
                     + "; wall-time limit via subprocess timeout; a failed allocation or a kill by "
                       "signal is 'oom', running past the limit is 'timeout'",
        "skip_rule": "after an 'oom' or 'timeout', the variant's larger sizes in the same section and "
                     "shape (and map method) are 'skipped'; a size whose one forward, extrapolated from the "
                     "two smaller completed sizes (exponent clipped to [1, 2]), exceeds the time limit is "
                     "'skipped' with its predicted_s, and so are the larger ones",
    }


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
