"""Softmax vs InfSA vs Linear-InfSA: one method's maps on the same images, one colour scale.

    python examples/compare_maps.py --method perron --index 7 --out compare.png
"""

import argparse
from pathlib import Path

import torch

from infsa_viz import load_model, prepare
from infsa_viz.data import test_split
from infsa_viz.maps import attribute_images
from infsa_viz.metrics import box_auc
from infsa_viz.overlay import draw_maps, overlay_grid, save_png

MODELS = Path(__file__).parents[1] / "models"
parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--method", default="attention")
parser.add_argument("--index", type=int, default=0, help="test image shown in the grid")
parser.add_argument("--n-images", type=int, default=100, help="images for the PR-AUC comparison")
parser.add_argument("--out", default="compare.png")
args = parser.parse_args()

test = test_split(max(args.n_images, args.index + 1))  # image i is the same whatever n is
titles, maps = [], []
for name in ("softmax-vit4", "pure-infsa-vit4", "linear-infsa-vit4"):
    model = load_model(MODELS / name)
    inputs = prepare(model, test.images)
    m = attribute_images(model, inputs.tensor, args.method).maps  # (B, h, w)
    pr = box_auc(m, test.boxes, image_size=48).pr_auc_mean
    print(f"{name:>18}: box PR-AUC of '{args.method}' maps on {len(test)} test images = {pr:.3f}")
    maps.append(m[args.index])
    with torch.no_grad():
        titles.append(f"{model.config.attention} pred {int(model(inputs.tensor[args.index:args.index + 1]).argmax())}")
# One colour scale for the three maps: each divided by its mass, one (vmin, vmax) for all.
tiles, scale = draw_maps(inputs.display[args.index], maps, boxes=test.boxes[args.index],
                         distractor_boxes=test.negative_boxes[args.index], zoom=4)
save_png(args.out, overlay_grid(tiles, titles, scale=scale))
print(f"wrote {args.out}")
