"""Scaling benchmark: throughput, latency and peak memory of the attention variants vs tokens.

``infsa-viz bench`` is the command-line shell over :func:`run_benchmark` and :func:`write_report`.
Every case runs in its own process (:mod:`infsa_viz.bench.worker`) under memory and time limits.
"""

from .report import GOALS, check_goals, loglog_slope, summarize, write_html, write_report
from .throughput import SECTIONS, SHAPES, BenchSettings, plan_cases, run_benchmark, run_case, shape_config

__all__ = [
    "GOALS",
    "SECTIONS",
    "SHAPES",
    "BenchSettings",
    "check_goals",
    "loglog_slope",
    "plan_cases",
    "run_benchmark",
    "run_case",
    "shape_config",
    "summarize",
    "write_html",
    "write_report",
]
