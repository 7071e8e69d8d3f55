"""Read model weights safely: header first, finite values, verified checksum (no pickle, ever).

A ``.safetensors`` file starts with a JSON header naming every tensor's dtype and shape. We
compare it with what the model's config implies *before* building the model or reading a byte of
weights, so a config that asks for a huge model, or a file that does not fit its config, is
refused with one line instead of exhausting memory. Loaded tensors must be finite, and a model
card that records the weights' sha256 is verified.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Mapping

import torch
from torch import Tensor

__all__ = ["FLOAT_DTYPES", "MAX_HEADER_BYTES", "check_dtypes", "check_finite", "check_fits_memory", "check_floating",
           "check_shapes", "file_sha256", "header_shapes", "load_weights", "read_header"]

Shapes = Mapping[str, tuple[int, ...]]


#: safetensors dtypes of weights we read (cast to the model's float32 on load); any other dtype
#: (bool, integers, complex) is refused, naming the tensor.
FLOAT_DTYPES: dict[str, int] = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1}
#: Bytes per element of the other dtypes the format defines (to check a header's offsets).
_OTHER_DTYPES: dict[str, int] = {"BOOL": 1, "U8": 1, "I8": 1, "I16": 2, "U16": 2, "I32": 4, "U32": 4, "I64": 8,
                                 "U64": 8, "C64": 8, "C128": 16}
#: The largest safetensors header read (JSON bytes): ~40,000 tensors' worth; a big ViT has ~200.
MAX_HEADER_BYTES = 16 << 20


def read_header(path: str | Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Tensor name → ``(dtype, shape)`` from a safetensors header, without reading the tensors.

    The header is checked as the format defines it (an 8-byte length, a JSON object of
    ``{"dtype", "shape", "data_offsets"}`` entries) and against the file: every tensor's byte
    range must hold exactly ``prod(shape) × itemsize`` bytes inside the file, so a header that
    declares more than the file holds is refused here, before anything is allocated.

    Raises:
        ValueError: a missing file, a header over :data:`MAX_HEADER_BYTES`, malformed JSON, an
            entry that is not a tensor, or sizes that disagree with the file; the message names
            the file and the tensor.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: missing weights file")
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            head = handle.read(8)
            length = int.from_bytes(head, "little") if len(head) == 8 else -1
            if not 2 <= length <= min(MAX_HEADER_BYTES, size - 8):
                raise ValueError(f"{path}: not a readable safetensors file (header length {length:,} bytes; expected "
                                 f"2..{min(MAX_HEADER_BYTES, max(size - 8, 0)):,}, the file size and the "
                                 f"{MAX_HEADER_BYTES:,}-byte limit)")
            text = handle.read(length)
    except OSError as err:
        raise ValueError(f"{path}: cannot be read ({err.strerror or err})") from None
    try:
        header = json.loads(text)
    except (ValueError, RecursionError) as err:
        why = "nested too deeply" if isinstance(err, RecursionError) else str(err)[:80]
        raise ValueError(f"{path}: not a readable safetensors file (header is not valid JSON: {why})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: not a readable safetensors file (header is not a JSON object)")
    data_bytes = size - 8 - length
    out: dict[str, tuple[str, tuple[int, ...]]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        out[name] = _entry(path, name, entry, data_bytes)
    return out


def _entry(path: Path, name: str, entry: Any, data_bytes: int) -> tuple[str, tuple[int, ...]]:
    """One header entry, checked: ``(dtype, shape)``."""
    def bad(why: str) -> ValueError:
        return ValueError(f"{path}: not a readable safetensors file (tensor {name!r}: {why})")

    if not isinstance(entry, dict):
        raise bad("expected an object with dtype, shape and data_offsets")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    itemsize = FLOAT_DTYPES.get(dtype) or _OTHER_DTYPES.get(dtype) if isinstance(dtype, str) else None
    if itemsize is None:
        raise bad(f"dtype {dtype!r} is not a safetensors dtype")
    ints = lambda v: isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0  # noqa: E731
                                                for x in v)
    if not ints(shape) or len(shape) > 8:
        raise bad(f"shape {shape!r} is not a list of at most 8 non-negative integers")
    if not ints(offsets) or len(offsets) != 2 or not offsets[0] <= offsets[1] <= data_bytes:
        raise bad(f"data_offsets {offsets!r} do not lie within the file's {data_bytes:,} data bytes")
    declared = math.prod(shape) * itemsize
    if declared != offsets[1] - offsets[0]:
        raise bad(f"shape {tuple(shape)} of {dtype} needs {declared:,} bytes, the file holds "
                  f"{offsets[1] - offsets[0]:,}")
    return dtype, tuple(shape)


def check_dtypes(dtypes: Mapping[str, str], *, source: str) -> None:
    """Raise ``ValueError`` naming the first tensor whose safetensors dtype is not floating point."""
    for name, dtype in dtypes.items():
        if dtype not in FLOAT_DTYPES:
            raise ValueError(f"{source}: tensor {name!r} has dtype {dtype}; expected floating-point weights "
                             f"({', '.join(FLOAT_DTYPES)})")


def header_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    """Tensor name → shape from a safetensors header, without reading the tensors
    (see :func:`read_header`; every tensor must be floating point).

    Raises:
        ValueError: the file is missing, not a readable safetensors file, or holds a tensor that
            is not floating point (named).
    """
    header = read_header(path)
    check_dtypes({name: dtype for name, (dtype, _) in header.items()}, source=str(path))
    return {name: shape for name, (_, shape) in header.items()}


def check_shapes(found: Shapes, expected: Shapes, *, source: str, against: str) -> None:
    """Raise ``ValueError`` unless ``found`` has exactly ``expected``'s names and shapes."""
    missing = sorted(set(expected) - set(found))
    unexpected = sorted(set(found) - set(expected))
    if missing or unexpected:
        raise ValueError(f"{source}: weights do not match {against}: missing {missing[:5]}, unexpected {unexpected[:5]}")
    for name, shape in expected.items():  # in the model's order: the first mismatch a reader expects
        if tuple(found[name]) != tuple(shape):
            raise ValueError(f"{source}: tensor {name!r} has shape {tuple(found[name])}, {against} implies {tuple(shape)}")


def check_floating(state: Mapping[str, Tensor], *, source: str) -> None:
    """Raise ``ValueError`` naming the first tensor of ``state`` that is not floating point (bool,
    integer and complex weights would be cast into a float model meaninglessly)."""
    for name, tensor in state.items():
        if not tensor.is_floating_point():
            raise ValueError(f"{source}: tensor {name!r} has dtype {str(tensor.dtype).removeprefix('torch.')}; "
                             "expected floating-point weights")


def check_finite(state: Mapping[str, Tensor], *, source: str) -> None:
    """Raise ``ValueError`` naming the first tensor of ``state`` that holds NaN or ±Inf."""
    for name, tensor in state.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            raise ValueError(f"{source}: tensor {name!r} holds {bad} NaN/Inf value(s); the weights are damaged")


def check_fits_memory(path: str | Path, *, extra: float = 0.0, budget: float | None = None) -> None:
    """Refuse weights that cannot be loaded in the memory this process can still get, from the header alone.

    Loading holds the tensors as stored (their bytes, read from the header) and the model's float32
    copy of them (4 bytes per element), plus ``extra`` bytes the caller's job needs (an estimate).

    Args:
        path: a ``.safetensors`` file (its header already checked against the file by :func:`read_header`).
        extra: bytes the job needs beside the weights (default 0).
        budget: bytes available (default :func:`infsa_viz.estimate.available_memory`).

    Raises:
        ValueError: naming the file, the estimate, what it holds and the memory available.
    """
    from .estimate import available_memory, format_bytes

    entries = read_header(path).values()
    sizes = {**FLOAT_DTYPES, **_OTHER_DTYPES}
    elements = [math.prod(shape) for _, shape in entries]
    stored = float(sum(n * sizes.get(dtype, 4) for n, (dtype, _) in zip(elements, entries)))
    need = stored + 4.0 * sum(elements) + float(extra)
    available = available_memory() if budget is None else float(budget)
    if need > available:
        raise ValueError(f"{path}: loading needs about {format_bytes(need)} ({format_bytes(stored)} of weights as "
                         f"stored, the float32 model{' and the job' if extra else ''}), over the "
                         f"{format_bytes(available)} of memory available; free memory or use a machine with more")


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
    check_fits_memory(path)
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
