"""``infsa-viz compare IMAGE --models A,B,C --methods m1,m2 --out grid.png``: one colour scale."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Callable

from ._inputs import IMAGE_HELP, add_map_options, add_model_list, add_prompt_options, load_input, load_models
from .lists import comma_names, output_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("image", metavar="IMAGE", help=IMAGE_HELP)
    add_model_list(parser, help="comma-separated models (columns)")
    from ..maps.attention import AttentionMap

    parser.add_argument("--methods", type=comma_names, default=(AttentionMap.name,), metavar="M[,M…]",
                        help=f"comma-separated map methods (rows; default {AttentionMap.name})")
    parser.add_argument("--out", type=output_file, required=True,
                        help="output PNG (a JSON with the settings is written next to it)")
    add_map_options(parser)
    add_prompt_options(parser)


def _jsonable(value: Any) -> Any:
    import torch

    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def render(args: argparse.Namespace, *, extra: Callable[[Any, Any], dict[str, Any]] | None = None) -> int:
    """Shared by ``explain`` and ``compare``: a grid of overlays, rows = methods, columns = models.

    ``extra(record, result)`` (``explain --check-conservation``) adds its JSON-able entries to each tile's
    record in the settings JSON and to the summary printed on stdout (under ``"maps"``)."""
    from ..evaluation.budget import check_maps
    from ..formats import parse_model_spec
    from ..io import refuse_overwriting_inputs, write_json
    from ..maps import attribute, check_method, selector_options
    from ..overlay import colour_scale, overlay, overlay_grid, save_png
    from ..forward import forward_record
    from ..preprocess import prepare
    from ..targets import target_for_models

    if not args.models or not args.methods:
        raise ValueError("--models and --methods must each name at least one entry")
    for method in args.methods:
        if check_method(method).needs_truth:
            raise ValueError(f"method {method!r} is a reference map built from an evaluation's ground truth (boxes, "
                             f"scene objects), not an explanation of the model; score it with infsa-viz evaluate "
                             f"--methods {method} --data cluttered-digits")
    if not str(args.out).lower().endswith(".png"):
        raise ValueError(f"--out={args.out!r} must be a .png file")
    if not 0.0 <= args.alpha <= 1.0:
        raise ValueError(f"--alpha={args.alpha} must lie in [0, 1]")
    refuse_overwriting_inputs({"--out": args.out, "--out (its settings JSON)": str(Path(args.out).with_suffix(".json"))},
                              [args.image, *(parse_model_spec(d)[0] for d in args.models)])
    models = load_models(args.models, args)
    sizes = {m.config.img_size for _, m in models}
    if len(sizes) != 1:
        raise ValueError(f"--models take different image sizes {sorted(sizes)}; compare models of one input size")
    options = {method: selector_options(method, layer=args.layer, head=args.head, gamma=args.gamma, strict=True)
               for method in args.methods}
    check_maps(models, list(options.items()), batch=1)  # before the image is read or a forward runs
    image = load_input(args.image)
    label = int(image.labels[0])
    target = target_for_models(args.target, models, name="--target")
    if label < 0 and target.needs_label:
        raise ValueError("--target=label needs an image with a label (BENCHMARK:INDEX); this one has none")
    inputs = {d: prepare(m, image.images) for d, m in models}
    capture = any(check_method(m).reads_attention for m in args.methods)
    records = {d: forward_record(m, inputs[d], labels=[label], target=target, capture=capture) for d, m in models}
    maps, titles, info, shown, extras = [], [], [], [], []
    for method in args.methods:
        for directory, model in models:
            record = records[directory]
            logits = record.logits[0].float()
            result = attribute(record, method, **options[method])
            maps.append(result.maps[0])
            shown.append(directory)
            titles.append(f"{model.config.attention} | {method}")
            info.append({"model": directory, "variant": model.config.attention, "method": method,
                         "options": _jsonable(result.options), "logits": [round(float(v), 6) for v in logits],
                         "prediction": int(logits.argmax()), "probability": round(float(logits.softmax(-1).max()), 6),
                         "target": None if result.target is None else int(result.target[0]),
                         "validity": None if result.validity is None else result.validity.for_image(0),
                         "metadata": _jsonable(result.metadata)})
            if extra is not None:
                added = extra(record, result)
                info[-1].update(added)
                extras.append({"model": directory, "method": method, **added})
    scale = colour_scale(maps, args.scale, colormap=args.colormap)
    zoom = max(1, 192 // next(iter(sizes)))
    tiles = []
    for i, (directory, token_map) in enumerate(zip(shown, maps)):
        prepared = inputs[directory]
        boxes = prepared.boxes(0, image.boxes[0])
        negatives = None if image.negative_boxes is None else prepared.boxes(0, image.negative_boxes[0])
        tiles.append(overlay(prepared.display[0], token_map, scale, i, alpha=args.alpha, boxes=boxes,
                             distractor_boxes=negatives, zoom=zoom))
    save_png(args.out, overlay_grid(tiles, titles, ncols=len(models), scale=scale))
    write_json(Path(args.out).with_suffix(".json"), {
        "image": image.names[0], "label": label if label >= 0 else None, "scale": args.scale,
        "colour_scale": {"mode": scale.mode, "unit": scale.unit, "limits": [list(lim) for lim in scale.limits],
                         "divisors": list(scale.divisors), "colormap": scale.colormap},
        "maps": info, "command": "infsa-viz " + " ".join(args.argv)})
    summary: dict[str, Any] = {"out": str(args.out), "tiles": len(tiles)}
    if extras:
        summary["maps"] = extras
    print(json.dumps(summary))
    return 0


run = render
