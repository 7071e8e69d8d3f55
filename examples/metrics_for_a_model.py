"""Attribution metrics for one model in a few lines of the public API.

    python examples/metrics_for_a_model.py --model models/linear-infsa-vit4 --method visits
"""

import argparse
from pathlib import Path

from infsa_viz import load_model, preprocess
from infsa_viz.data import test_split
from infsa_viz.maps import attribute_images
from infsa_viz.metrics import box_auc, morf_aoc, perturbation_curves, pointing_game

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--model", default=str(Path(__file__).parents[1] / "models" / "linear-infsa-vit4"))
parser.add_argument("--method", default="visits")
parser.add_argument("--n-images", type=int, default=100)
args = parser.parse_args()

model = load_model(args.model)
test = test_split(args.n_images)  # the first images of the models' test split
images = preprocess(model, test.images)  # the model's own normalisation, from its config.json

maps = attribute_images(model, images, args.method).maps  # (B, 6, 6) on the patch grid
curves = perturbation_curves(model, images, maps, test.labels, patch_size=model.patch_size, order="morf")
auc = box_auc(maps, test.boxes, image_size=48)
point = pointing_game(maps, test.boxes, image_size=48)
print(f"{model.config.attention} / {args.method}: MoRF-AOC {morf_aoc(curves).mean:.1f} %, "
      f"box ROC-AUC {auc.roc_auc_mean:.3f}, PR-AUC {auc.pr_auc_mean:.3f}, pointing {point.accuracy:.3f}")
