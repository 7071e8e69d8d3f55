"""Hugging Face transformers image classifiers (ViT, DeiT) → :class:`~infsa_viz.vit.VisionTransformer`.

Reads a ``save_pretrained`` directory as files: ``config.json`` (JSON), ``model.safetensors``
(or a sharded ``model.safetensors.index.json``) and, when present, ``preprocessor_config.json``.
transformers itself is never imported, so the toolkit reads these models without it; the tests
build the models with transformers and check that the converted model computes the same logits
and the same attention (Dosovitskiy et al. 2021, ViT; Touvron et al. 2021, DeiT).

Weights map one to one (query/key/value are concatenated into our fused ``qkv``; the patch
convolution becomes our linear patch embedding); what transformers' config says about the
architecture (LayerNorm ε, q/k/v bias, GELU form, DeiT's distillation token and head) becomes
fields of :class:`~infsa_viz.vit.ViTConfig`; ``id2label`` becomes ``class_names``.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from torch import Tensor

from ..io import read_json
from ..preprocess import Preprocessing
from ..vit import VisionTransformer, ViTConfig, check_fits
from ._state import fuse_qkv, load_state, read_safetensors

__all__ = ["ARCHITECTURES", "PREPROCESSOR_FILE", "from_transformers", "is_transformers_dir", "preprocessing_from_hf"]

logger = logging.getLogger(__name__)

PREPROCESSOR_FILE = "preprocessor_config.json"
#: transformers classes read here → (weights prefix, distillation token, distillation head).
ARCHITECTURES: dict[str, tuple[str, bool, bool]] = {
    "ViTForImageClassification": ("vit", False, False),
    "DeiTForImageClassification": ("deit", True, False),
    "DeiTForImageClassificationWithTeacher": ("deit", True, True),
}
_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}
#: PIL resampling codes (transformers' ``resample``) → our OpenCV interpolation.
_PIL_RESAMPLE = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "area", 5: "bilinear"}
#: The image processors' class defaults, used for keys a preprocessor_config.json leaves out.
_PROCESSOR_DEFAULTS: dict[str, dict[str, Any]] = {
    "vit": {"image_mean": [0.5] * 3, "image_std": [0.5] * 3, "size": {"height": 224, "width": 224},
            "resample": 2, "do_center_crop": False},
    "deit": {"image_mean": [0.5] * 3, "image_std": [0.5] * 3, "size": {"height": 256, "width": 256},
             "resample": 3, "do_center_crop": True, "crop_size": {"height": 224, "width": 224}},
}


def is_transformers_dir(directory: Path) -> bool:
    """A directory whose ``config.json`` carries transformers' ``model_type``."""
    config = directory / "config.json"
    if not config.is_file():
        return False
    data = read_json(config)
    return isinstance(data, dict) and "model_type" in data


def _square(value: Any, name: str, source: str) -> int:
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values or any(isinstance(v, bool) or not isinstance(v, int) for v in values) or len(set(values)) != 1:
        raise ValueError(f"{source}: {name}={value!r} is not supported; expected one integer (square)")
    return values[0]


def _side(value: Any, name: str, source: str) -> tuple[str, int]:
    """An image processor ``size``/``crop_size`` → ("square" | "shortest_edge", side)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return "square", value
    if isinstance(value, dict) and "shortest_edge" in value and "longest_edge" not in value:
        return "shortest_edge", _square(value["shortest_edge"], name, source)
    if isinstance(value, dict) and {"height", "width"} <= set(value):
        return "square", _square([value["height"], value["width"]], name, source)
    raise ValueError(f"{source}: {name}={value!r} is not supported; expected an int, "
                     "{'height': S, 'width': S} or {'shortest_edge': S}")


def preprocessing_from_hf(processor: dict[str, Any], *, img_size: int, model_type: str = "vit",
                          source: str = PREPROCESSOR_FILE) -> Preprocessing:
    """A transformers image-processor config (JSON) → our :class:`~infsa_viz.preprocess.Preprocessing`.

    transformers computes ``(pixel · rescale_factor − image_mean) / image_std`` after resizing
    (``size``, PIL ``resample``) and an optional centre crop (``crop_size``); we compute
    ``(pixel / 255 − mean) / std``, so ``mean = image_mean / (255 · rescale_factor)`` and
    likewise ``std`` (``rescale_factor`` is 1 when ``do_rescale`` is false; ``do_normalize``
    false means mean 0, std 1). A ``{height, width}`` size stretches, a ``shortest_edge`` size
    keeps the aspect ratio; a centre crop of side ``c`` from side ``s`` is ``crop_fraction = c/s``.
    Keys left out take the processor class's defaults (ViT or DeiT).

    Raises:
        ValueError: non-square sizes, or a crop larger than the resized image.
    """
    if not isinstance(processor, dict):
        raise ValueError(f"{source}: expected a JSON object")
    p = {**_PROCESSOR_DEFAULTS.get(model_type, _PROCESSOR_DEFAULTS["vit"]), **processor}
    factor = float(p.get("rescale_factor", 1 / 255)) if p.get("do_rescale", True) else 1.0
    if p.get("do_normalize", True):
        mean = [float(m) / (255 * factor) for m in p["image_mean"]]
        std = [float(s) / (255 * factor) for s in p["image_std"]]
    else:
        mean, std = [0.0], [1.0 / (255 * factor)]
    code = p.get("resample", 2)
    resample = _PIL_RESAMPLE.get(code if isinstance(code, int) else -1)
    if resample is None:
        raise ValueError(f"{source}: resample={code!r} is not a PIL resampling code 0..5")
    if code == 5:
        logger.warning("%s: PIL's hamming filter has no OpenCV equivalent; resizing bilinearly", source)
    kind, side = _side(p.get("size", img_size), "size", source) if p.get("do_resize", True) else ("square", img_size)
    if not p.get("do_resize", True):
        logger.warning("%s: do_resize is false; images are still resized to the model's %d pixels", source, img_size)
    fraction = 1.0
    if p.get("do_center_crop", False):
        crop = _side(p.get("crop_size", img_size), "crop_size", source)[1]
        if crop > side:
            raise ValueError(f"{source}: crop_size {crop} is larger than the resized side {side}")
        if crop != img_size:
            logger.warning("%s: crop_size %d differs from the model's image_size %d; using the model's", source,
                           crop, img_size)
        fraction = crop / side
    elif side != img_size:
        logger.warning("%s: size %d differs from the model's image_size %d; using the model's", source, side, img_size)
    return Preprocessing(mean=tuple(mean), std=tuple(std), resample=resample, crop_fraction=fraction,
                         resize="center_crop" if kind == "shortest_edge" else "stretch")


def _architecture(config: dict[str, Any], state_keys: set[str], source: str) -> str:
    names = [a for a in config.get("architectures") or [] if a in ARCHITECTURES]
    if names:
        return names[0]
    model_type = config.get("model_type")
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
            ours["patch_embed.proj.weight"] = tensor.reshape(tensor.shape[0], -1)  # (C', C, p, p) → (C', C·p·p)
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


def from_transformers(directory: str | Path, *, map_location: str = "cpu") -> VisionTransformer:
    """Load a transformers ``ViTForImageClassification`` / ``DeiTForImageClassification[WithTeacher]``
    directory as our :class:`VisionTransformer` (softmax attention, same weights), in eval mode.

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
    weights = directory / "model.safetensors"
    if not weights.is_file() and (directory / "model.safetensors.index.json").is_file():
        weights = directory / "model.safetensors.index.json"
    if not weights.is_file():
        bins = sorted(p.name for p in directory.glob("*.bin"))
        raise ValueError(f"{directory}: no model.safetensors" + (f" (found {bins}: pickle files are refused; "
                         "re-save with save_pretrained(..., safe_serialization=True))" if bins else ""))
    state = read_safetensors(weights, map_location=map_location)
    architecture = _architecture(hf, set(state), source)
    prefix, distillation_token, distillation_head = ARCHITECTURES[architecture]
    act = _ACTIVATIONS.get(hf.get("hidden_act", "gelu"))
    if act is None:
        raise ValueError(f"{source}: hidden_act={hf.get('hidden_act')!r} is not supported; expected one of "
                         f"{sorted(_ACTIVATIONS)}")
    ours = convert_state(state, prefix, source)
    if "head.weight" not in ours:
        raise ValueError(f"{source}: no classifier weights; is this an image-classification model?")
    num_classes = ours["head.weight"].shape[0]
    dim, heads, depth = hf.get("hidden_size", 768), hf.get("num_attention_heads", 12), hf.get("num_hidden_layers", 12)
    img_size = _square(hf.get("image_size", 224), "image_size", source)
    processor_path = directory / PREPROCESSOR_FILE
    if processor_path.is_file():
        preprocessing = preprocessing_from_hf(read_json(processor_path), img_size=img_size,
                                              model_type=hf["model_type"], source=str(processor_path))
    else:
        logger.warning("%s: no %s; using the %s image processor's defaults", directory, PREPROCESSOR_FILE,
                       hf["model_type"])
        preprocessing = preprocessing_from_hf({}, img_size=img_size, model_type=hf["model_type"],
                                              source=f"{hf['model_type']} image processor defaults")
    if hf.get("num_channels", 3) == 1:
        preprocessing = Preprocessing(**{**preprocessing.to_dict(), "mean": preprocessing.mean[:1],
                                         "std": preprocessing.std[:1]})
    config = ViTConfig(
        img_size=img_size, in_chans=hf.get("num_channels", 3), patch_size=_square(hf.get("patch_size", 16),
                                                                                   "patch_size", source),
        embed_dim=dim, depth=depth, num_heads=heads, mlp_ratio=hf.get("intermediate_size", 4 * dim) / dim,
        pool="cls", attention="softmax", num_classes=num_classes, preprocessing=preprocessing,
        norm_eps=float(hf.get("layer_norm_eps", 1e-12)), qkv_bias=bool(hf.get("qkv_bias", True)), act=act,
        distillation_token=distillation_token, distillation_head=distillation_head,
        class_names=_class_names(hf, num_classes),
        source={"format": "transformers", "path": str(directory), "architecture": architecture,
                "model_type": hf["model_type"], "preprocessor_config": processor_path.is_file()},
    )
    check_fits(config, {k: tuple(v.shape) for k, v in ours.items()}, str(weights), against=str(config_path))
    return load_state(VisionTransformer(config), ours, source=str(weights))
