"""Softmax vs InfSA vs Linear-InfSA: one method's maps on the same images, one colour scale.

    python examples/compare_maps.py --method perron --index 7 --out compare.png
"""

import argparse
from pathlib import Path

import torch

from infsa_viz import load_model
from infsa_viz.data import generate_cluttered, to_tensor
from infsa_viz.maps import explain
from infsa_viz.metrics import box_auc
from infsa_viz.overlay import color_limits, normalise_for_display, overlay, overlay_grid, save_png
from infsa_viz.train import TEST_SEED

MODELS = Path(__file__).parents[1] / "models"
parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--method", default="attention")
parser.add_argument("--index", type=int, default=0, help="test image shown in the grid")
parser.add_argument("--n-images", type=int, default=100, help="images for the PR-AUC comparison")
parser.add_argument("--out", default="compare.png")
args = parser.parse_args()

test = generate_cluttered(max(args.n_images, args.index + 1), split="test", seed=TEST_SEED)
images, boxes = to_tensor(test.images), test.target_boxes[:, None]
tiles, titles, maps = [], [], []
for name in ("softmax-vit4", "pure-infsa-vit4", "linear-infsa-vit4"):
    model = load_model(MODELS / name)
    m = explain(model, images, args.method)  # (B, h, w)
    pr = box_auc(m, boxes, image_size=48).pr_auc_mean
    print(f"{name:>18}: box PR-AUC of '{args.method}' maps on {len(images)} test images = {pr:.3f}")
    maps.append(m[args.index])
    with torch.no_grad():
        titles.append(f"{model.config.attention} pred {int(model(images[args.index:args.index + 1]).argmax())}")
limits = color_limits(maps)  # one colour scale for the three maps
for m, lim in zip(normalise_for_display(maps), limits):
    tiles.append(overlay(test.images[args.index], m, limits=lim, boxes=boxes[args.index],
                         distractor_boxes=test.distractor_boxes[args.index], scale=4))
save_png(args.out, overlay_grid(tiles, titles, colorbar=limits[0]))
print(f"wrote {args.out}")
