"""Read model weights safely: header first, finite values, verified checksum (no pickle, ever).

A ``.safetensors`` file starts with a JSON header naming every tensor's dtype and shape. We
compare it with what the model's config implies *before* building the model or reading a byte of
weights, so a config that asks for a huge model, or a file that does not fit its config, is
refused with one line instead of exhausting memory. Loaded tensors must be finite, and a model
card that records the weights' sha256 is verified.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Mapping

import torch
from torch import Tensor

__all__ = ["check_finite", "check_shapes", "file_sha256", "header_shapes", "load_weights"]

Shapes = Mapping[str, tuple[int, ...]]


def header_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    """Tensor name → shape from a safetensors header, without reading the tensors.

    Raises:
        ValueError: the file is missing or not a readable safetensors file.
    """
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: missing weights file")
    try:
        with safe_open(str(path), framework="pt") as handle:
            return {name: tuple(handle.get_slice(name).get_shape()) for name in handle.keys()}
    except (SafetensorError, OSError, ValueError) as err:
        raise ValueError(f"{path}: not a readable safetensors file ({err})") from None


def check_shapes(found: Shapes, expected: Shapes, *, source: str, against: str) -> None:
    """Raise ``ValueError`` unless ``found`` has exactly ``expected``'s names and shapes."""
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    if missing or unexpected:
        raise ValueError(f"{source}: weights do not match {against}: missing {missing[:5]}, unexpected {unexpected[:5]}")
    for name, shape in expected.items():  # in the model's order: the first mismatch a reader expects
        if tuple(found[name]) != tuple(shape):
            raise ValueError(f"{source}: tensor {name!r} has shape {tuple(found[name])}, {against} implies {tuple(shape)}")


def check_finite(state: Mapping[str, Tensor], *, source: str) -> None:
    """Raise ``ValueError`` naming the first tensor of ``state`` that holds NaN or ±Inf."""
    for name, tensor in state.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            raise ValueError(f"{source}: tensor {name!r} holds {bad} NaN/Inf value(s); the weights are damaged")


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_weights(path: str | Path, expected: Shapes, *, against: str, sha256: str | None = None,
                 map_location: str | torch.device = "cpu") -> dict[str, Tensor]:
    """Load a safetensors file whose header must match ``expected``; every tensor must be finite.

    Args:
        path: the ``.safetensors`` file.
        expected: tensor name → shape the model needs (checked on the header, before loading).
        against: what ``expected`` came from, for messages (e.g. ``"config.json"``).
        sha256: if given, the file's hex digest must equal it (from the model card).
        map_location: device of the returned tensors.

    Raises:
        ValueError: unreadable file, names or shapes that do not match, a checksum mismatch, or
            a NaN/Inf weight; the message names the file and the problem.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(path)
    check_shapes(header_shapes(path), expected, source=str(path), against=against)
    found = None if sha256 is None else file_sha256(path)
    if found is not None and found != sha256:
        raise ValueError(f"{path}: sha256 {found[:12]}… differs from the model card's {sha256[:12]}…; "
                         "the weights were changed or damaged after training")
    try:
        state = load_file(str(path), device=str(map_location))
    except (SafetensorError, OSError) as err:
        raise ValueError(f"{path}: not a readable safetensors file ({err})") from None
    check_finite(state, source=str(path))
    return state
