"""Reliability under hostile input, interruption and load (``python -m benchmarks reliability``).

Four parts, each recorded in ``metrics/reliability.json``:

* the bad-input matrix (``tests/bad_inputs``): every case run again (those too slow for CI too),
  counted per surface, with each memory-limited case's peak resident memory and every case's time;
* the estimates before work: for map methods whose memory grows as ``N²``, the memory a call is
  estimated to hold (:mod:`infsa_viz.estimate`) beside the peak it really adds (``VmHWM`` of a child
  after ``clear_refs``), at 1,025 tokens;
* kill and resume: a real ``infsa-viz evaluate`` child is SIGKILLed at a seeded random point of
  its journal, the same command is run again, and its report is compared with an uninterrupted
  run's (JSON without the command line, CSV and per-image CSV, byte for byte);
* load (optional, ``--load``): the full published evaluation (all shipped models × the default
  methods × ``--load-images`` images) in a child process; its wall time and peak resident memory
  (the child's own ``ru_maxrss`` from ``wait4``) with the machine's load average. With
  ``--load-out metrics/attention-quality.json`` that run is the published evaluation itself.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from . import SHIPPED_MODELS

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = tuple(SHIPPED_MODELS.values())


def bad_input_matrix() -> dict[str, Any]:
    """Run every case of ``tests/bad_inputs``; counts per surface, the failures' reasons, and the peak
    resident memory of each case run under the address-space limit.

    Cases marked ``pending`` (they wait on another engineer's change) are listed, not run.
    """
    from tests.bad_inputs.cases import MEMORY_LIMIT, TIME_LIMIT, all_cases, run_case
    from tests.bad_inputs.fixtures import build

    tried: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    failures, memory, pending, handled, seconds = [], [], [], [], {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = build(Path(tmp))
        for case in all_cases():
            name = f"{case.surface}:{case.id}"
            if case.pending:
                pending.append({"case": name, "why": case.pending})
                continue
            start = time.monotonic()
            outcome = run_case(case, paths)
            seconds[name] = round(time.monotonic() - start, 2)
            tried[case.surface] += 1
            passed[case.surface] += outcome.passed
            if not outcome.passed:
                failures.append({"case": name, "why": outcome.why, "message": outcome.message})
            if case.expect == "ok":
                handled.append({"case": name, "passed": outcome.passed, "seconds": seconds[name],
                                "ci": case.ci})
            if case.memory:
                memory.append({"case": name, "passed": outcome.passed, "peak_rss_mib": outcome.peak_mib,
                               "seconds": seconds[name], "message": outcome.message})
    slowest = max(seconds, key=seconds.get, default=None)
    return {"tried": dict(tried), "passed": dict(passed), "total_tried": sum(tried.values()),
            "total_passed": sum(passed.values()), "failures": failures, "pending": pending,
            "handled_not_refused": handled,
            "memory_limit_mib": MEMORY_LIMIT // 2**20, "memory_limited_cases": memory,
            "max_peak_rss_mib": max((m["peak_rss_mib"] or 0 for m in memory), default=None),
            "time_limit_s": TIME_LIMIT, "slowest_case": slowest, "slowest_case_seconds": seconds.get(slowest),
            "refusal_seconds_max": max((s for n, s in seconds.items() if n not in {h["case"] for h in handled}),
                                       default=None)}


#: Map methods whose memory grows as N² (the estimate matters most), measured by :func:`estimate_accuracy`.
ESTIMATED_METHODS = ("attention", "rollout", "visits", "perron", "neumann", "chefer2021", "attn_lrp", "tam",
                     "saliency", "integrated_gradients")
_ESTIMATE_CHILD = """
import json, sys, torch
from infsa_viz.estimate import Workload
from infsa_viz.maps import METHODS, attribute_images
from infsa_viz.model import ViTConfig, VisionTransformer
from benchmarks.worker import _memory_snapshot
method, side, batch, variant = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
torch.set_num_threads(1)
torch.manual_seed(0)
model = VisionTransformer(ViTConfig(img_size=side, patch_size=8, embed_dim=16, depth=2, num_heads=2,
                                    attention=variant)).eval()
x = torch.randn(batch, 1, side, side)
attribute_images(model, torch.randn(1, 1, 16, 16), method)  # lazy set-up (imports, kernels) out of the peak
open("/proc/self/clear_refs", "w").write("5")  # reset VmHWM to the current resident set
before = _memory_snapshot()["rss_bytes"]
attribute_images(model, x, method)
work = Workload.of(model, x)
print(json.dumps({"estimate": METHODS[method].estimate(work, METHODS[method].resolve({})).bytes,
                  "peak_added": _memory_snapshot()["peak_rss_bytes"] - before, "tokens": work.tokens}))
"""


def estimate_accuracy(*, side: int = 256, batch: int = 2, variant: str = "pure_infsa") -> dict[str, Any]:
    """Per method of :data:`ESTIMATED_METHODS`: its estimate and the peak resident memory one call really
    adds, in a fresh child (1,025 tokens at the default ``side``, ``batch`` images, one thread)."""
    rows = []
    for method in ESTIMATED_METHODS:
        child = subprocess.run([sys.executable, "-c", _ESTIMATE_CHILD, method, str(side), str(batch), variant],
                               capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                               timeout=600)
        if child.returncode != 0:
            rows.append({"method": method, "error": child.stderr.strip().splitlines()[-1:]})
            continue
        found = json.loads(child.stdout.strip().splitlines()[-1])
        rows.append({"method": method, "tokens": found["tokens"], "estimate_mib": round(found["estimate"] / 2**20, 1),
                     "peak_added_mib": round(found["peak_added"] / 2**20, 1),
                     "ratio": round(found["peak_added"] / found["estimate"], 2) if found["estimate"] else None})
    ratios = [r["ratio"] for r in rows if r.get("ratio") is not None]
    return {"what": "estimate (infsa_viz.estimate: the dominant float32 tensors a call holds) against the peak "
                    "resident memory the call adds (VmHWM after clear_refs, minus VmRSS before), one child per "
                    f"method, {variant}, batch {batch}, {side}x{side} px at patch 8",
            "methods": rows, "ratio_min": min(ratios, default=None), "ratio_max": max(ratios, default=None)}


def _report(path: Path) -> dict[str, Any]:
    report = json.loads(path.read_text())
    report["protocol"].pop("command")
    return report


def kill_and_resume(folder: Path, *, seed: int = 20261203, n_images: int = 24, chunk: int = 2) -> dict[str, Any]:
    """SIGKILL a real ``evaluate`` after a random number of journalled chunks, resume, compare.

    Returns:
        ``{"killed_after_chunks", "chunks", "resumed_message", "equal_json", "equal_csv",
        "equal_images_csv", "journal_removed", "lock_released", "user_file_kept"}``.
    """
    import torch

    from infsa_viz.model import VisionTransformer, ViTConfig, save_model

    torch.manual_seed(3)
    model = folder / "m"
    save_model(VisionTransformer(ViTConfig(attention="pure_infsa", embed_dim=16, depth=2, num_heads=2)), model)
    methods = ("attention", "visits", "random")
    args = [sys.executable, "-m", "infsa_viz", "evaluate", "--models", str(model), "--methods", ",".join(methods),
            "--n-images", str(n_images), "--chunk", str(chunk), "--steps", "5", "--per-image", "--out"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    whole = folder / "whole" / "r.json"
    subprocess.run([*args, str(whole)], check=True, env=env, capture_output=True)
    killed = folder / "killed" / "r.json"
    journal = Path(str(killed) + ".journal")
    chunks = len(methods) * -(-n_images // chunk)
    at = random.Random(seed).randint(2, chunks - 3)
    proc = subprocess.Popen([*args, str(killed)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    beside = killed.parent / "notes.txt"  # a user's file next to the journal must survive everything
    beside.parent.mkdir(parents=True, exist_ok=True)
    beside.write_text("mine")
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if journal.is_dir() and len(list(journal.glob("*/*.json"))) > at:  # run.json + `at` chunks
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait()
    if proc.returncode != -signal.SIGKILL:
        raise RuntimeError(f"the evaluate child ended (code {proc.returncode}) before it could be killed")
    done_before = len(list(journal.glob("*/*.json"))) - 1
    partial_report = killed.exists()
    again = subprocess.run([*args, str(killed)], env=env, capture_output=True, text=True)
    if again.returncode != 0:
        raise RuntimeError(f"the resumed run failed: {again.stderr.strip()}")
    return {
        "chunks": chunks, "killed_after_chunks": done_before, "report_written_before_resume": partial_report,
        "resumed_message": next((line for line in again.stderr.splitlines() if "resumed:" in line), None),
        "equal_json": _report(killed) == _report(whole),
        "equal_csv": killed.with_suffix(".csv").read_text() == whole.with_suffix(".csv").read_text(),
        "equal_images_csv": (killed.with_suffix(".images.csv").read_text()
                             == whole.with_suffix(".images.csv").read_text()),
        "journal_removed": not journal.exists(), "lock_released": not Path(str(killed) + ".lock").exists(),
        "user_file_kept": beside.read_text() == "mine",
    }


def run_recording_peak(peak_file: str) -> None:
    """The load child: ``infsa-viz`` on ``sys.argv[1:]``, then its own peak resident memory (``VmHWM``,
    bytes) into ``peak_file``. (A child's ``ru_maxrss`` from ``wait4`` also counts the parent's resident
    pages at the fork: a child doing nothing under a 700 MB parent reports 726 MiB.)"""
    from infsa_viz.cli import main

    from .worker import peak_rss_bytes

    try:
        code = main(sys.argv[1:])
    finally:
        Path(peak_file).write_text(str(peak_rss_bytes()))
    sys.exit(code)


def load_run(out: Path, *, n_images: int, threads: int) -> dict[str, Any]:
    """The full published evaluation in a child: wall time and the child's own peak resident memory.

    ``out`` is the evaluation's ``--out``: ``metrics/attention-quality.json`` makes the load run the
    published evaluation itself (one run, both records), a temporary path measures without writing.
    """
    from infsa_viz.evaluation import default_methods

    shown = out.relative_to(ROOT) if out.is_absolute() and out.is_relative_to(ROOT) else out  # as documented
    command = ["evaluate", "--models", ",".join(SHIPPED), "--n-images", str(n_images), "--threads", str(threads),
               "--out", str(shown)]
    before = os.getloadavg()
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile() as log:
        peak = Path(tmp) / "peak"
        code = f"from benchmarks.reliability import run_recording_peak; run_recording_peak({str(peak)!r})"
        child = subprocess.run([sys.executable, "-c", code, *command], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
        seconds = time.monotonic() - start
        if child.returncode != 0:
            log.seek(0)
            tail = log.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"the load run exited {child.returncode}: {tail}")
        peak_bytes = int(peak.read_text())
    return {"command": "infsa-viz " + " ".join(command), "models": list(SHIPPED),
            "methods": default_methods(), "n_images": n_images, "threads": threads,
            "wall_seconds": round(seconds, 1), "peak_rss_mib": round(peak_bytes / 2**20, 1),
            "peak_rss_method": "VmHWM of the evaluate process",
            "loadavg_before": [round(x, 2) for x in before], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            "machine_memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)}
