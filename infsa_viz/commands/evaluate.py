"""``infsa-viz evaluate``: score explanation maps of several models on one image set."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..evaluate import DEFAULT_METHODS, EvalSettings

    d = EvalSettings()
    parser.add_argument("--models", required=True, help="comma-separated model directories")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                        help=f"comma-separated map methods (default: {','.join(DEFAULT_METHODS)})")
    parser.add_argument("--data", default="cluttered-digits", metavar="cluttered-digits|folder:PATH",
                        help="cluttered-digits test split (default) or an ImageNet-style folder")
    parser.add_argument("--boxes", default=None, metavar="XMLDIR",
                        help="Pascal-VOC XML boxes for folder data (one <stem>.xml per image)")
    parser.add_argument("--n-images", type=int, default=1000, help="images to evaluate (default 1000)")
    parser.add_argument("--steps", type=int, default=d.steps, help=f"MoRF/LeRF steps K (default {d.steps})")
    parser.add_argument("--baseline", default=d.baseline, choices=("mean", "blur", "uniform"),
                        help="what removed patches become (default mean = 0 after normalisation)")
    parser.add_argument("--score", default=d.score, choices=("target", "predicted"))
    parser.add_argument("--select", default=d.select, choices=("correct", "all"),
                        help="images in MoRF/LeRF scores (default: correctly classified)")
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--chunk", type=int, default=d.chunk, help="images per explanation call")
    parser.add_argument("--out", default=None, help="report .json (CSV and HTML written next to it)")


def _data(args: argparse.Namespace, in_chans: int, size: int):
    import numpy as np
    import torch

    from ..evaluate import EvalData

    if args.n_images < 1:
        raise ValueError(f"--n-images={args.n_images} must be a positive integer")
    if args.data == "cluttered-digits":
        if args.boxes:
            raise ValueError("--boxes applies to folder data only; cluttered digits carry exact boxes")
        from ..data import ClutteredDigitsConfig, generate_cluttered, to_tensor
        from ..train import TEST_SEED

        config = ClutteredDigitsConfig()
        if (in_chans, size) != (1, config.canvas_size):
            raise ValueError(f"the models take {in_chans}x{size}x{size} images; cluttered digits are "
                             f"1x{config.canvas_size}x{config.canvas_size}")
        sample = generate_cluttered(args.n_images, split="test", seed=TEST_SEED, config=config)
        return EvalData(to_tensor(sample.images), torch.as_tensor(sample.labels),
                        [b[None] for b in sample.target_boxes], list(sample.distractor_boxes),
                        {"name": "cluttered-digits", "split": "test", "seed": TEST_SEED, "n_images": args.n_images,
                         "settings_hash": config.settings_hash(), "boxes": "target digit (positive); distractor "
                         "digits are negatives and also reported separately (distractor_roc_auc)"})
    if not args.data.startswith("folder:"):
        raise ValueError(f"--data={args.data!r} must be 'cluttered-digits' or 'folder:PATH'")
    from ..data import FolderDataset

    root = Path(args.data[len("folder:"):])
    ds = FolderDataset(root, image_size=size, channels=in_chans, boxes_dir=args.boxes)
    n = min(args.n_images, len(ds))
    if n == 0:
        raise ValueError(f"--data {args.data}: no images found")
    items = [ds[i] for i in range(n)]  # decode each image once
    images = torch.stack([image for image, _ in items])
    labels = torch.tensor([label for _, label in items])
    boxes = [ds.boxes(i) if args.boxes else np.zeros((0, 4), np.int64) for i in range(n)]
    return EvalData(images, labels, boxes, None, {"name": "folder", "root": str(root), "n_images": n,
                                                  "boxes_dir": args.boxes})


def run(args: argparse.Namespace) -> int:
    from ..distributed import init_distributed
    from ..evaluate import EvalSettings, evaluate_maps
    from ..maps import check_method
    from ..reports import TABLE_COLUMNS, write_evaluation
    from ..vit import load_model

    methods = [m for m in args.methods.split(",") if m]
    for method in methods:
        check_method(method)
    if args.out and not args.out.endswith(".json"):
        raise ValueError(f"--out={args.out!r} must end in .json (CSV and HTML are written next to it)")
    dirs = [d for d in args.models.split(",") if d]
    if not dirs:
        raise ValueError(f"--models={args.models!r} names no model directory")
    models = [(d, load_model(d)) for d in dirs]
    shapes = {(m.config.in_chans, m.config.img_size) for _, m in models}
    if len(shapes) > 1:
        raise ValueError(f"--models take different inputs {sorted(shapes)}; evaluate models of one input size")
    in_chans, size = shapes.pop()
    data = _data(args, in_chans, size)
    settings = EvalSettings(steps=args.steps, baseline=args.baseline, score=args.score, select=args.select,
                            seed=args.seed, chunk=args.chunk)
    dist = init_distributed()
    try:
        report = evaluate_maps(models, methods, data, settings=settings, dist=dist)
    finally:
        dist.close()
    if report is None:  # not rank 0
        return 0
    report["command"] = "infsa-viz " + " ".join(args.argv)
    if args.out:
        write_evaluation(report, args.out)
    header = TABLE_COLUMNS[1:12]
    print("  ".join(f"{h:>13}" for h in header))
    for row in report["results"]:
        print("  ".join(f"{row[h]:>13.4g}" if isinstance(row[h], float) else f"{row[h]!s:>13}" for h in header))
    return 0
