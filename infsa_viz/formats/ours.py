"""Our own format: a directory written by :func:`infsa_viz.model.files.save_model`.

``config.json`` (a :class:`~infsa_viz.model.config.ViTConfig`, no transformers ``model_type``) and
``model.safetensors``; optionally ``card.json`` (written by training) recording the weights' sha256,
the variant and the recipe's model: a ``config.json`` that contradicts them (an attention variant,
a depth, a normalisation edited by hand) is refused, since the weights were trained as the card says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..io import read_json
from ..model.config import ViTConfig
from ..model.files import CONFIG_FILE, WEIGHTS_FILE
from ..model.vit import VisionTransformer
from ..weights import header_shapes, load_weights
from ._registry import Candidate, LoadOptions, ModelFormat, register_format
from ._state import check_fits

__all__ = ["load_directory"]


def load_directory(directory: str | Path, *, map_location: str | torch.device = "cpu") -> VisionTransformer:
    """Load a model saved by :func:`~infsa_viz.model.files.save_model` (no pickle), in eval mode.

    The weights' header is checked against the config before the model is built (a config asking
    for a huge model is refused without allocating it); every weight must be floating point and
    finite; if the directory's ``card.json`` records ``weights_sha256``, the file must match it.

    Raises:
        ValueError: if the directory, config or weights are missing, damaged or do not match; the
            message names the file and the problem.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"model directory {str(directory)!r} does not exist or is not a directory")
    config = ViTConfig.from_dict(read_json(directory / CONFIG_FILE), source=str(directory / CONFIG_FILE))
    weights = directory / WEIGHTS_FILE
    expected = check_fits(config, header_shapes(weights), str(weights))
    card = directory / "card.json"
    recorded = read_json(card) if card.is_file() else {}
    sha256 = recorded.get("weights_sha256") if isinstance(recorded, dict) else None
    if sha256 is not None and not isinstance(sha256, str):
        raise ValueError(f"{card}: weights_sha256={sha256!r} must be a hex string")
    if isinstance(recorded, dict):
        check_card(config, recorded, config_path=directory / CONFIG_FILE, card_path=card)
    state = load_weights(weights, expected, against=CONFIG_FILE, sha256=sha256, map_location=map_location)
    model = VisionTransformer(config)
    model.load_state_dict(state)
    model.origin = str(directory)
    return model.eval()


#: Config fields a card may disagree with: where the weights came from, and the classes' names.
_INFORMATIONAL = ("source", "class_names")


def check_card(config: ViTConfig, card: dict[str, Any], *, config_path: Path, card_path: Path) -> None:
    """Refuse a config that contradicts its model card: the card's ``variant``, or any field of its
    ``recipe.model`` (architecture and preprocessing) but :data:`_INFORMATIONAL`.

    Raises:
        ValueError: naming the fields, the config's values and the card's.
    """
    found: dict[str, str] = {}
    variant = card.get("variant")
    if variant is not None and variant != config.attention:
        found["attention"] = f"attention={config.attention!r} (card variant {variant!r})"
    recipe = card.get("recipe")
    trained = recipe.get("model") if isinstance(recipe, dict) else None
    if isinstance(trained, dict):
        expected = ViTConfig.from_dict(trained, source=f"{card_path}: recipe.model").to_dict()
        given = config.to_dict()
        for key in expected:
            if key not in _INFORMATIONAL and given[key] != expected[key]:
                found.setdefault(key, f"{key}={given[key]!r} (card {expected[key]!r})")
    if found:
        raise ValueError(f"{config_path}: contradicts {card_path.name}, which records what the weights were trained "
                         f"as: {', '.join(found.values())}; restore config.json or remove the card")


def _detect(candidate: Candidate) -> bool:
    """A directory with a ``config.json`` that is not a transformers one (no ``model_type``)."""
    config = candidate.config
    return candidate.is_dir and config is not None and not (isinstance(config, dict) and "model_type" in config)


def _load(path: Path, options: LoadOptions) -> VisionTransformer:
    return load_directory(path, map_location=options.map_location)


def _sample(folder: Path) -> str:
    from ..model.files import save_model
    from ._sample import sample_model

    return str(save_model(sample_model(), folder / "model"))


FORMAT = register_format(ModelFormat("infsa-viz", detect=_detect, load=_load, sample=_sample,
                                     expects=f"a directory of {CONFIG_FILE} + {WEIGHTS_FILE} written by save_model"))
