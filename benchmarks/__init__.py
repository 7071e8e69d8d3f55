"""Benchmarks of infsa-viz: speed and memory of the attention variants, map methods and metrics.

Not part of the installed package (they may import test-only tools such as Quantus): run them
from the repository root as ``python -m benchmarks COMMAND --out metrics/….json …``.

Commands (:data:`BENCH_COMMANDS`; each is a module of :mod:`benchmarks.commands` with
``add_arguments(parser)`` and ``run(args) -> int``, driven by :func:`infsa_viz.cli.main`):

* ``throughput``: throughput, latency and peak memory vs resolution (:mod:`benchmarks.throughput`,
  :mod:`benchmarks.report`); every case runs in its own process (:mod:`benchmarks.worker`) under
  memory and time limits;
* ``maps``: time and peak memory of each registered map method vs tokens (:mod:`benchmarks.maps`);
* ``morf``: our batched MoRF engine against ``quantus.RegionPerturbation`` (:mod:`benchmarks.morf`);
* ``profile``: ``torch.profiler`` over one forward per variant (:mod:`benchmarks.profile`);
* ``reliability``: the bad-input matrix, a SIGKILL + resume of ``evaluate`` and the full
  evaluation's peak memory (:mod:`benchmarks.reliability`);
* ``app-latency``: the real app in Chromium, first render and switch times (:mod:`benchmarks.app_latency`);
* ``metric-cost``: milliseconds per image of every registered metric, the evidence interventions and
  the greedy deletion oracle (:mod:`benchmarks.metric_cost`);
* ``backbones``: seconds per image of every map, MoRF/LeRF and box AUC on a real-size backbone
  (ViT-B/16 at 224²) beside softmax's raw-attention floor, and the estimate printed before the job
  against the measured time (:mod:`benchmarks.backbones`);
* ``linalg``: which batched dense solves, LU, inverses and eigenproblems hang, fail or pass on this torch
  build, per batch, size and thread count, each case in its own process under a time limit
  (:mod:`benchmarks.linalg`; the measurement behind :mod:`infsa_viz.linalg`).
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

__all__ = ["BENCH_COMMANDS", "PROG", "READS", "SHIPPED_MODELS", "command_line"]

#: How the benchmarks are started; recorded in every report's protocol.
PROG = "python -m benchmarks"

#: The shipped trained models (directories relative to the repository root), by attention variant.
SHIPPED_MODELS: dict[str, str] = {"softmax": "models/softmax-vit4", "pure_infsa": "models/pure-infsa-vit4",
                                  "linear_infsa": "models/linear-infsa-vit4"}
#: What every benchmark may read whatever its options (the shipped models): no ``--out`` may overwrite it.
READS: tuple[str, ...] = tuple(str(Path(__file__).resolve().parents[1] / p) for p in SHIPPED_MODELS.values())

#: Command name → (module path, one-line help), the table :func:`infsa_viz.cli.main` reads.
BENCH_COMMANDS: dict[str, tuple[str, str]] = {
    "throughput": ("benchmarks.commands.throughput",
                   "throughput, latency and peak memory vs resolution, one process per case"),
    "maps": ("benchmarks.commands.maps", "time and peak memory of each map method vs tokens"),
    "morf": ("benchmarks.commands.morf", "time our batched MoRF engine against quantus.RegionPerturbation"),
    "profile": ("benchmarks.commands.profile", "where a forward spends its time (torch.profiler), per variant"),
    "reliability": ("benchmarks.commands.reliability",
                    "bad-input matrix, SIGKILL + resume of evaluate, and the full evaluation's peak memory"),
    "app-latency": ("benchmarks.commands.app_latency", "the real app in Chromium: first render and switch times"),
    "metric-cost": ("benchmarks.commands.metric_cost", "milliseconds per image of every registered metric"),
    "backbones": ("benchmarks.commands.backbones",
                  "seconds per image of every map and metric on a real-size backbone, beside the raw-attention floor"),
    "linalg": ("benchmarks.commands.linalg",
               "which batched dense solves and eigenproblems hang, fail or pass, each case in its own process"),
}


def command_line(args: argparse.Namespace) -> str:
    """The command line that produced ``args`` (``args.argv``, set by the CLI), for a report's protocol."""
    return f"{PROG} {shlex.join(args.argv)}"
