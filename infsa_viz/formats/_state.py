"""Shared by the format readers: safetensors reading (never pickle) and strict state loading."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import Tensor

from ..vit import VisionTransformer

__all__ = ["fuse_qkv", "load_state", "read_safetensors", "safetensors_keys"]


def read_safetensors(path: str | Path, *, map_location: str | torch.device = "cpu") -> dict[str, Tensor]:
    """All tensors of one ``.safetensors`` file, or of a sharded ``*.safetensors.index.json``.

    Raises:
        ValueError: a missing or unreadable file, or a pickle file (``.bin``, ``.pt``, ``.pth``).
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(path)
    if path.suffix in (".bin", ".pt", ".pth", ".ckpt", ".pkl"):
        raise ValueError(f"{path}: pickle checkpoints are refused (they can run code); save the state dict with "
                         "safetensors.torch.save_file and pass the .safetensors file")
    if path.name.endswith(".safetensors.index.json"):
        try:
            weight_map = json.loads(path.read_text())["weight_map"]
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{path}: not a safetensors index with a weight_map ({err})") from None
        state: dict[str, Tensor] = {}
        for shard in sorted(set(weight_map.values())):
            state.update(read_safetensors(path.parent / shard, map_location=map_location))
        return state
    if not path.is_file():
        raise ValueError(f"{path}: missing weights file")
    try:
        return load_file(str(path), device=str(map_location))
    except (SafetensorError, OSError) as err:
        raise ValueError(f"{path}: not a readable safetensors file ({err})") from None


def safetensors_keys(path: str | Path) -> list[str]:
    """The tensor names of a ``.safetensors`` file, read from its header only."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            return list(handle.keys())
    except (SafetensorError, OSError) as err:
        raise ValueError(f"{path}: not a readable safetensors file ({err})") from None


def load_state(model: VisionTransformer, state: Mapping[str, Tensor], *, source: str,
               optional: tuple[str, ...] = ()) -> VisionTransformer:
    """Load ``state`` into ``model`` strictly, in eval mode; keys ending in ``optional`` may be absent.

    Raises:
        ValueError: naming ``source``, the missing or unexpected keys, or the first shape that differs.
    """
    expected = model.state_dict()
    missing = sorted(k for k in set(expected) - set(state) if not k.endswith(optional or ("\0",)))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise ValueError(f"{source}: weights do not fit the model: missing {missing[:5]}, unexpected {unexpected[:5]}")
    for name, tensor in state.items():
        if tensor.shape != expected[name].shape:
            raise ValueError(f"{source}: tensor {name!r} has shape {tuple(tensor.shape)}, "
                             f"the config implies {tuple(expected[name].shape)}")
    model.load_state_dict(dict(state), strict=False)
    return model.eval()



def fuse_qkv(ours: dict[str, Tensor], parts: Mapping[tuple[int, str], Mapping[str, Tensor]], names: tuple[str, str, str],
             unknown: list[str], *, source: str, what: str) -> None:
    """Refuse ``unknown`` keys, then stack each layer's separate q, k, v (named ``names``) into our
    fused ``blocks.i.attn.qkv`` (``(3·C', C')`` weights, ``(3·C',)`` biases), in place.

    Raises:
        ValueError: keys the converter does not read, or a layer missing one of q, k, v.
    """
    if unknown:
        raise ValueError(f"{source}: weights this converter does not read: {sorted(unknown)[:5]}")
    for (layer, param), found in parts.items():
        if set(found) != set(names):
            raise ValueError(f"{source}: layer {layer} has {sorted(found)} {param} {what}; expected {', '.join(names)}")
        ours[f"blocks.{layer}.attn.qkv.{param}"] = torch.cat([found[n] for n in names])
