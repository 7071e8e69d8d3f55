"""Attribution metrics for one model in a few lines of the public API.

    python examples/metrics_for_a_model.py --model models/linear-infsa-vit4 --method visits
"""

import argparse
from pathlib import Path

import torch

from infsa_viz import load_model
from infsa_viz.data import generate_cluttered, to_tensor
from infsa_viz.maps import explain
from infsa_viz.metrics import box_auc, morf_aoc, perturbation_curves, pointing_game
from infsa_viz.train import TEST_SEED

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--model", default=str(Path(__file__).parents[1] / "models" / "linear-infsa-vit4"))
parser.add_argument("--method", default="visits")
parser.add_argument("--n-images", type=int, default=100)
args = parser.parse_args()

model = load_model(args.model)
test = generate_cluttered(args.n_images, split="test", seed=TEST_SEED)  # the models' test split
images, labels, boxes = to_tensor(test.images), torch.as_tensor(test.labels), test.target_boxes[:, None]

maps = explain(model, images, args.method)  # (B, 6, 6) on the patch grid
curves = perturbation_curves(model, images, maps, labels, patch_size=model.patch_size, order="morf")
auc = box_auc(maps, boxes, image_size=48)
point = pointing_game(maps, boxes, image_size=48)
print(f"{model.config.attention} / {args.method}: MoRF-AOC {morf_aoc(curves).mean:.1f} %, "
      f"box ROC-AUC {auc.roc_auc_mean:.3f}, PR-AUC {auc.pr_auc_mean:.3f}, pointing {point.accuracy:.3f}")
