"""One loader for every model format: :func:`load_model`, over a registry of formats.

Built-in formats (:data:`FORMATS`, in detection order; each is one module registering a
``(detect, load)`` pair, see :mod:`infsa_viz.formats._registry`):

* ``infsa-viz``: a directory written by :func:`infsa_viz.model.files.save_model` (``config.json``
  without ``model_type`` + ``model.safetensors``); see :mod:`infsa_viz.formats.ours`;
* ``transformers``: a ``save_pretrained`` directory of ``ViTForImageClassification``,
  ``DeiTForImageClassification`` or ``DeiTForImageClassificationWithTeacher``
  (``config.json`` with ``model_type``, ``model.safetensors``, ``preprocessor_config.json``);
  see :mod:`infsa_viz.formats.hf`;
* ``timm``: a ``.safetensors`` timm ``VisionTransformer`` state dict (``patch_embed.proj``);
  see :mod:`infsa_viz.formats.timm`;
* ``torchvision`` / ``official-infsa``: a ``.safetensors`` torchvision ViT state dict, plain or
  with attention converted by the official InfSA code; see :mod:`infsa_viz.formats.official`.

A new format is one module that calls :func:`register_format` with a :class:`ModelFormat`, and
its import below (or anywhere before use): :func:`detect` and :func:`load_model` read the registry.

Every format becomes our :class:`~infsa_viz.model.vit.VisionTransformer` with our attention modules,
so capture, maps and spectral analysis work the same whatever attention kernel (eager, SDPA,
flash) the source framework used: we never hook the source model, we recompute from its weights.
Every reader checks every size against the file before it builds anything, and weights must be
floating point and finite. Options a format does not record (heads, InfSA variant) are keyword
arguments, or, on the command line, a query after the path:
``vit.safetensors?num_heads=12&variant=pure_infsa``. Pickle checkpoints are refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import torch

from ..model.attention import ATTENTION_REGISTRY, check_variant
from ..model.vit import VisionTransformer
from ..plugins import plugin_call, plugin_of
from ..preprocess import Preprocessing
from ._registry import FORMATS, Candidate, LoadOptions, ModelFormat, detect, get_format, register_format
from . import ours, hf, timm, official  # noqa: E402,F401,I001  (register the built-in formats, in detection order)
from . import hf_backbones  # noqa: E402,F401  (DINOv2 and CLIP readers of the transformers format)

__all__ = ["FORMATS", "OPTIONS", "Candidate", "LoadOptions", "ModelFormat", "describe_model", "detect",
           "load_model", "parse_model_spec", "register_format", "swap_attention"]

#: Options :func:`load_model` takes from a ``PATH?key=value&...`` spec, with their parsers.
OPTIONS: dict[str, Any] = {"num_heads": int, "variant": str, "convert_to": str, "rho_init": float, "format": str}


def parse_model_spec(spec: str | Path) -> tuple[str, dict[str, Any]]:
    """``"PATH?num_heads=12&variant=pure_infsa"`` → ``("PATH", {"num_heads": 12, "variant": "pure_infsa"})``.

    Raises:
        ValueError: an unknown option or a value of the wrong type.
    """
    text = str(spec)
    path, _, query = text.partition("?")
    options: dict[str, Any] = {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ValueError(f"model {text!r}: the options after '?' are not key=value pairs joined by '&'") from None
    for key, value in pairs:
        if key not in OPTIONS:
            raise ValueError(f"model {text!r}: unknown option {key!r}; expected options among {sorted(OPTIONS)}")
        try:
            options[key] = OPTIONS[key](value)
        except ValueError:
            raise ValueError(f"model {text!r}: {key}={value!r} is not a valid {OPTIONS[key].__name__}") from None
    return path, options


def swap_attention(model: VisionTransformer, variant: str, *, rho_init: float | None = None) -> VisionTransformer:
    """The same weights under another attention variant (e.g. softmax → pure InfSA, to fine-tune).

    q/k/v and output projections are shared by every variant. Going from softmax to an InfSA
    variant adds a fresh ``ρ`` (``rho_init``, default the config's); between InfSA variants the
    learned ``ρ`` is kept; going to softmax drops it. The new model is in eval mode.
    """
    check_variant(variant, name="variant")
    config = model.config
    if variant == config.attention and rho_init is None:
        return model
    changes: dict[str, Any] = {"attention": variant,
                               "source": {**(config.source or {}), "converted_from": config.attention}}
    if rho_init is not None:
        changes["rho_init"] = rho_init
    new = VisionTransformer(config.replace(**changes))
    keep_rho = ATTENTION_REGISTRY[variant].has_rho and ATTENTION_REGISTRY[config.attention].has_rho and rho_init is None
    state = {k: v for k, v in model.state_dict().items() if keep_rho or not k.endswith("rho_logit")}
    missing, unexpected = new.load_state_dict(state, strict=False)
    if unexpected or any(not k.endswith("rho_logit") for k in missing):  # pragma: no cover - same architecture
        raise RuntimeError(f"swap_attention: missing {missing}, unexpected {unexpected}")
    return new.eval()


def load_model(
    path: str | Path,
    *,
    num_heads: int | None = None,
    variant: str | None = None,
    convert_to: str | None = None,
    rho_init: float | None = None,
    preprocessing: Preprocessing | None = None,
    format: str | None = None,
    map_location: str | torch.device = "cpu",
) -> VisionTransformer:
    """Load a model of any supported format as our :class:`~infsa_viz.model.vit.VisionTransformer`, in eval mode.

    Args:
        path: a model directory or a ``.safetensors`` state dict; a ``?key=value&...`` suffix
            sets the options below (see :func:`parse_model_spec`); keyword arguments win.
        num_heads: heads per layer, for state dicts (timm, torchvision, official InfSA).
        variant: the attention variant an official-InfSA state dict was trained with.
        convert_to: convert the model to this attention variant after loading, keeping its weights
            (see :func:`swap_attention`).
        rho_init: ``ρ`` of InfSA layers a swap creates (state-dict imports: of new layers).
        preprocessing: what a state dict expects of its input (default: its framework's usual
            ImageNet preprocessing); directories carry their own.
        format: force a format of :data:`FORMATS` instead of detecting it (:func:`detect`).
        map_location: device for the weights.

    Raises:
        ValueError: a missing or unreadable path, an unknown format, a missing option or one the
            format does not read, weights that do not fit, are not floating point or not finite;
            the message names the file and what to pass.

    Example:
        >>> model = load_model("google-vit-dir")               # transformers save_pretrained
        >>> model = load_model("vit.safetensors?num_heads=12")  # a timm state dict
    """
    text, spec_options = parse_model_spec(path)
    given = {"num_heads": num_heads, "variant": variant, "convert_to": convert_to, "rho_init": rho_init,
             "format": format, "preprocessing": preprocessing}
    options = {**spec_options, **{k: v for k, v in given.items() if v is not None}}
    path = Path(text)
    kind = options.get("format") or detect(path)
    model_format = get_format(kind)
    refused = sorted({"num_heads", "variant", "preprocessing"} & set(options) - model_format.options)
    if refused:
        readers = [f.name for f in FORMATS.values() if set(refused) <= f.options]
        raise ValueError(f"model {text!r}: {refused} apply to state-dict files ({', '.join(readers)}); a {kind} "
                         "model records them itself")
    load_options = LoadOptions(num_heads=options.get("num_heads"), variant=options.get("variant"),
                               preprocessing=options.get("preprocessing"), map_location=map_location)
    plugin = plugin_of(model_format.load)
    model = model_format.load(path, load_options) if plugin is None else \
        plugin_call(plugin, f"model format {kind!r}", model_format.load, path, load_options)
    if options.get("convert_to") is not None or options.get("rho_init") is not None:
        model = swap_attention(model, options.get("convert_to") or model.config.attention,
                               rho_init=options.get("rho_init"))
    model.origin = str(path)
    return model.to(map_location).eval()


def describe_model(model: VisionTransformer) -> dict[str, Any]:
    """What was detected and built: format, variant, grid, classes, preprocessing (JSON-able)."""
    config = model.config
    names = config.class_names
    return {
        "format": (config.source or {}).get("format", "infsa-viz"),
        "source": config.source,
        "variant": config.attention,
        "rho": model.rho_values(),
        "image_size": config.img_size,
        "patch_size": config.patch_size,
        "grid": list(config.grid),
        "prefix_tokens": config.num_prefix_tokens,
        "register_tokens": config.register_tokens,
        "pool": config.pool,
        "output": ("embedding" if config.num_classes == 0 else
                   "image-text similarities (zero-shot)" if config.head == "cosine" else "logits"),
        "distillation_head": config.distillation_head,
        "depth": config.depth,
        "heads": config.num_heads,
        "embed_dim": config.embed_dim,
        "num_classes": config.num_classes,
        "class_names": None if names is None else (list(names) if len(names) <= 20 else
                                                   [*names[:10], f"... {len(names) - 20} more ...", *names[-10:]]),
        "preprocessing": config.preprocessing.to_dict(),
    }
