"""A toy model format in one module: a ``.toyvit`` JSON file holding a ViTConfig and a seed.

Importing (or running) this module registers it; nothing else in the package changes, which is
what ``test_registry.py`` checks: :func:`infsa_viz.formats.detect`, :func:`~infsa_viz.load_model`
and the CLI then read ``.toyvit`` files.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from infsa_viz.formats import Candidate, LoadOptions, ModelFormat, register_format
from infsa_viz.vit import VisionTransformer, ViTConfig


def _detect(candidate: Candidate) -> bool:
    return candidate.path.suffix == ".toyvit" and candidate.path.is_file()


def _load(path: Path, options: LoadOptions) -> VisionTransformer:
    data = json.loads(path.read_text())
    torch.manual_seed(data["seed"])
    config = ViTConfig.from_dict(data["config"], source=str(path)).replace(source={"format": "toy", "path": str(path)})
    return VisionTransformer(config)


FORMAT = register_format(ModelFormat("toy", detect=_detect, load=_load, expects="a .toyvit file (config + seed)"),
                         replace=True)
