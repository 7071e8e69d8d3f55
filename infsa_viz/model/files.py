"""Our saved-model directory: ``config.json`` (a :class:`~infsa_viz.model.config.ViTConfig`) and
``model.safetensors`` (the state dict), written by :func:`save_model`.

Reading one back (no pickle) is :func:`infsa_viz.formats.load_model`. Importable from
:mod:`infsa_viz.model` as well.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..io import atomic_write

if TYPE_CHECKING:
    from .vit import VisionTransformer

__all__ = ["CONFIG_FILE", "WEIGHTS_FILE", "save_model"]

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


def save_model(model: VisionTransformer, directory: str | Path) -> Path:
    """Write ``config.json`` and ``model.safetensors`` into ``directory`` (atomically per file)."""
    from safetensors.torch import save

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    atomic_write(directory / WEIGHTS_FILE, save(state, metadata={"format": "pt"}))
    atomic_write(directory / CONFIG_FILE, json.dumps(model.config.to_dict(), indent=2) + "\n")
    return directory
