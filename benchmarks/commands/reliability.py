"""``python -m benchmarks reliability``: bad-input matrix, estimates against peaks, kill/resume and
(optionally) the load run."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from .. import command_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--load", action="store_true",
                        help="also run the full published evaluation and record its time and peak memory")
    parser.add_argument("--load-images", type=int, default=1000, help="images of the load run (default 1000)")
    parser.add_argument("--load-out", default=None,
                        help="the load run's --out (default: a temporary file); metrics/attention-quality.json "
                             "makes it the published evaluation")
    parser.add_argument("--load-from", default=None, metavar="REPORT.json",
                        help="instead of --load, copy the load record of an earlier report (e.g. the "
                             "metrics/reliability.json being replaced), marked as copied")
    parser.add_argument("--out", required=True, help="JSON report (e.g. metrics/reliability.json)")


def run(args: argparse.Namespace) -> int:
    import torch

    from infsa_viz.io import write_json

    from ..reliability import bad_input_matrix, estimate_accuracy, kill_and_resume, load_run

    if args.load_images < 1:
        raise ValueError(f"--load-images={args.load_images} must be a positive integer")
    if args.load_out is not None:
        if not args.load:
            raise ValueError(f"--load-out={args.load_out!r} needs --load (it is the load run's --out)")
        if not Path(args.load_out).resolve().parent.is_dir():
            raise ValueError(f"--load-out={args.load_out!r}: its folder does not exist; expected a path in an "
                             "existing folder, e.g. metrics/attention-quality.json")
    if args.load_from is not None and args.load:
        raise ValueError(f"--load-from={args.load_from!r} and --load exclude each other (copy or measure)")
    earlier = None
    if args.load_from is not None:
        from infsa_viz.io import read_json

        earlier = read_json(args.load_from)
        if not isinstance(earlier, dict) or not isinstance(earlier.get("load"), dict):
            raise ValueError(f"{args.load_from}: no load record to copy (expected a reliability report with 'load')")
    report = {"protocol": {"command": command_line(args), "torch": torch.__version__}}
    report["bad_input_matrix"] = bad_input_matrix()
    report["estimates"] = estimate_accuracy()
    with tempfile.TemporaryDirectory() as tmp:
        report["kill_and_resume"] = kill_and_resume(Path(tmp))
        if args.load:
            load_out = Path(args.load_out).resolve() if args.load_out else Path(tmp) / "load.json"
            report["load"] = load_run(load_out, n_images=args.load_images,
                                      threads=args.threads or torch.get_num_threads())
    if earlier is not None:  # a record copied before keeps its first provenance
        report["load"] = {"copied_from": f"{args.load_from} (measured by "
                          f"{earlier.get('protocol', {}).get('command', 'an earlier run')!r}; not rerun)",
                          **earlier["load"]}
        report["load"].setdefault("peak_rss_method", "ru_maxrss of the child from wait4: an upper bound, it also "
                                  "counts the resident pages of the parent (this benchmark) at the fork")
    write_json(args.out, report)
    matrix = report["bad_input_matrix"]
    print(json.dumps({"passed": matrix["total_passed"], "tried": matrix["total_tried"],
                      "resume_equal": report["kill_and_resume"]["equal_json"],
                      "load": report.get("load", {}).get("peak_rss_mib")}))
    return 0
