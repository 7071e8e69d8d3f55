"""``infsa-viz import-timm WEIGHTS.safetensors --num-heads H --attention V --out DIR``."""

from __future__ import annotations

import argparse
import json

from ..attention import VARIANTS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("weights", help="a timm ViT state dict saved as .safetensors (pickle files are refused)")
    parser.add_argument("--num-heads", type=int, required=True, help="heads per layer of the checkpoint")
    parser.add_argument("--attention", default="softmax", choices=VARIANTS, help="attention of the new model")
    parser.add_argument("--num-classes", type=int, default=None, help="start a fresh head with this many classes")
    parser.add_argument("--out", required=True, help="output model directory")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from ..timm_import import from_timm_state_dict
    from ..vit import count_parameters, save_model

    path = Path(args.weights)
    if path.suffix != ".safetensors" or not path.is_file():
        raise ValueError(f"WEIGHTS={args.weights!r} must be an existing .safetensors file (no pickle loading)")
    try:
        state = load_file(str(path))
    except (SafetensorError, OSError) as err:
        raise ValueError(f"{path}: not a readable safetensors file ({err})") from None
    model = from_timm_state_dict(state, num_heads=args.num_heads, attention=args.attention,
                                 num_classes=args.num_classes)
    save_model(model, args.out)
    print(json.dumps({"out": args.out, "config": model.config.to_dict(), "parameters": count_parameters(model)}))
    return 0
