"""Shared by the format readers: safetensors reading (never pickle) and checks before building.

Every reader follows one order: read the tensors (bounded by the file's size; the header is
checked against the file first, see :func:`infsa_viz.weights.read_header`), convert their names,
derive a :class:`~infsa_viz.model.config.ViTConfig`, then :func:`check_fits` compares every name and shape
with what that config implies, computed on the meta device, *before* a module is built. A file
that declares a huge width, a block index far beyond the others or thousands of zero-size blocks
is refused there with one line instead of building a model it cannot fill.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import torch
from torch import Tensor

from ..io import read_json
from ..model.config import ViTConfig
from ..model.files import CONFIG_FILE
from ..model.vit import VisionTransformer, state_shapes
from ..weights import check_dtypes, check_finite, check_fits_memory, read_header

__all__ = ["PICKLE_SUFFIXES", "block_count", "check_fits", "flat_conv", "fuse_qkv", "load_state",
           "read_safetensors", "require", "safetensors_keys"]

#: File suffixes of pickle checkpoints, refused (loading them can run code).
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
INDEX_SUFFIX = ".safetensors.index.json"


def _index_shards(path: Path) -> list[Path]:
    """The shard files a ``*.safetensors.index.json`` names: plain ``.safetensors`` names beside it."""
    index = read_json(path)
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise ValueError(f"{path}: weight_map is missing or not an object of tensor name → shard file name")
    shards = sorted(set(weight_map.values()))
    for shard in shards:
        if Path(shard).name != shard or not shard.endswith(".safetensors") or shard.endswith(INDEX_SUFFIX):
            raise ValueError(f"{path}: weight_map names shard {shard!r}; expected a .safetensors file name in "
                             "the same folder (no paths, no index files)")
    return [path.parent / shard for shard in shards]


def read_safetensors(path: str | Path, *, map_location: str | torch.device = "cpu") -> dict[str, Tensor]:
    """All tensors of one ``.safetensors`` file, or of a sharded ``*.safetensors.index.json``.

    Each file's header is read and checked first: a tensor that is not floating point is refused
    (named) before anything is loaded.

    Raises:
        ValueError: a missing or unreadable file, a non-float tensor, an index naming anything but
            shard files beside it, or a pickle file (``.bin``, ``.pt``, ``.pth``).
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(path)
    if path.suffix in PICKLE_SUFFIXES:
        raise ValueError(f"{path}: pickle checkpoints are refused (they can run code); save the state dict with "
                         "safetensors.torch.save_file and pass the .safetensors file")
    if path.name.endswith(INDEX_SUFFIX):
        state: dict[str, Tensor] = {}
        for shard in _index_shards(path):
            state.update(read_safetensors(shard, map_location=map_location))
        return state
    check_dtypes({name: dtype for name, (dtype, _) in read_header(path).items()}, source=str(path))
    check_fits_memory(path)
    try:
        state = load_file(str(path), device=str(map_location))
    except (SafetensorError, OSError) as err:
        raise ValueError(f"{path}: not a readable safetensors file ({err})") from None
    check_finite(state, source=str(path))
    return state


def safetensors_keys(path: str | Path) -> list[str]:
    """The tensor names of a ``.safetensors`` file, read from its header only."""
    return list(read_header(path))


def require(state: Mapping[str, Tensor], key: str, source: str, *, dims: int | None = None,
            what: str = "a ViT") -> Tensor:
    """``state[key]``, or ``ValueError`` naming ``source``, the key and what was expected."""
    if key not in state:
        raise ValueError(f"{source}: no tensor {key!r}; expected it in {what}")
    tensor = state[key]
    if dims is not None and tensor.dim() != dims:
        raise ValueError(f"{source}: tensor {key!r} has shape {tuple(tensor.shape)}; expected {dims} dimensions")
    if 0 in tensor.shape:
        raise ValueError(f"{source}: tensor {key!r} has shape {tuple(tensor.shape)}; expected no zero-size dimension")
    return tensor


def block_count(names: Iterable[str], pattern: str, source: str) -> int:
    """The number of transformer blocks that names matching ``pattern`` (group 1: the index) hold.

    Raises:
        ValueError: no block, or indices that are not ``0 .. n-1`` (a gap, or an index far beyond
            the others): the message names the index.
    """
    regex = re.compile(pattern)
    indices = {int(m.group(1)) for name in names if (m := regex.match(name))}
    if not indices:
        raise ValueError(f"{source}: no transformer block (no tensor matching {pattern!r}); expected at least one")
    if max(indices) >= len(indices):
        missing = min(set(range(len(indices))) - indices)
        raise ValueError(f"{source}: block index {max(indices)} with {len(indices)} blocks (block {missing} is "
                         f"missing); expected blocks 0..{len(indices) - 1}")
    return len(indices)


def check_fits(config: ViTConfig, shapes: Mapping[str, tuple[int, ...]], source: str, *,
               against: str = CONFIG_FILE, optional: tuple[str, ...] = ()) -> dict[str, tuple[int, ...]]:
    """Check a config against the weights' names and shapes (our names) before the model is built.

    The depth is compared first, from the names alone (block indices must be ``0 .. depth-1``),
    then every name (missing and unexpected ones) and every shape against one block and the
    top-level tensors computed on the meta device, so the work is proportional to the file, not
    to the depth the config claims, and nothing of the config's size is allocated.

    Args:
        config: the architecture the weights claim.
        shapes: tensor name → shape of the weights (our names).
        source: the weights file, for messages.
        against: what ``config`` came from, for messages.
        optional: name endings that may be absent from ``shapes`` (e.g. ``rho_logit``).

    Returns:
        The shapes the config implies (:func:`~infsa_viz.model.vit.state_shapes`).

    Raises:
        ValueError: naming ``source``, the depth, the block index, the names or the first tensor
            that differs.
    """
    blocks = {name.split(".")[1] for name in shapes if name.startswith("blocks.")}
    if len(blocks) != config.depth:
        raise ValueError(f"{source}: {against} asks for depth={config.depth}, the weights hold {len(blocks)} "
                         "blocks; the config does not describe these weights")
    block_count(shapes, r"^blocks\.(\d+)\.", source)
    template = state_shapes(config.replace(depth=1))
    block = {name[len("blocks.0."):]: shape for name, shape in template.items() if name.startswith("blocks.0.")}
    top = {name: shape for name, shape in template.items() if not name.startswith("blocks.")}
    needed = lambda names: [n for n in names if not (optional and n.endswith(optional))]  # noqa: E731
    found: dict[int, set[str]] = {}
    unexpected, expected_of = [], {}
    for name in shapes:
        if name.startswith("blocks.") and name.count(".") >= 2 and name.split(".")[1].isdecimal():
            _, index, rest = name.split(".", 2)
            found.setdefault(int(index), set()).add(rest)
            if rest not in block:
                unexpected.append(name)
            expected_of[name] = block.get(rest)
        else:
            if name not in top:
                unexpected.append(name)
            expected_of[name] = top.get(name)
    missing = needed(n for n in top if n not in shapes)
    for index in range(config.depth):
        if len(missing) >= 5:
            break
        missing += needed(f"blocks.{index}.{rest}" for rest in block if rest not in found.get(index, ()))
    if missing or unexpected:
        raise ValueError(f"{source}: weights do not match {against}: missing {missing[:5]}, "
                         f"unexpected {sorted(unexpected)[:5]}")
    for name in template:  # the first mismatch in the model's order, block by block
        names = [f"blocks.{i}.{name[9:]}" for i in range(config.depth)] if name.startswith("blocks.0.") else [name]
        for key in names:
            if key in shapes and tuple(shapes[key]) != tuple(expected_of[key]):
                raise ValueError(f"{source}: tensor {key!r} has shape {tuple(shapes[key])}, {against} implies "
                                 f"{tuple(expected_of[key])}")
    return state_shapes(config)


def load_state(config: ViTConfig, state: Mapping[str, Tensor], *, source: str, against: str,
               optional: tuple[str, ...] = ()) -> VisionTransformer:
    """Check ``state`` against ``config`` (:func:`check_fits`), then build the model and load it, in eval mode.

    Raises:
        ValueError: naming ``source``: missing or unexpected keys, or the first shape that differs.
    """
    check_fits(config, {k: tuple(v.shape) for k, v in state.items()}, source, against=against, optional=optional)
    model = VisionTransformer(config)
    model.load_state_dict(dict(state), strict=False)
    return model.eval()


def flat_conv(tensor: Tensor) -> Tensor:
    """A patch convolution's weight ``(C', C, p, p)`` → our linear weight ``(C', C·p·p)`` (same (C, y, x)
    order); a tensor of another rank is returned as it is, for :func:`check_fits` to name."""
    return tensor.flatten(1) if tensor.dim() == 4 else tensor


def fuse_qkv(ours: dict[str, Tensor], parts: Mapping[tuple[int, str], Mapping[str, Tensor]], names: tuple[str, str, str],
             unknown: list[str], *, source: str, what: str) -> None:
    """Refuse ``unknown`` keys, then stack each layer's separate q, k, v (named ``names``) into our
    fused ``blocks.i.attn.qkv`` (``(3·C', C')`` weights, ``(3·C',)`` biases), in place.

    Raises:
        ValueError: keys the converter does not read, or a layer missing one of q, k, v, or q, k, v
            of different shapes.
    """
    if unknown:
        raise ValueError(f"{source}: weights this converter does not read: {sorted(unknown)[:5]}")
    for (layer, param), found in parts.items():
        if set(found) != set(names):
            raise ValueError(f"{source}: layer {layer} has {sorted(found)} {param} {what}; expected {', '.join(names)}")
        shapes = {tuple(found[n].shape) for n in names}
        if len(shapes) != 1:
            raise ValueError(f"{source}: layer {layer}'s {', '.join(names)} {param} {what} have shapes "
                             f"{[tuple(found[n].shape) for n in names]}; expected one shape")
        ours[f"blocks.{layer}.attn.qkv.{param}"] = torch.cat([found[n] for n in names])
