"""transformers ``save_pretrained`` directories (ViT, DeiT; DINOv2 and CLIP via hf_backbones) → our ViT.

Reads a ``save_pretrained`` directory as files: ``config.json`` (JSON), ``model.safetensors``
(or a sharded ``model.safetensors.index.json``) and, when present, ``preprocessor_config.json``.
transformers itself is never imported, so the toolkit reads these models without it; the tests
build the models with transformers and check that the converted model computes the same logits
and the same attention (Dosovitskiy et al. 2021, ViT; Touvron et al. 2021, DeiT).

Weights map one to one (query/key/value are concatenated into our fused ``qkv``; the patch
convolution becomes our linear patch embedding); what transformers' config says about the
architecture (LayerNorm ε, q/k/v bias, GELU form, DeiT's distillation token and head) becomes
fields of :class:`~infsa_viz.model.config.ViTConfig`; ``id2label`` becomes ``class_names``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import Tensor

from ..io import read_json
from ..model.config import MAX_WIDTH, ViTConfig
from ..model.vit import VisionTransformer
from ..preprocess import Preprocessing
from ._registry import Candidate, ModelFormat, register_format
from ._state import flat_conv, fuse_qkv, load_state, read_safetensors
from .hf_processor import PREPROCESSOR_FILE, preprocessing_from_hf, square_size

__all__ = ["ARCHITECTURES", "PREPROCESSOR_FILE", "READERS", "HFArchitecture", "activation", "eps_of",
           "from_transformers", "int_of", "is_transformers_dir", "preprocessing_from_hf", "square_size"]

logger = logging.getLogger(__name__)

#: transformers classes read here → (weights prefix, distillation token, distillation head).
ARCHITECTURES: dict[str, tuple[str, bool, bool]] = {
    "ViTForImageClassification": ("vit", False, False),
    "DeiTForImageClassification": ("deit", True, False),
    "DeiTForImageClassificationWithTeacher": ("deit", True, True),
}
_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "quick_gelu": "quick_gelu"}


def _detect(candidate: Candidate) -> bool:
    """A directory whose ``config.json`` carries transformers' ``model_type``."""
    return candidate.is_dir and isinstance(candidate.config, dict) and "model_type" in candidate.config


def is_transformers_dir(directory: Path) -> bool:
    """A directory whose ``config.json`` carries transformers' ``model_type``."""
    return _detect(Candidate(Path(directory)))


def _int(hf: dict[str, Any], key: str, default: int, source: str) -> int:
    value = hf.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WIDTH:
        raise ValueError(f"{source}: {key}={value!r} is invalid; expected an integer from 1 to {MAX_WIDTH:,}")
    return value


def _eps(hf: dict[str, Any], key: str, default: float, source: str) -> float:
    value = hf.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(f"{source}: {key}={value!r} is invalid; expected a number in (0, 1)")
    return float(value)


def _architecture(config: dict[str, Any], state_keys: set[str], source: str) -> str:
    listed = config.get("architectures") or []
    if not isinstance(listed, list) or not all(isinstance(a, str) for a in listed):
        raise ValueError(f"{source}: architectures={listed!r} is invalid; expected a list of class names")
    names = [a for a in listed if a in ARCHITECTURES]
    if names:
        return names[0]
    model_type = config.get("model_type")
    if not isinstance(model_type, str):
        raise ValueError(f"{source}: model_type={model_type!r} is invalid; expected a string such as 'vit'")
    if model_type == "deit" and "cls_classifier.weight" in state_keys:
        return "DeiTForImageClassificationWithTeacher"
    if model_type in ("vit", "deit") and "classifier.weight" in state_keys:
        return "ViTForImageClassification" if model_type == "vit" else "DeiTForImageClassification"
    raise ValueError(f"{source}: model_type={model_type!r}, architectures={config.get('architectures')!r} is not "
                     f"an image classifier this toolkit reads; expected one of {sorted(ARCHITECTURES)}")


def _class_names(config: dict[str, Any], num_classes: int) -> tuple[str, ...] | None:
    id2label = config.get("id2label")
    if not isinstance(id2label, dict):
        return None
    try:
        names = {int(k): str(v) for k, v in id2label.items()}
    except ValueError:
        return None
    return tuple(names[i] for i in range(num_classes)) if set(names) == set(range(num_classes)) else None


_LAYER = re.compile(r"^(?P<p>vit|deit)\.encoder\.layer\.(?P<i>\d+)\.(?P<rest>.+)$")
_LAYER_KEYS = {
    "layernorm_before": "norm1", "layernorm_after": "norm2", "attention.output.dense": "attn.proj",
    "intermediate.dense": "mlp.fc1", "output.dense": "mlp.fc2",
}
_TOP_KEYS = {
    "embeddings.cls_token": "cls_token", "embeddings.distillation_token": "dist_token",
    "embeddings.position_embeddings": "pos_embed", "embeddings.patch_embeddings.projection.bias": "patch_embed.proj.bias",
    "layernorm.weight": "norm.weight", "layernorm.bias": "norm.bias",
}
_HEADS = {"classifier": "head", "cls_classifier": "head", "distillation_classifier": "head_dist"}


def convert_state(state: dict[str, Tensor], prefix: str, source: str) -> dict[str, Tensor]:
    """transformers' ViT/DeiT weight names (as ``save_pretrained`` writes them) → ours."""
    ours: dict[str, Tensor] = {}
    qkv: dict[tuple[int, str], dict[str, Tensor]] = {}
    unknown = []
    for key, tensor in state.items():
        head, _, param = key.rpartition(".")
        if head in _HEADS:
            ours[f"{_HEADS[head]}.{param}"] = tensor
        elif key.startswith(prefix + ".") and key[len(prefix) + 1:] in _TOP_KEYS:
            ours[_TOP_KEYS[key[len(prefix) + 1:]]] = tensor
        elif key == f"{prefix}.embeddings.patch_embeddings.projection.weight":
            ours["patch_embed.proj.weight"] = flat_conv(tensor)  # (C', C, p, p) → (C', C·p·p)
        elif (m := _LAYER.match(key)) and m["p"] == prefix:
            layer, rest = int(m["i"]), m["rest"]
            module, _, param = rest.rpartition(".")
            if module in ("attention.attention.query", "attention.attention.key", "attention.attention.value"):
                qkv.setdefault((layer, param), {})[module.rpartition(".")[2]] = tensor
            elif module in _LAYER_KEYS:
                ours[f"blocks.{layer}.{_LAYER_KEYS[module]}.{param}"] = tensor
            else:
                unknown.append(key)
        else:
            unknown.append(key)
    fuse_qkv(ours, qkv, ("query", "key", "value"), unknown, source=source, what="projections")
    return ours


@dataclass(frozen=True)
class HFArchitecture:
    """What a reader made of a directory: the transformers class, :class:`ViTConfig` fields (besides
    preprocessing, class names and source) and the weights under our names.

    Attributes:
        name: the transformers class the directory holds (``Dinov2ForImageClassification``, ...).
        fields: :class:`~infsa_viz.model.config.ViTConfig` keyword arguments.
        state: the weights, our names.
        processor_model_type: whose image-processor defaults fill a missing
            ``preprocessor_config.json`` (default: the directory's ``model_type``).
    """

    name: str
    fields: dict[str, Any]
    state: dict[str, Tensor]
    processor_model_type: str | None = None


#: ``model_type`` → the reader of its directories (``(config.json, weights, source) → HFArchitecture``).
#: ViT and DeiT are read here; :mod:`infsa_viz.formats.hf_backbones` registers DINOv2 and CLIP.
READERS: dict[str, Callable[[dict[str, Any], dict[str, Tensor], str], HFArchitecture]] = {}


def int_of(hf: dict[str, Any], key: str, default: int, source: str) -> int:
    """``hf[key]`` (or ``default``) as an integer in ``1 .. MAX_WIDTH``; ``ValueError`` naming it otherwise."""
    return _int(hf, key, default, source)


def eps_of(hf: dict[str, Any], key: str, default: float, source: str) -> float:
    """``hf[key]`` (or ``default``) as a number in (0, 1); ``ValueError`` naming it otherwise."""
    return _eps(hf, key, default, source)


def activation(hf: dict[str, Any], source: str, *, default: str = "gelu") -> str:
    """transformers' ``hidden_act`` → one of our :data:`~infsa_viz.model.config.ACTIVATIONS`."""
    act_name = hf.get("hidden_act", default)
    act = _ACTIVATIONS.get(act_name) if isinstance(act_name, str) else None
    if act is None:
        raise ValueError(f"{source}: hidden_act={act_name!r} is not supported; expected one of {sorted(_ACTIVATIONS)}")
    return act


def _read_vit(hf: dict[str, Any], state: dict[str, Tensor], source: str) -> HFArchitecture:
    """A ``ViTForImageClassification`` / ``DeiTForImageClassification[WithTeacher]`` directory."""
    architecture = _architecture(hf, set(state), source)
    prefix, distillation_token, distillation_head = ARCHITECTURES[architecture]
    ours = convert_state(state, prefix, source)
    if "head.weight" not in ours:
        raise ValueError(f"{source}: no classifier weights; is this an image-classification model?")
    dim = _int(hf, "hidden_size", 768, source)
    qkv_bias = hf.get("qkv_bias", True)
    if not isinstance(qkv_bias, bool):
        raise ValueError(f"{source}: qkv_bias={qkv_bias!r} is invalid; expected true or false")
    fields = dict(
        img_size=square_size(hf.get("image_size", 224), "image_size", source),
        patch_size=square_size(hf.get("patch_size", 16), "patch_size", source),
        in_chans=_int(hf, "num_channels", 3, source), embed_dim=dim, depth=_int(hf, "num_hidden_layers", 12, source),
        num_heads=_int(hf, "num_attention_heads", 12, source),
        mlp_ratio=_int(hf, "intermediate_size", 4 * dim, source) / dim, pool="cls",
        num_classes=ours["head.weight"].shape[0], norm_eps=_eps(hf, "layer_norm_eps", 1e-12, source),
        qkv_bias=qkv_bias, act=activation(hf, source), distillation_token=distillation_token,
        distillation_head=distillation_head)
    return HFArchitecture(architecture, fields, ours)


def from_transformers(directory: str | Path, *, map_location: str = "cpu") -> VisionTransformer:
    """Load a transformers ``save_pretrained`` directory as our :class:`VisionTransformer` (softmax
    attention, same weights), in eval mode.

    Read: ``ViTForImageClassification``, ``DeiTForImageClassification[WithTeacher]``, DINOv2 and
    DINOv2 with registers (model or classifier), CLIP's vision tower (with or without projection) and
    a whole CLIP model's vision side (see :data:`READERS`, :mod:`infsa_viz.formats.hf_backbones`).

    Args:
        directory: a ``save_pretrained`` directory: ``config.json`` + ``model.safetensors``
            (pickle ``pytorch_model.bin`` files are refused), optional ``preprocessor_config.json``.
        map_location: device for the weights.

    Raises:
        ValueError: an unsupported architecture or option (named), missing files, or weights that
            do not fit the config.
    """
    directory = Path(directory)
    config_path = directory / "config.json"
    hf = read_json(config_path)
    source = str(config_path)
    if not isinstance(hf, dict):
        raise ValueError(f"{source}: expected a JSON object")
    if not isinstance(hf.get("model_type"), str):
        raise ValueError(f"{source}: model_type={hf.get('model_type')!r} is invalid; expected a string such as 'vit'")
    model_type = hf["model_type"]
    weights = directory / "model.safetensors"
    if not weights.is_file() and (directory / "model.safetensors.index.json").is_file():
        weights = directory / "model.safetensors.index.json"
    if not weights.is_file():
        bins = sorted(p.name for p in directory.glob("*.bin"))
        raise ValueError(f"{directory}: no model.safetensors" + (f" (found {bins}: pickle files are refused; "
                         "re-save with save_pretrained(..., safe_serialization=True))" if bins else ""))
    reader = READERS.get(model_type)
    if reader is None:
        raise ValueError(f"{source}: model_type={model_type!r} is not a model this toolkit reads; expected one of "
                         f"{sorted(READERS)}")
    state = read_safetensors(weights, map_location=map_location)
    read = reader(hf, state, source)
    num_classes = read.fields["num_classes"]
    declared = hf.get("num_labels")
    if num_classes and declared is not None and (isinstance(declared, bool) or declared != num_classes):
        raise ValueError(f"{source}: num_labels={declared!r} contradicts the classifier, which has {num_classes} rows "
                         f"(classifier.weight); expected num_labels={num_classes} or none")
    id2label = hf.get("id2label")
    if num_classes and isinstance(id2label, dict) and len(id2label) != num_classes:
        logger.warning("%s: id2label names %d classes, the classifier has %d rows; its class names are not used",
                       source, len(id2label), num_classes)
    img_size, channels = read.fields["img_size"], read.fields["in_chans"]
    processor_type = read.processor_model_type or model_type
    processor_path = directory / PREPROCESSOR_FILE
    if os.path.lexists(processor_path):  # a broken link or a link loop is an error, not "no file"
        preprocessing = preprocessing_from_hf(read_json(processor_path), img_size=img_size, model_type=processor_type,
                                              source=str(processor_path))
    else:
        logger.warning("%s: no %s; using the %s image processor's defaults", directory, PREPROCESSOR_FILE,
                       processor_type)
        preprocessing = preprocessing_from_hf({}, img_size=img_size, model_type=processor_type,
                                              source=f"{processor_type} image processor defaults")
    if channels == 1:
        preprocessing = Preprocessing(**{**preprocessing.to_dict(), "mean": preprocessing.mean[:1],
                                         "std": preprocessing.std[:1]})
    try:
        config = ViTConfig(
            **read.fields, attention="softmax", preprocessing=preprocessing,
            class_names=_class_names(hf, num_classes) if num_classes else None,
            source={"format": "transformers", "path": str(directory), "architecture": read.name,
                    "model_type": model_type, "preprocessor_config": processor_path.is_file()},
        )
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None
    return load_state(config, read.state, source=str(weights), against=str(config_path))


READERS.update({"vit": _read_vit, "deit": _read_vit})


def _sample(folder: Path) -> str:
    """A softmax :func:`~._sample.sample_model` as a ``ViTForImageClassification`` ``save_pretrained``
    directory (the inverse of :func:`convert_state`), without transformers."""
    import json

    from ..io import atomic_write
    from ._sample import sample_model, write_state

    model = sample_model()
    c, top, layers = model.config, {v: k for k, v in _TOP_KEYS.items()}, {v: k for k, v in _LAYER_KEYS.items()}
    state = {}
    for key, tensor in model.state_dict().items():
        layer = re.match(r"^blocks\.(\d+)\.(.+)\.(\w+)$", key)
        if key in top:
            state[f"vit.{top[key]}"] = tensor
        elif key == "patch_embed.proj.weight":
            state["vit.embeddings.patch_embeddings.projection.weight"] = tensor.reshape(
                c.embed_dim, c.in_chans, c.patch_size, c.patch_size)
        elif key.startswith("head."):
            state[f"classifier.{key[5:]}"] = tensor
        elif layer and layer[2] == "attn.qkv":
            for part, chunk in zip(("query", "key", "value"), tensor.chunk(3)):
                state[f"vit.encoder.layer.{layer[1]}.attention.attention.{part}.{layer[3]}"] = chunk
        elif layer and layer[2] in layers:
            state[f"vit.encoder.layer.{layer[1]}.{layers[layer[2]]}.{layer[3]}"] = tensor
        else:
            raise ValueError(f"weight {key!r} has no place in a transformers ViT")
    directory = folder / "hf"
    write_state(directory / "model.safetensors", state)
    atomic_write(directory / "config.json", json.dumps({
        "model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": c.embed_dim,
        "num_hidden_layers": c.depth, "num_attention_heads": c.num_heads,
        "intermediate_size": model.blocks[0].mlp.fc1.out_features, "image_size": c.img_size,
        "patch_size": c.patch_size, "num_channels": c.in_chans,
        "layer_norm_eps": c.norm_eps, "hidden_act": "gelu", "qkv_bias": True,
        "id2label": {str(i): f"class {i}" for i in range(c.num_classes)}}))
    atomic_write(directory / PREPROCESSOR_FILE, json.dumps({
        "image_processor_type": "ViTImageProcessor", "do_resize": True,
        "size": {"height": c.img_size, "width": c.img_size},
        "resample": 2, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
        "image_mean": [0.5] * c.in_chans, "image_std": [0.5] * c.in_chans}))
    return str(directory)


FORMAT = register_format(ModelFormat(
    "transformers", detect=_detect, sample=_sample,
    load=lambda path, options: from_transformers(path, map_location=str(options.map_location)),
    expects="a save_pretrained directory of a ViT/DeiT classifier, DINOv2 (± registers) or CLIP "
            "(config.json with model_type)"))
