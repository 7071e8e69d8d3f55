"""``infsa-viz info MODEL`` (or ``--model MODEL``): what was detected and built, as JSON.

Prints the format, the attention variant (and ``ρ``), the patch grid and prefix tokens, the
classes, the preprocessing the model's input gets, the full config, the parameter count, the model
card when the directory has one, and what each attention layer computes: its operator fingerprint
(:mod:`infsa_viz.model.fingerprint`, read from the layer's outputs on synthetic queries, keys and
values, not from its class), with whether graph readouts (visits, Perron, rollout, AttnLRP …) apply.
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
    from ..model.fingerprint import fingerprint
    from ..model.vit import count_parameters

    if (args.model is None) == (args.model_option is None):
        raise ValueError("name one model: infsa-viz info MODEL, or --model MODEL")
    spec = args.model if args.model is not None else args.model_option
    model = load_model(spec)
    card_path = Path(parse_model_spec(spec)[0]) / "card.json"
    try:
        layers = [f.to_dict() for f in fingerprint(model)]
    except RuntimeError:  # a format's model without our attention modules: nothing to probe
        layers = []
    info = {
        "model": str(spec),
        **describe_model(model),
        "parameters": count_parameters(model),
        "config": model.config.to_dict(),
        "card": read_json(card_path) if card_path.is_file() else None,
        "operator": {"computes": _summary(layers), "graph_readouts": all(f["graph_readouts"] for f in layers),
                     "layers": layers} if layers else None,
    }
    print(json.dumps(info, indent=2))
    return 0


def _summary(layers: list[dict]) -> str:
    """The one operator every layer computes, or ``"mixed: …"`` listing them in layer order."""
    found = [f["computes"] for f in layers]
    return found[0] if len(set(found)) == 1 else "mixed: " + ", ".join(found)
