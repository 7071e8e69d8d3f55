"""``infsa-viz import-timm WEIGHTS.safetensors --num-heads H --variant V --out DIR``."""

from __future__ import annotations

import argparse
import json

from ..model.attention import DEFAULT_VARIANT, VARIANTS
from ..preprocess import RESAMPLES, RESIZES
from .lists import comma_floats


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("weights", help="a timm ViT state dict saved as .safetensors (pickle files are refused)")
    parser.add_argument("--num-heads", type=int, required=True, help="heads per layer of the checkpoint")
    parser.add_argument("--variant", default=DEFAULT_VARIANT, choices=VARIANTS, help="attention variant of the new model")
    parser.add_argument("--num-classes", type=int, default=None, help="start a fresh head with this many classes")
    parser.add_argument("--mean", type=comma_floats, default=None, metavar="M[,M,M]",
                        help="input normalisation mean of pixel/255 per channel (default: ImageNet's for RGB "
                             "weights; required for other channel counts)")
    parser.add_argument("--std", type=comma_floats, default=None, metavar="S[,S,S]",
                        help="input normalisation std per channel (default: ImageNet's for RGB weights)")
    parser.add_argument("--resize", choices=RESIZES, default="stretch", help="how images reach the model's size")
    parser.add_argument("--resample", choices=RESAMPLES, default="bicubic", help="interpolation (default bicubic)")
    parser.add_argument("--out", required=True, help="output model directory (a new or empty folder)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the model already in --out (atomically, once the new one is written)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..formats._state import read_safetensors
    from ..io import check_new_folder, replace_folder
    from ..formats.timm import IMAGENET, from_timm_state_dict
    from ..model.files import save_model
    from ..model.vit import count_parameters
    from ..preprocess import Preprocessing

    path = Path(args.weights)
    check_new_folder("--out", args.out, overwrite=args.overwrite)
    if path.suffix != ".safetensors" or not path.is_file():
        raise ValueError(f"WEIGHTS={args.weights!r} must be an existing .safetensors file (no pickle loading)")
    state = read_safetensors(path)
    conv = state.get("patch_embed.proj.weight")
    channels = conv.shape[1] if conv is not None and conv.dim() == 4 else 3
    if channels != 3 and (args.mean is None or args.std is None):
        raise ValueError(f"{path}: patch_embed.proj.weight takes {channels} input channel(s); the ImageNet "
                         "--mean/--std defaults are for 3: pass --mean and --std with 1 or "
                         f"{channels} value(s) each")
    preprocessing = Preprocessing(mean=args.mean or IMAGENET.mean, std=args.std or IMAGENET.std,
                                  resize=args.resize, resample=args.resample)
    model = from_timm_state_dict(state, num_heads=args.num_heads, attention=args.variant,
                                 num_classes=args.num_classes, preprocessing=preprocessing, source=str(path))
    replace_folder(args.out, lambda folder: save_model(model, folder))
    print(json.dumps({"out": args.out, "config": model.config.to_dict(), "parameters": count_parameters(model)}))
    return 0
