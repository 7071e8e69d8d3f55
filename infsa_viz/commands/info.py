"""``infsa-viz info MODEL`` (or ``--model MODEL``): what was detected and built, as JSON.

Prints the format, the attention variant (and ``ρ``), the patch grid and prefix tokens, the
classes, the preprocessing the model's input gets, the full config, the parameter count and the
model card when the directory has one.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ._inputs import MODEL_HELP


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", nargs="?", default=None, metavar="MODEL", help=MODEL_HELP)
    parser.add_argument("--model", dest="model_option", default=None, metavar="MODEL", help="the same, as an option")


def run(args: argparse.Namespace) -> int:
    from ..formats import describe_model, load_model, parse_model_spec
    from ..io import read_json
    from ..model.vit import count_parameters

    if (args.model is None) == (args.model_option is None):
        raise ValueError("name one model: infsa-viz info MODEL, or --model MODEL")
    spec = args.model if args.model is not None else args.model_option
    model = load_model(spec)
    card_path = Path(parse_model_spec(spec)[0]) / "card.json"
    info = {
        "model": str(spec),
        **describe_model(model),
        "parameters": count_parameters(model),
        "config": model.config.to_dict(),
        "card": read_json(card_path) if card_path.is_file() else None,
    }
    print(json.dumps(info, indent=2))
    return 0
