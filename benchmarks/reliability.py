"""Reliability under hostile input, interruption and load (``python -m benchmarks reliability``).

Three parts, each recorded in ``metrics/reliability.json``:

* the bad-input matrix (``tests/bad_inputs``): every case run again, counted per surface;
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
    from tests.bad_inputs.cases import MEMORY_LIMIT, all_cases, run_case
    from tests.bad_inputs.fixtures import build

    tried: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    failures, memory, pending = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        paths = build(Path(tmp))
        for case in all_cases():
            if case.pending:
                pending.append({"case": f"{case.surface}:{case.id}", "why": case.pending})
                continue
            outcome = run_case(case, paths)
            tried[case.surface] += 1
            passed[case.surface] += outcome.passed
            if not outcome.passed:
                failures.append({"case": f"{case.surface}:{case.id}", "why": outcome.why, "message": outcome.message})
            if case.memory:
                memory.append({"case": f"{case.surface}:{case.id}", "passed": outcome.passed,
                               "peak_rss_mib": outcome.peak_mib, "message": outcome.message})
    return {"tried": dict(tried), "passed": dict(passed), "total_tried": sum(tried.values()),
            "total_passed": sum(passed.values()), "failures": failures, "pending": pending,
            "memory_limit_mib": MEMORY_LIMIT // 2**20, "memory_limited_cases": memory,
            "max_peak_rss_mib": max((m["peak_rss_mib"] for m in memory), default=None)}


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
