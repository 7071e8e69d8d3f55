"""``infsa-viz evaluate``: score explanation maps of several models on one image set."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shlex

from ._inputs import add_data_options, add_model_list, load_data
from .lists import comma_names, output_file


def _target(text: str) -> str | int:
    if text in ("label", "predicted"):
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} must be 'label', 'predicted' or a class index") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..evaluation import EvalProtocol, default_methods

    d = EvalProtocol()
    add_model_list(parser, help="comma-separated models")
    parser.add_argument("--methods", type=comma_names, default=tuple(default_methods()), metavar="M[,M…]",
                        help=f"comma-separated map methods (default: {','.join(default_methods())})")
    parser.add_argument("--references", action="store_true",
                        help="also score the floor and ceiling maps (random, box_oracle) that "
                             "benchmark_quality in the report needs")
    add_data_options(parser, n_images=1000)
    parser.add_argument("--steps", type=int, default=d.steps, help=f"MoRF/LeRF steps K (default {d.steps})")
    parser.add_argument("--baseline", default=d.baseline, choices=("mean", "blur", "uniform"),
                        help="what removed patches become (default mean = 0 after normalisation)")
    parser.add_argument("--score", default=d.score, choices=("target", "predicted"),
                        help="the class whose probability the curves track (default: the label)")
    parser.add_argument("--select", default=d.select, choices=("correct", "all"),
                        help="images in MoRF/LeRF scores (default: correctly classified)")
    parser.add_argument("--target", type=_target, default=d.target, metavar="label|predicted|CLASS",
                        help="class explained by gradient methods (default: label, the ground truth)")
    parser.add_argument("--seed", type=int, default=d.seed, help="tie-breaking and random-map seed")
    parser.add_argument("--chunk", type=int, default=d.chunk, help="images per map call")
    parser.add_argument("--subsample", type=int, default=d.subsample, metavar="N",
                        help="deletion/insertion, positive/negative perturbation and the class switch on images "
                             f"with index < N (0 = off; default {d.subsample})")
    parser.add_argument("--insertion-steps", type=int, default=d.insertion_steps,
                        help=f"deletion/insertion steps (default {d.insertion_steps})")
    parser.add_argument("--blur-sigma", type=float, default=d.blur_sigma,
                        help="deletion/insertion blur sigma in pixels (default patch_size / 2)")
    parser.add_argument("--road-images", type=int, default=d.road_images, metavar="N",
                        help=f"ROAD on images with index < N (0 = off; default {d.road_images})")
    parser.add_argument("--road-steps", type=int, default=d.road_steps, help=f"ROAD steps (default {d.road_steps})")
    parser.add_argument("--road-noise", type=float, default=d.road_noise,
                        help=f"ROAD imputation noise, normalised units (default {d.road_noise})")
    parser.add_argument("--sanity-images", type=int, default=d.sanity_images, metavar="N",
                        help=f"sanity checks (randomisation, random logit) on the first N images (0 = off; "
                             f"default {d.sanity_images})")
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


def run(args: argparse.Namespace) -> int:
    from ..distributed import init_distributed
    from ..evaluation import TABLE_COLUMNS, EvalProtocol, evaluate, write_evaluation
    from ..evaluation.journal import Journal, OutputLock, run_fingerprint, weights_digest
    from ..evaluation.reference import check_evaluation_method
    from ..formats import load_model

    if not args.methods:
        raise ValueError("--methods names no method")
    if args.references:
        args.methods = tuple(args.methods) + tuple(m for m in ("random", "box_oracle") if m not in args.methods)
    for method in args.methods:
        check_evaluation_method(method)
    if not args.models:
        raise ValueError("--models names no model directory")
    if args.out and not args.out.endswith(".json"):
        raise ValueError(f"--out={args.out!r} must end in .json (CSV and HTML are written next to it)")
    if args.journal and not args.out:
        raise ValueError(f"--journal={args.journal!r} needs --out (the journal keeps the chunks of a written report)")
    if args.journal and os.path.exists(args.journal) and not os.path.isdir(args.journal):
        raise ValueError(f"--journal={args.journal!r} is a file; expected a folder (or a path to create)")
    protocol = EvalProtocol(steps=args.steps, baseline=args.baseline, score=args.score, select=args.select,
                            target=args.target, seed=args.seed, chunk=args.chunk, subsample=args.subsample,
                            insertion_steps=args.insertion_steps, blur_sigma=args.blur_sigma,
                            road_images=args.road_images, road_steps=args.road_steps, road_noise=args.road_noise,
                            sanity_images=args.sanity_images)
    models = [(d, load_model(d)) for d in args.models]
    data = load_data(args, models)
    dist = init_distributed()
    with contextlib.ExitStack() as stack:
        journal = None
        if args.out:
            if dist.is_main:
                stack.enter_context(OutputLock(args.out))
            journal = stack.enter_context(Journal(
                args.journal or args.out + ".journal", run_fingerprint(data, protocol, dist.world_size),
                models={name: weights_digest(model) for name, model in models}, data=data, lock=dist.is_main))
        try:
            result = evaluate(models, args.methods, data, protocol=protocol, dist=dist, journal=journal)
        finally:
            dist.close()
        if journal is not None and journal.resumed:
            logging.getLogger(__name__).warning("resumed: %d finished chunk(s) read back from %s",
                                                journal.resumed, journal.directory)
        if result is None:  # not rank 0
            return 0
        if args.out:
            write_evaluation(result, args.out, command="infsa-viz " + shlex.join(args.argv),
                             per_image=args.per_image)
            if not args.journal:
                journal.remove()
    header = TABLE_COLUMNS[1:12]
    print("  ".join(f"{h:>13}" for h in header))
    for row in result.rows:
        print("  ".join(f"{row[h]:>13.4g}" if isinstance(row[h], float) else f"{row[h]!s:>13}" for h in header))
    return 0
