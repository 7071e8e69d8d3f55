"""``python -m benchmarks app-latency``: the real app in Chromium, timed per interaction, and where
the time goes on the server, stage by stage."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .. import command_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repeats", type=int, default=5, help="cached method switches timed (median reported)")
    parser.add_argument("--cold-runs", type=int, default=3,
                        help="fresh servers whose first render is timed (median reported; the first is the "
                             "server of the other interactions)")
    parser.add_argument("--dev-runs", type=int, default=1,
                        help="fresh servers started by 'python3 dev.py app' (the Quickstart) whose first overlays "
                             "are timed from the dev.py process start (0: none)")
    parser.add_argument("--load", type=int, default=None,
                        help="busy background processes under which a fresh server's first overlays and its "
                             "switches are timed again (default: the goals' load, 4; 0: none)")
    parser.add_argument("--out", required=True, help="JSON report (e.g. metrics/app-latency.json)")


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def run(args: argparse.Namespace) -> int:
    from infsa_viz.io import write_json

    from ..app_latency import (CHROMIUM, GOAL_LOAD, GOALS, LOAD, LOADED_GOALS, BackgroundLoad, cpu_count,
                               goals_report, measure_app, measure_cold, measure_switches, server_stages)

    if not Path(CHROMIUM).exists():
        raise ValueError(f"{CHROMIUM} is missing: the benchmark drives the app in Chromium")
    if args.cold_runs < 1 or args.repeats < 1:
        raise ValueError(f"--cold-runs={args.cold_runs} and --repeats={args.repeats} must be at least 1")
    workers = GOAL_LOAD if args.load is None else args.load
    if args.dev_runs < 0 or workers < 0:
        raise ValueError(f"--dev-runs={args.dev_runs} and --load={workers} must be at least 0")
    models = len([p for p in (Path(__file__).resolve().parents[2] / "models").glob("*/model.safetensors")])
    load_before = os.getloadavg()
    print(f"app-latency: {models} models, load {load_before[0]:.2f}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        measured = measure_app(models=models, repeats=args.repeats, log=Path(tmp) / "streamlit.log")
        cold = [{k: measured[k] for k in ("server_ready_s", "cold_first_title_s", "cold_first_overlays_s",
                                          "process_start_to_first_overlay_s", "cold_first_render_s", "loadavg")},
                *measure_cold(models=models, runs=args.cold_runs - 1, log=Path(tmp) / "cold.log")]
    for key in cold[0]:
        if key != "loadavg":
            measured[key] = statistics.median(run[key] for run in cold)
            LOAD[key] = [run["loadavg"] for run in cold]  # one per fresh server, beside its figures
    measured["cold_runs"] = cold
    with tempfile.TemporaryDirectory() as tmp:
        if args.dev_runs:  # the Quickstart's command: dev.py's environment check, then streamlit
            dev = measure_cold(models=models, runs=args.dev_runs, log=Path(tmp) / "dev.log", via_dev=True)
            measured["dev_app"] = {
                "process_start_to_first_overlay_s": statistics.median(r["process_start_to_first_overlay_s"] for r in dev),
                "runs": dev}
        if workers:
            before = [round(v, 2) for v in os.getloadavg()]
            with BackgroundLoad(workers):
                time.sleep(20)  # let the load average rise towards the load before the clock starts
                under = measure_switches(models=models, repeats=args.repeats, log=Path(tmp) / "load.log")
            measured["under_load"] = {"background_workers": workers, "loadavg_before": before, **under}
    stages = server_stages()
    cold_stages = sum(v for k, v in stages.items() if "switch" not in k)
    measured["not_server_s"] = {  # the browser's and Streamlit's share: what the server stages do not explain
        "cold_first_render_s": measured["cold_first_render_s"] - cold_stages,
        "cached_method_switch_s": measured["cached_method_switch_s"] - stages["cached switch: maps, tiles and figures"],
        "uncached_attention_switch_s": measured["uncached_attention_switch_s"]
        - stages["uncached switch: maps, tiles and figures (mean of rollout, visits)"]}
    load_after = os.getloadavg()
    write_json(args.out, {
        "protocol": {
            "what": "streamlit run app, opened in Chromium (Playwright) at 1280x800; each time runs from the "
                    "user's action until the page has settled (no stale element, no running indicator, the "
                    "method's caption, one overlay per model and the per-map figures shown); a method switch "
                    "is timed from the choice (Enter on the filtered option), and also with the dropdown's "
                    "opening and the typing of the name (*_typing_included_s, the first reports' protocol); "
                    "process_start_to_first_overlay_s runs from the start of the streamlit process (the browser "
                    "already open) until the first overlays are shown: the server's start, its first answer "
                    "(server_ready_s), the page load and the first run",
            "server_stages": "a fresh process runs what the first render and a switch compute, with the app's "
                             "own functions in the app's order, one stage after the other (the app imports pandas, "
                             "for its charts, in a background thread from its start, app/warmup.py; the GIL lets "
                             "that overlap only the waits); the browser's and Streamlit's share (loading "
                             "Streamlit's page, messages, drawing) is the rest of each browser-timed figure, "
                             "measured.not_server_s",
            "models": models, "viewport": [1280, 800], "cpus": cpu_count(),
            "loadavg_before": [round(v, 2) for v in load_before],
            "loadavg_after": [round(v, 2) for v in load_after],
            "note": "the goals hold on an idle machine; the machine is shared with other jobs: each figure's load "
                    "average (1, 5, 15 min) when it was measured is in measured.load; compare runs only at similar "
                    "load",
            "under_load": f"measured.under_load: a fresh server's first overlays and its method switches with "
                          f"{workers} busy background processes (one Python loop each) on top of whatever else "
                          "runs; its load averages beside each figure",
            "dev_app": "measured.dev_app: python3 dev.py app (its environment check, then streamlit run app), "
                       "timed from the dev.py process start to the first overlays",
            "command": command_line(args),
        },
        "goals": goals_report(measured),
        "goals_under_load": {key: {"goal_s": goal, "measured_s": round(measured["under_load"][key], 3),
                                   "met": measured["under_load"][key] <= goal}
                             for key, goal in LOADED_GOALS.items()} if "under_load" in measured else None,
        "measured": _rounded({**measured, "load": dict(LOAD)}),
        "server_stages_s": stages,
        "goal_definitions": GOALS,
    })
    return 0
