"""``python -m benchmarks app-latency``: the real app in Chromium, timed per interaction."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from .. import command_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repeats", type=int, default=5, help="cached method switches timed (median reported)")
    parser.add_argument("--out", required=True, help="JSON report (e.g. metrics/app-latency.json)")


def run(args: argparse.Namespace) -> int:
    from infsa_viz.io import write_json

    from ..app_latency import CHROMIUM, GOALS, cpu_count, goals_report, measure_app

    if not Path(CHROMIUM).exists():
        raise ValueError(f"{CHROMIUM} is missing: the benchmark drives the app in Chromium")
    models = len([p for p in (Path(__file__).resolve().parents[2] / "models").glob("*/model.safetensors")])
    load_before = os.getloadavg()
    print(f"app-latency: {models} models, load {load_before[0]:.2f}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        measured = measure_app(models=models, repeats=args.repeats, log=Path(tmp) / "streamlit.log")
    load_after = os.getloadavg()
    write_json(args.out, {
        "protocol": {
            "what": "streamlit run app, opened in Chromium (Playwright) at 1280x800; each time runs from the "
                    "user's action until the page has settled (no stale element, no running indicator, the "
                    "method's caption and one overlay per model shown)",
            "models": models, "viewport": [1280, 800], "cpus": cpu_count(),
            "loadavg_before": [round(v, 2) for v in load_before],
            "loadavg_after": [round(v, 2) for v in load_after],
            "note": "the machine is shared with other jobs: compare runs only at similar load",
            "command": command_line(args),
        },
        "goals": goals_report(measured),
        "measured": {k: (round(v, 3) if isinstance(v, float) else
                         [round(x, 3) for x in v] if isinstance(v, list) else
                         {kk: round(vv, 3) for kk, vv in v.items()}) for k, v in measured.items()},
        "goal_definitions": GOALS,
    })
    return 0
