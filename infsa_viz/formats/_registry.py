"""The model-format registry: each format is a ``(detect, load)`` pair its own module registers.

A format module defines a detector (does this path look like mine? answered from file names,
``config.json`` or the safetensors header, never from the weights) and a loader (path + options
→ our :class:`~infsa_viz.model.vit.VisionTransformer`), and registers them once::

    register_format(ModelFormat("my-format", detect=_detect, load=_load,
                                expects="a .myvit file", options=frozenset({"num_heads"})))

:func:`detect` and :func:`infsa_viz.formats.load_model` read :data:`FORMATS`, so a new format
is that module and its import in :mod:`infsa_viz.formats` (timm's ``_registry`` pattern), never
another ``elif``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import torch

from ..io import read_json
from ..model.files import CONFIG_FILE
from ..model.vit import VisionTransformer
from ..plugins import plugin_call, plugin_of
from ..preprocess import Preprocessing

__all__ = ["FORMATS", "Candidate", "LoadOptions", "ModelFormat", "detect", "get_format", "register_format"]

#: The options a format may read from :class:`LoadOptions` besides ``map_location``; a format
#: lists those it reads in :attr:`ModelFormat.options`, and :func:`~infsa_viz.formats.load_model`
#: refuses the others for it (they would be silently ignored).
FORMAT_OPTIONS = frozenset({"num_heads", "variant", "preprocessing"})


@dataclass(frozen=True)
class LoadOptions:
    """What a caller asked of a loader (the options a format does not record itself).

    Attributes:
        num_heads: heads per layer (state dicts do not record it).
        variant: the InfSA variant weights were trained with (official InfSA state dicts).
        preprocessing: what the weights expect of their input (state dicts record none).
        map_location: device for the weights.
    """

    num_heads: int | None = None
    variant: str | None = None
    preprocessing: Preprocessing | None = None
    map_location: str | torch.device = "cpu"


class Candidate:
    """A path being detected; what detectors read, each read at most once.

    Attributes:
        path: the path.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    @cached_property
    def is_dir(self) -> bool:
        return self.path.is_dir()

    @cached_property
    def config(self) -> Any:
        """A directory's parsed ``config.json``, or ``None`` without one (``ValueError`` if malformed)."""
        config = self.path / CONFIG_FILE
        return read_json(config) if self.is_dir and os.path.lexists(config) else None

    @cached_property
    def keys(self) -> frozenset[str]:
        """A ``.safetensors`` file's tensor names from its header (empty for other paths)."""
        from ._state import safetensors_keys

        if self.is_dir or self.path.suffix != ".safetensors":
            return frozenset()
        return frozenset(safetensors_keys(self.path))

    def found(self) -> str:
        """What the path is, for a message when no format claims it."""
        if self.is_dir:
            return f"model directory {str(self.path)!r} has no {CONFIG_FILE}" if self.config is None else \
                f"model directory {str(self.path)!r} has a {CONFIG_FILE} of no known format"
        if self.path.suffix == ".safetensors":
            return f"{self.path}: a state dict of no known ViT layout (first keys {sorted(self.keys)[:4]})"
        return (f"model {str(self.path)!r} is neither a model directory nor a .safetensors state dict "
                "(pickle checkpoints are refused)")


@dataclass(frozen=True)
class ModelFormat:
    """One model format.

    Attributes:
        name: the format's name (``load_model(..., format=name)``, ``PATH?format=name``).
        detect: ``Candidate → bool``: whether a path is of this format, without loading weights.
        load: ``(path, LoadOptions) → VisionTransformer``: the model, with ``config.source``
            recording the format; checks every size before building anything.
        expects: what a path of this format looks like, for messages.
        options: the :data:`FORMAT_OPTIONS` the loader reads; the others are refused for it.
        sample: ``folder → spec``: writes a small model of this format into an existing empty folder and
            returns what :func:`~infsa_viz.formats.load_model` takes for it (its path, with ``?options``
            where the format needs them). The conformance checks and the bad-input sweep read it, so a
            format registered with one is checked with no edit to them; ``None``: the checks name it.
    """

    name: str
    detect: Callable[[Candidate], bool]
    load: Callable[[Path, LoadOptions], VisionTransformer]
    expects: str
    options: frozenset[str] = field(default_factory=frozenset)
    sample: Callable[[Path], str] | None = None

    def __post_init__(self) -> None:
        unknown = set(self.options) - FORMAT_OPTIONS
        if unknown:
            raise ValueError(f"format {self.name!r}: options {sorted(unknown)} are unknown; expected a subset of "
                             f"{sorted(FORMAT_OPTIONS)}")


#: Every registered format by name, in detection order (the first whose ``detect`` says yes wins).
FORMATS: dict[str, ModelFormat] = {}


def register_format(model_format: ModelFormat, *, replace: bool = False) -> ModelFormat:
    """Add ``model_format`` to :data:`FORMATS` (after the others, for detection); returns it.

    Raises:
        ValueError: its name is taken (unless ``replace``).
    """
    if model_format.name in FORMATS and not replace:
        raise ValueError(f"format {model_format.name!r} is already registered; pass replace=True to replace it")
    FORMATS[model_format.name] = model_format
    return model_format


def get_format(name: str) -> ModelFormat:
    """The registered format ``name``; ``ValueError`` listing the known ones otherwise."""
    if name not in FORMATS:
        raise ValueError(f"format={name!r} is not a known model format; expected one of {list(FORMATS)}")
    return FORMATS[name]


def detect(path: str | Path) -> str:
    """The format of ``path`` (a name in :data:`FORMATS`), from its file names, ``config.json`` or
    safetensors header, without loading weights.

    Example:
        >>> detect("models/pure-infsa-vit4")
        'infsa-viz'

    Raises:
        ValueError: a missing path, a pickle file, or a path no format claims; the message names
            the path, what was found and the formats tried.
    """
    from ._state import PICKLE_SUFFIXES

    path = Path(path)
    if not path.exists():
        why = "is a broken symbolic link or a link loop" if os.path.lexists(path) else "does not exist"
        raise ValueError(f"model {str(path)!r} {why}")
    if path.suffix in PICKLE_SUFFIXES and not path.is_dir():
        raise ValueError(f"{path}: pickle checkpoints are refused (they can run code); save the state dict with "
                         "safetensors.torch.save_file and pass the .safetensors file")
    candidate = Candidate(path)
    for model_format in FORMATS.values():
        plugin = plugin_of(model_format.detect)
        if (model_format.detect(candidate) if plugin is None else
                plugin_call(plugin, f"model format {model_format.name!r}, its detect", model_format.detect, candidate)):
            return model_format.name
    tried = "; ".join(f"{f.name}: {f.expects}" for f in FORMATS.values())
    raise ValueError(f"{candidate.found()}; formats tried: {tried}")
