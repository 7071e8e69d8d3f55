"""``infsa-viz train``: train one variant with the matched recipe and write its model card."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ..model.attention import VARIANTS
from ._inputs import MODEL_HELP
from .lists import count, learning_rate, seed


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..data import BENCHMARKS

    parser.add_argument("--variant", default=None, choices=VARIANTS,
                        help="attention variant (required without --init; with it, swaps the initial model's)")
    parser.add_argument("--init", default=None, metavar="MODEL",
                        help="fine-tune this model instead of training from scratch: " + MODEL_HELP)
    parser.add_argument("--out", required=True, help="output model directory (the model card): a new or empty folder")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the model already in --out: the new one is trained in a folder beside it and "
                             "swapped in only once complete (atomically); without it such a folder is refused")
    parser.add_argument("--epochs", type=int, default=None, help="epochs (default: the recipe's)")
    parser.add_argument("--seed", type=seed(), default=0, help="seed for weights, data and shuffling (default 0)")
    parser.add_argument("--data-seed", type=seed("--data-seed"), default=None,
                        help="seed of the training-image stream (default: --seed); fix it to train seeds "
                             "that differ in initial weights and data order only")
    parser.add_argument("--data", default="cluttered-digits", metavar="BENCHMARK|folder:PATH",
                        help=f"training data: a registered benchmark ({', '.join(BENCHMARKS)}), or folder:PATH, an "
                             "ImageNet-style folder with train/ and test/ class sub-folders")
    parser.add_argument("--image-size", type=count("--image-size", 8192), default=None,
                        help="image side for folder data (default 224; a benchmark fixes its own)")
    parser.add_argument("--channels", type=int, default=None, choices=(1, 3),
                        help="channels for folder data (default 3; a benchmark fixes its own)")
    parser.add_argument("--patch-size", type=int, default=None, help="patch side (default: the recipe's, 8)")
    parser.add_argument("--images-per-epoch", type=int, default=None,
                        help="generated images per epoch (default: the recipe's; a folder: all its training images)")
    parser.add_argument("--test-size", type=int, default=None, help="held-out images of a generated benchmark (default: the recipe's)")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--lr", type=learning_rate(), default=None, help="peak learning rate (default: the recipe's)")
    parser.add_argument("--resume", action="store_true", help="continue an interrupted run in --out")


def run(args: argparse.Namespace) -> int:
    import json

    import torch

    from ..data import data_source
    from ..io import check_new_folder, replace_folder
    from ..train.data import training_data
    from ..train.loop import train
    from ..train.recipe import TrainConfig

    recipe = TrainConfig()
    init = None
    if args.init is not None:
        from ..formats import load_model, swap_attention

        if args.patch_size is not None:
            raise ValueError("--patch-size does not apply with --init (the initial model fixes the architecture)")
        init = load_model(args.init)
        if args.variant is not None:
            init = swap_attention(init, args.variant)
        model = init.config
    elif args.variant is None:
        raise ValueError("--variant is required (or --init MODEL to fine-tune a model)")
    else:
        model = recipe.model.replace(attention=args.variant)
    if args.patch_size is not None:
        model = model.replace(patch_size=args.patch_size)
    changes = {k: v for k, v in {
        "epochs": args.epochs,
        "images_per_epoch": args.images_per_epoch,
        "test_size": args.test_size,
        "batch_size": args.batch_size,
        "lr": args.lr,
        "data_seed": args.data_seed,
    }.items() if v is not None}
    if args.overwrite and args.resume:
        raise ValueError("--overwrite and --resume exclude each other (replace the model, or continue its run)")
    if not args.resume:
        check_new_folder("--out", args.out, overwrite=args.overwrite)
    config = TrainConfig(**{**recipe.to_dict(), **changes, "model": model, "seed": args.seed})  # checked first
    data = training_data(data_source(args.data), config.test_size, model_input=model if init is not None else None,
                         image_size=args.image_size, channels=args.channels)
    if data.epoch_size is not None:  # a fixed training set (a folder): one epoch is all of it
        changes.setdefault("images_per_epoch", data.epoch_size)
    config = TrainConfig(**{**recipe.to_dict(), **changes, "model": model, "seed": args.seed})
    command = "infsa-viz " + shlex.join(args.argv)
    from ..distributed import init_distributed

    dist = init_distributed()
    def run_into(folder: Path | str) -> dict:
        return train(config, folder, data=data, resume=args.resume, command=command, dist=dist, init=init)

    replacing = args.overwrite and Path(args.out).is_dir() and any(Path(args.out).iterdir())
    if replacing and dist.world_size > 1:
        raise ValueError("--overwrite runs in one process; train into a new folder under torchrun")
    try:
        card = replace_folder(args.out, run_into) if replacing else run_into(args.out)
    finally:
        dist.close()
    if not dist.is_main:
        return 0
    summary = {k: card[k] for k in ("variant", "parameters", "epochs", "train_seconds", "test_accuracy",
                                    "rho_init", "rho_final")}
    print(json.dumps({"out": str(args.out), **summary, "threads": torch.get_num_threads()}, indent=2))
    return 0
