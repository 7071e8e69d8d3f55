"""``infsa-viz compare IMAGE --models A,B,C --methods m1,m2 --out grid.png``: one colour scale."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ._inputs import add_map_options, load_input, map_options


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("image", metavar="IMAGE", help="image file, or test:INDEX for the cluttered-digits test split")
    parser.add_argument("--models", required=True, help="comma-separated model directories (columns)")
    parser.add_argument("--methods", default="attention", help="comma-separated map methods (rows)")
    parser.add_argument("--out", required=True, help="output PNG (a JSON with the settings is written next to it)")
    add_map_options(parser)


def render(args: argparse.Namespace) -> int:
    """Shared by ``explain`` and ``compare``: a grid of overlays, rows = methods, columns = models."""
    import torch

    from ..io import write_json
    from ..maps import check_method, explain_with_metadata
    from ..overlay import color_limits, normalise_for_display, overlay, overlay_grid, save_png
    from ..vit import load_model

    model_dirs = [d for d in args.models.split(",") if d]
    methods = [m for m in args.methods.split(",") if m]
    if not model_dirs or not methods:
        raise ValueError("--models and --methods must each name at least one entry")
    for method in methods:
        check_method(method)
    if not str(args.out).lower().endswith(".png"):
        raise ValueError(f"--out={args.out!r} must be a .png file")
    models = [load_model(d) for d in model_dirs]
    sizes = {(m.config.in_chans, m.config.img_size) for m in models}
    if len(sizes) != 1:
        raise ValueError(f"--models take different inputs {sorted(sizes)}; compare models of one input size")
    in_chans, size = sizes.pop()
    image = load_input(args.image, in_chans=in_chans, size=size)
    tiles_maps, titles, info = [], [], []
    for method in methods:
        options = map_options(args, method)
        for directory, model in zip(model_dirs, models):
            with torch.no_grad():
                probs = torch.softmax(model(image.tensor), -1)[0]
            result = explain_with_metadata(model, image.tensor, method, **options)
            tiles_maps.append(result.map[0])
            titles.append(f"{model.config.attention} | {method}")
            info.append({"model": directory, "variant": model.config.attention, "method": method,
                         "options": result.options, "prediction": int(probs.argmax()),
                         "probability": round(float(probs.max()), 4), "metadata": _jsonable(result.metadata)})
    limits = color_limits(tiles_maps, args.scale)
    shown = normalise_for_display(tiles_maps, args.scale)
    zoom = max(1, 192 // size)
    tiles = [overlay(image.display, m, limits=lim, alpha=args.alpha, colormap=args.colormap, boxes=image.boxes,
                     distractor_boxes=image.distractor_boxes, scale=zoom) for m, lim in zip(shown, limits)]
    grid = overlay_grid(tiles, titles, ncols=len(models), colormap=args.colormap,
                        colorbar=limits[0] if args.scale != "per-map" else None)
    save_png(args.out, grid)
    write_json(Path(args.out).with_suffix(".json"), {
        "image": image.name, "label": image.label, "scale": args.scale, "limits": limits[0] if args.scale != "per-map" else limits,
        "maps": info, "command": "infsa-viz " + " ".join(args.argv)})
    print(json.dumps({"out": str(args.out), "tiles": len(tiles)}))
    return 0


def _jsonable(value):
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


run = render
