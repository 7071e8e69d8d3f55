"""``infsa-viz info DIR``: print a saved model's config, size, learned rho and card as JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path



def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="model directory (config.json + model.safetensors)")


def run(args: argparse.Namespace) -> int:
    from ..io import read_json
    from ..vit import count_parameters, load_model

    model = load_model(args.model)
    card_path = Path(args.model) / "card.json"
    info = {
        "model": str(args.model),
        "config": model.config.to_dict(),
        "parameters": count_parameters(model),
        "rho": model.rho_values(),
        "card": read_json(card_path) if card_path.is_file() else None,
    }
    print(json.dumps(info, indent=2))
    return 0
