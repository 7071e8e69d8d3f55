"""``infsa-viz evaluate``: score explanation maps of several models on one image set."""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import shlex
import sys

from ._inputs import add_data_options, add_model_list, add_prompt_options, add_target_option, load_data, load_models
from .lists import comma_names, output_file, seed


def _setting_type(setting):
    """argparse type of one metric setting: its kind, with ``none`` for an optional one."""
    def convert(text: str):
        if setting.optional and text.lower() == "none":
            return None
        try:
            return setting.check(setting.kind(text), name=setting.flag)
        except ValueError as error:
            message = str(error) if str(error).startswith(setting.flag) else \
                f"{setting.flag}={text!r} is invalid; expected {'an integer' if setting.kind is int else 'a number'}"
            raise argparse.ArgumentTypeError(message) from None
    convert.__name__ = setting.kind.__name__
    return convert


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..evaluation import EvalSettings, default_methods, reference_methods
    from ..metrics.protocol import SELECTIONS
    from ..metrics.registry import METRICS, SETTINGS, default_metrics

    d = EvalSettings()
    add_model_list(parser, help="comma-separated models")
    parser.add_argument("--methods", type=comma_names, default=tuple(default_methods()), metavar="M[,M…]",
                        help=f"comma-separated map methods (default: {', '.join(default_methods())})")
    parser.add_argument("--references", action="store_true",
                        help="also score the reference maps that benchmark_quality in the report needs (the floor "
                             f"and the ceilings, and the model-ignorant controls: {', '.join(reference_methods())})")
    parser.add_argument("--metrics", type=comma_names, default=None, metavar="METRIC[,…]",
                        help=f"comma-separated metrics (default: {', '.join(default_metrics())}; all: "
                             f"{', '.join(METRICS)})")
    add_data_options(parser, n_images=1000)
    parser.add_argument("--select", default=d.select, choices=SELECTIONS,
                        help="images in MoRF/LeRF scores (default: correctly classified)")
    add_target_option(parser, default="label", help="class explained by class-explaining maps and scored by every "
                                                    "metric (default: label, the ground truth; an image without "
                                                    "one: its prediction)")
    add_prompt_options(parser)
    parser.add_argument("--layer", type=int, default=None, help="layer of per-layer methods (default: each method's)")
    parser.add_argument("--head", default=None, help="head index or 'mean' of per-layer methods (default: each method's)")
    parser.add_argument("--gamma", type=float, default=None,
                        help="discount of visits/neumann (default: the learned rho, 0.9 for layers without one)")
    parser.add_argument("--seed", type=seed(), default=d.seed, help="tie-breaking and random-map seed")
    parser.add_argument("--chunk", type=int, default=d.chunk, help="images per map call (lower it when a map of "
                                                                    "large inputs does not fit)")
    parser.add_argument("--batch-size", type=int, default=d.batch_size,
                        help=f"perturbed copies per forward pass of the metrics (does not change the results; "
                             f"default {d.batch_size})")
    for setting in SETTINGS.values():  # every metric's settings, declared once in the metric registry
        parser.add_argument(setting.flag, type=_setting_type(setting), default=setting.default,
                            choices=setting.choices, help=f"{setting.help} (default {setting.default})")
    parser.add_argument("--per-image", action="store_true",
                        help="also write every image's figures to OUT.images.csv")
    parser.add_argument("--out", type=output_file, default=None,
                        help="report .json (CSV and HTML written next to it); a killed "
                        "run resumes from OUT.journal/ when the same command is run again")
    parser.add_argument("--journal", default=None, metavar="DIR",
                        help="keep finished chunks in DIR (a new or empty folder, or an earlier journal) instead of "
                             "OUT.journal/, and keep DIR after the report: "
                             "a later run on the same data and settings reuses every (model weights, method, "
                             "images) chunk it finds there, so models or methods can be added one run at a time")


def _model_key(spec: str, model) -> str:
    """What keys a model's journalled chunks: its weights and config as loaded, and the bytes of its files (an
    edit the loader normalises away, a card or processor file changed, still makes new chunks)."""
    from ..evaluation.journal import model_digest
    from ..formats import parse_model_spec
    from ..io import model_files_digest

    path = parse_model_spec(spec)[0]
    return f"{model_digest(model)}:{model_files_digest(path) if os.path.exists(path) else ''}"


def run(args: argparse.Namespace) -> int:
    from ..distributed import init_distributed
    from ..evaluation import EvalSettings, evaluate, reference_methods, table_columns, write_evaluation
    from ..evaluation.budget import check_evaluation, cli_option, evaluation_estimate
    from ..evaluation.journal import Journal, OutputLock, run_fingerprint
    from ..maps import METHODS, check_method
    from ..metrics.registry import METRICS, SETTINGS, check_metric
    from ..stats import with_comparisons
    from ..targets import target_for_models

    if not args.methods:
        raise ValueError(f"--methods names no method; expected some of {list(METHODS)}")
    if args.metrics is not None and not args.metrics:
        raise ValueError(f"--metrics names no metric; expected some of {list(METRICS)} (omit it for the defaults)")
    if args.references:
        args.methods = tuple(args.methods) + tuple(m for m in reference_methods() if m not in args.methods)
    for method in args.methods:
        check_method(method)
    for metric in args.metrics or ():
        check_metric(metric)
    if not args.models:
        raise ValueError("--models names no model directory")
    if args.out and not args.out.endswith(".json"):
        raise ValueError(f"--out={args.out!r} must end in .json (CSV and HTML are written next to it)")
    if args.journal and not args.out:
        raise ValueError(f"--journal={args.journal!r} needs --out (the journal keeps the chunks of a written report)")
    if args.journal and os.path.exists(args.journal) and not os.path.isdir(args.journal):
        raise ValueError(f"--journal={args.journal!r} is a file; expected a folder (or a path to create)")
    if args.out:
        from pathlib import Path

        from ..formats import parse_model_spec
        from ..io import refuse_overwriting_inputs

        written = {"--out": args.out, **{f"--out (its {s})": str(Path(args.out).with_suffix(s))
                                         for s in (".csv", ".html", ".images.csv")}}
        from ..data import data_source

        data_folder = data_source(args.data).root
        refuse_overwriting_inputs(written, [*(parse_model_spec(m)[0] for m in args.models), str(data_folder or ""),
                                            args.boxes or "", args.classes or ""])
    settings = dict(select=args.select, seed=args.seed, chunk=args.chunk, batch_size=args.batch_size,
                    metrics=args.metrics, map_options={"layer": args.layer, "head": args.head, "gamma": args.gamma},
                    **{name: getattr(args, name) for name in SETTINGS})
    EvalSettings(**settings)  # every setting checked before a model loads
    models = load_models(args.models, args)
    protocol = EvalSettings(target=target_for_models(args.target, models, name="--target"), **settings)
    check_evaluation(models, args.methods, protocol, n_images=args.n_images, spell=cli_option)  # before any data
    data = load_data(args, models)
    for name in args.metrics or ():  # named on purpose: refused where the data cannot give it
        reason = METRICS[name].missing_data(data)
        if reason:
            raise ValueError(f"--metrics {name}: {reason} (--data {args.data})")
    for method in args.methods:
        reason = check_method(method).missing_data(data)
        if reason:
            raise ValueError(f"--methods {method}: {reason} (--data {args.data})")
    dist = init_distributed()
    with contextlib.ExitStack() as stack:
        journal = None
        if args.out:
            if dist.is_main:
                stack.enter_context(OutputLock(args.out))
            journal = stack.enter_context(Journal(
                args.journal or args.out + ".journal", run_fingerprint(data, protocol, dist.world_size),
                models={name: _model_key(name, model) for name, model in models}, data=data, lock=dist.is_main))
        if dist.is_main:  # once the output and journal are accepted, before any image is scored
            share = math.ceil(len(data) / dist.world_size)
            estimate = evaluation_estimate(models, args.methods, protocol, n_images=share)
            print(f"infsa-viz evaluate: estimate: {estimate.describe()}", file=sys.stderr, flush=True)
        try:
            result = evaluate(models, args.methods, data, protocol=protocol, dist=dist, journal=journal)
        except BaseException:
            if journal is not None and dist.is_main and not args.journal and not journal.has_chunks():
                journal.remove()  # failed before any chunk was finished: nothing to resume, nothing left behind
            raise
        finally:
            dist.close()
        if journal is not None and journal.resumed:
            logging.getLogger(__name__).warning("resumed: %d finished chunk(s) read back from %s",
                                                journal.resumed, journal.directory)
        if result is None:  # not rank 0
            return 0
        if args.out:  # the report adds the statistics that judge the rows
            write_evaluation(with_comparisons(result), args.out, command="infsa-viz " + shlex.join(args.argv),
                             per_image=args.per_image)
            if not args.journal:
                journal.remove()
    header = table_columns()[1:12]
    print("  ".join(f"{h:>13}" for h in header))
    for row in result.rows:
        cells = [row.get(h) for h in header]
        print("  ".join(f"{v:>13.4g}" if isinstance(v, float) else f"{v!s:>13}" for v in cells))
    return 0
