"""Extending infsa-viz in one module: a metric, a map method, a reference map and a model format.

Importing this module registers all four; nothing in the package or the app changes. The
evaluation (``infsa_viz.evaluate`` and ``infsa-viz evaluate``), the CLI's choices and help, the
metric docs and the app (the method in its menu, the metric as a column of Side by side's figures
table and of its exports, a ``.toyvit`` model listed and explained) then know them, because every
one of them reads the registries::

    python -c "import examples.toy_plugin, infsa_viz.cli as c; c.main(['evaluate', '--help'])"
    streamlit run app -- --plugins examples/toy_plugin.py

* ``centre_bias``: a map method (an explanation): distance to the image border, a "centre bias" map;
* ``centre_oracle``: a reference map (a ceiling) that reads the images' ground truth (the boxes);
* ``map_peak``: a metric, the map's largest value after normalising it by its mass (shown for single
  images: ``image_format``);
* ``.toyvit``: a model format, a JSON file holding a config and a seed (random weights).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from infsa_viz.formats import Candidate, LoadOptions, ModelFormat, register_format
from infsa_viz.maps.base import GroundTruth, MapMethod, register
from infsa_viz.metrics.registry import Figure, Metric, Scores, Scoring, register_metric
from infsa_viz.model import VisionTransformer, ViTConfig

__all__ = ["CentreBias", "CentreOracle", "MapPeak", "TOY_FORMAT"]


def _centre(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    h, w = images.shape[-2] // patch_size, images.shape[-1] // patch_size
    y = torch.minimum(torch.arange(h), torch.arange(h).flip(0)).float()
    x = torch.minimum(torch.arange(w), torch.arange(w).flip(0)).float()
    return (y[:, None] + x[None] + 1.0).expand(images.shape[0], h, w).clone()  # (B, h, w)


@register
class CentreBias(MapMethod):
    """Distance of each patch to the border: what a map that ignores the model looks like."""

    name = "centre_bias"
    family = "baseline"
    description = "distance of each patch to the image border (a centre-bias map that ignores the model)"
    cost = "none"

    def _compute(self, forward, options):  # forward: the images' ForwardRecord (inputs, logits, target, attention)
        maps = _centre(forward.inputs, forward.model.patch_size)
        return maps, {"rule": "min distance to the border + 1, in patches"}, None


@register
class CentreOracle(MapMethod):
    """A reference map that reads the truth: 1 on patches whose centre lies in a target box."""

    name = "centre_oracle"
    family = "reference"
    role = "ceiling"
    needs_truth = True
    in_default_report = False
    description = "reference: 1 on the patches whose centre lies inside a target box"
    cost = "none (reads the boxes)"

    def _compute(self, forward, options, truth: GroundTruth):
        p, images = forward.model.patch_size, forward.inputs
        h, w = images.shape[-2] // p, images.shape[-1] // p
        centres_y, centres_x = np.meshgrid(np.arange(h) * p + p / 2, np.arange(w) * p + p / 2, indexing="ij")
        maps = np.zeros((images.shape[0], h, w), dtype=np.float32)
        for i, boxes in enumerate(truth.boxes):
            for x0, y0, x1, y1 in np.asarray(boxes).reshape(-1, 4):
                maps[i] += (centres_x >= x0) & (centres_x < x1) & (centres_y >= y0) & (centres_y < y1)
        return torch.from_numpy(np.minimum(maps, 1.0)), {"rule": "patch centre inside a target box"}, None


@register_metric
class MapPeak(Metric):
    """The map's largest value divided by its mass: how peaked a map is (descriptive, not ranked)."""

    name = "map_peak"
    category = "complexity"
    rule = "max(m) / sum(|m|) over patches"
    figures = (Figure("map_peak", "map peak", None, "share of the map's mass", ranked=False, image_format=".3f"),)

    def score(self, ctx: Scoring) -> Scores:
        flat = ctx.maps.flatten(1).double()
        mass = flat.abs().sum(1).clamp_min(1e-12)
        return Scores({"map_peak": (flat.amax(1) / mass).numpy()})


def _detect(candidate: Candidate) -> bool:
    return candidate.path.suffix == ".toyvit" and candidate.path.is_file()


def _load(path: Path, options: LoadOptions) -> VisionTransformer:
    data = json.loads(path.read_text())
    torch.manual_seed(int(data["seed"]))
    config = ViTConfig.from_dict(data["config"], source=str(path)).replace(source={"format": "toy", "path": str(path)})
    return VisionTransformer(config)


def _sample(folder: Path) -> str:
    """A small ``.toyvit`` file (what the conformance checks load)."""
    config = ViTConfig(img_size=16, in_chans=1, patch_size=4, embed_dim=16, depth=2, num_heads=2, num_classes=3)
    path = folder / "m.toyvit"
    path.write_text(json.dumps({"config": config.to_dict(), "seed": 0}))
    return str(path)


TOY_FORMAT = register_format(ModelFormat("toy", detect=_detect, load=_load, sample=_sample,
                                         expects="a .toyvit JSON file: {'config': ViTConfig dict, 'seed': int}"),
                             replace=True)
