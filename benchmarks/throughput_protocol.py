"""The protocol stored with every throughput report: the resolved settings, the machine, and how
each figure was measured. Importable from :mod:`benchmarks.throughput` as well.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
from typing import Any

from .throughput_settings import BenchSettings, shape_config

__all__ = ["protocol"]


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
