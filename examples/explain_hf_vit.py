"""Explain a Hugging Face transformers ViT / DeiT on your own photo (no transformers needed to run).

    python examples/explain_hf_vit.py MODEL_DIR photo.jpg --method rollout --out overlay.png

MODEL_DIR is a ``save_pretrained`` directory (config.json, model.safetensors, preprocessor_config.json);
it is converted to infsa-viz's ViT, which computes the same logits and attention.
"""

import argparse

import torch

from infsa_viz import load_model, prepare
from infsa_viz.images import read_image
from infsa_viz.maps import attribute_images
from infsa_viz.overlay import draw_maps, overlay_grid, save_png

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("model", help="a transformers save_pretrained directory")
parser.add_argument("image", help="a PNG/JPEG/BMP photo of any size")
parser.add_argument("--method", default="rollout", help="map method (see infsa_viz.maps.METHODS)")
parser.add_argument("--out", default="overlay.png")
args = parser.parse_args()

model = load_model(args.model)  # the model's own preprocessing comes with it
inputs = prepare(model, [read_image(args.image)])
with torch.no_grad():
    probabilities = model(inputs.tensor).softmax(-1)[0]
top = int(probabilities.argmax())
name = model.config.class_names[top] if model.config.class_names else str(top)
token_map = attribute_images(model, inputs.tensor, args.method).maps[0]  # (h, w) over the patch grid
tiles, scale = draw_maps(inputs.display[0], [token_map], zoom=max(1, 256 // model.config.img_size))
save_png(args.out, overlay_grid(tiles, [f"{args.method}: {name} ({probabilities[top]:.2f})"], scale=scale))
print(f"predicted {name!r} with probability {float(probabilities[top]):.3f}; wrote {args.out}")
