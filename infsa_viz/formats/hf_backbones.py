"""transformers backbones: DINOv2 (with and without registers) and CLIP's vision tower, as configuration
of our one :class:`~infsa_viz.model.vit.VisionTransformer`.

Each reader turns a ``save_pretrained`` directory's ``config.json`` and weights (our names after a
one-to-one renaming; q/k/v fused) into :class:`~infsa_viz.model.config.ViTConfig` fields, and is
registered under its ``model_type`` in :data:`infsa_viz.formats.hf.READERS`, which
:func:`~infsa_viz.formats.hf.from_transformers` reads (transformers is never imported):

* ``dinov2`` / ``dinov2_with_registers`` (Oquab et al. 2024; Darcet et al., ICLR 2024):
  ``Dinov2Model`` / ``Dinov2WithRegistersModel`` (output: the normalised class token,
  ``pooler_output``) or ``...ForImageClassification`` (class token ⊕ mean patch token → classifier);
  layer scale, registers after the class token without position embedding, LayerNorm ε 1e-6;
  position embeddings resized bicubically, with antialiasing for the registers model as
  transformers does it;
* ``clip_vision_model`` (``CLIPVisionModel``: ``pooler_output``; ``CLIPVisionModelWithProjection``:
  ``image_embeds``) and ``clip`` (``CLIPModel``: its vision tower and ``visual_projection``;
  the text tower is read by :mod:`infsa_viz.zero_shot`) (Radford et al. 2021): pre-LayerNorm,
  quick GELU, a class token of shape ``(C,)``, a bias-free patch convolution (a zero bias here).

Anything else (SwiGLU MLPs, a ``use_mask_token`` training-only token aside) is refused with the
key named.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import Tensor

from ._state import flat_conv, fuse_qkv
from .hf import READERS, HFArchitecture, activation, eps_of, int_of, square_size

__all__ = ["read_clip", "read_dinov2"]

_DINO_LAYER = re.compile(r"^encoder\.layer\.(\d+)\.(.+)\.(weight|bias|lambda1)$")
_DINO_LAYER_KEYS = {"norm1": "norm1", "norm2": "norm2", "attention.output.dense": "attn.proj",
                    "mlp.fc1": "mlp.fc1", "mlp.fc2": "mlp.fc2", "layer_scale1": "ls1", "layer_scale2": "ls2"}
_DINO_TOP = {"embeddings.cls_token": "cls_token", "embeddings.register_tokens": "reg_token",
             "embeddings.position_embeddings": "pos_embed", "layernorm.weight": "norm.weight",
             "layernorm.bias": "norm.bias", "embeddings.patch_embeddings.projection.bias": "patch_embed.proj.bias"}
_CLIP_LAYER = re.compile(r"^encoder\.layers\.(\d+)\.(.+)\.(weight|bias)$")
_CLIP_LAYER_KEYS = {"layer_norm1": "norm1", "layer_norm2": "norm2", "self_attn.out_proj": "attn.proj",
                    "mlp.fc1": "mlp.fc1", "mlp.fc2": "mlp.fc2"}
_CLIP_TOP = {"pre_layrnorm.weight": "norm_pre.weight", "pre_layrnorm.bias": "norm_pre.bias",
             "post_layernorm.weight": "norm.weight", "post_layernorm.bias": "norm.bias"}


def _strip(state: Mapping[str, Tensor], prefix: str) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """(keys under ``prefix`` with it removed, the other keys)."""
    inner = {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}
    return inner, {k: v for k, v in state.items() if not k.startswith(prefix)}


def _convert(state: Mapping[str, Tensor], layer: re.Pattern[str], layer_keys: Mapping[str, str],
             top: Mapping[str, str], qkv: tuple[str, str, str], special: Callable[[str, Tensor], dict[str, Tensor] | None],
             source: str) -> dict[str, Tensor]:
    """Rename one tower's weights (no model prefix) to ours; ``special`` handles a key first (or returns
    ``None``); q/k/v (module names ``qkv``) are fused; any other key is refused, named."""
    ours: dict[str, Tensor] = {}
    parts: dict[tuple[int, str], dict[str, Tensor]] = {}
    unknown: list[str] = []
    for key, tensor in state.items():
        handled = special(key, tensor)
        if handled is not None:
            ours.update(handled)
        elif key in top:
            ours[top[key]] = tensor
        elif m := layer.match(key):
            index, module, param = int(m[1]), m[2], m[3]
            if module in qkv:
                parts.setdefault((index, param), {})[module] = tensor
            elif module in layer_keys:
                ours[f"blocks.{index}.{layer_keys[module]}.{'gamma' if param == 'lambda1' else param}"] = tensor
            else:
                unknown.append(key)
        else:
            unknown.append(key)
    fuse_qkv(ours, parts, qkv, unknown, source=source, what="projections")
    return ours


def read_dinov2(hf: dict[str, Any], state: Mapping[str, Tensor], source: str) -> HFArchitecture:
    """A DINOv2 (``dinov2``) or DINOv2-with-registers (``dinov2_with_registers``) directory."""
    model_type = hf["model_type"]
    if hf.get("use_swiglu_ffn", False) is not False:
        raise ValueError(f"{source}: use_swiglu_ffn={hf['use_swiglu_ffn']!r} (a SwiGLU MLP) is not supported; "
                         "expected false (DINOv2 ViT-S/B/L)")
    head = {k: v for k, v in state.items() if k.startswith("classifier.")}
    tower, rest = _strip({k: v for k, v in state.items() if k not in head}, model_type + ".")
    tower.update(rest)  # a bare Dinov2Model is saved without the prefix

    def special(key: str, tensor: Tensor) -> dict[str, Tensor] | None:
        if key == "embeddings.mask_token":  # masked-image-modelling training only; never used at inference
            return {}
        if key == "embeddings.patch_embeddings.projection.weight":
            return {"patch_embed.proj.weight": flat_conv(tensor)}  # (C', C, p, p) → (C', C·p·p)
        return None

    query = ("attention.attention.query", "attention.attention.key", "attention.attention.value")
    ours = _convert(tower, _DINO_LAYER, _DINO_LAYER_KEYS, _DINO_TOP, query, special, source)
    ours.update({f"head.{k.rpartition('.')[2]}": v for k, v in head.items()})
    dim = int_of(hf, "hidden_size", 768, source)
    registers = hf.get("num_register_tokens", 0) if model_type == "dinov2_with_registers" else 0
    if isinstance(registers, bool) or not isinstance(registers, int) or registers < 0:
        raise ValueError(f"{source}: num_register_tokens={registers!r} is invalid; expected an integer >= 0")
    mlp_ratio = hf.get("mlp_ratio", 4)
    if isinstance(mlp_ratio, bool) or not isinstance(mlp_ratio, (int, float)) or mlp_ratio <= 0:
        raise ValueError(f"{source}: mlp_ratio={mlp_ratio!r} is invalid; expected a positive number")
    num_classes = ours["head.weight"].shape[0] if "head.weight" in ours else 0
    fields = dict(
        img_size=square_size(hf.get("image_size", 518), "image_size", source),
        patch_size=square_size(hf.get("patch_size", 14), "patch_size", source),
        in_chans=int_of(hf, "num_channels", 3, source), embed_dim=dim,
        depth=int_of(hf, "num_hidden_layers", 12, source), num_heads=int_of(hf, "num_attention_heads", 12, source),
        mlp_ratio=float(mlp_ratio), norm_eps=eps_of(hf, "layer_norm_eps", 1e-6, source),
        qkv_bias=hf.get("qkv_bias", True), act=activation(hf, source), num_classes=num_classes,
        pool="cls_mean" if num_classes else "cls", register_tokens=registers, layer_scale=True,
        pos_interpolation="bicubic_antialias" if model_type == "dinov2_with_registers" else "bicubic")
    name = ("Dinov2WithRegisters" if registers or model_type == "dinov2_with_registers" else "Dinov2") + \
        ("ForImageClassification" if num_classes else "Model")
    return HFArchitecture(name, fields, ours)


def read_clip(hf: dict[str, Any], state: Mapping[str, Tensor], source: str) -> HFArchitecture:
    """A CLIP vision tower (``clip_vision_model``) or a whole CLIP model (``clip``: its vision side)."""
    model_type = hf["model_type"]
    vision = hf
    if model_type == "clip":
        vision = hf.get("vision_config")
        if not isinstance(vision, dict):
            raise ValueError(f"{source}: vision_config={vision!r} is invalid; expected a JSON object")
        state = {k: v for k, v in state.items() if not k.startswith("text_model.")
                 and k not in ("text_projection.weight", "logit_scale")}  # the text side: infsa_viz.zero_shot
    projection = state.get("visual_projection.weight")
    tower, rest = _strip({k: v for k, v in state.items() if k != "visual_projection.weight"}, "vision_model.")
    tower.update(rest)  # CLIPVisionModel is saved without the prefix

    def special(key: str, tensor: Tensor) -> dict[str, Tensor] | None:
        if key == "embeddings.position_ids":  # an index buffer older versions saved
            return {}
        if key == "embeddings.class_embedding":  # (C',) → (1, 1, C')
            return {"cls_token": tensor.reshape(1, 1, -1)}
        if key == "embeddings.position_embedding.weight":  # an nn.Embedding (N, C') → (1, N, C')
            return {"pos_embed": tensor.unsqueeze(0)}
        if key == "embeddings.patch_embedding.weight":  # a bias-free convolution
            return {"patch_embed.proj.weight": flat_conv(tensor),
                    "patch_embed.proj.bias": torch.zeros(tensor.shape[0], dtype=tensor.dtype, device=tensor.device)}
        return None

    query = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")
    ours = _convert(tower, _CLIP_LAYER, _CLIP_LAYER_KEYS, _CLIP_TOP, query, special, source)
    projection_dim = 0
    if projection is not None:
        ours["projection.weight"] = projection
        projection_dim = projection.shape[0] if projection.dim() == 2 else 0
    dim = int_of(vision, "hidden_size", 768, source)
    fields = dict(
        img_size=square_size(vision.get("image_size", 224), "image_size", source),
        patch_size=square_size(vision.get("patch_size", 32), "patch_size", source),
        in_chans=int_of(vision, "num_channels", 3, source), embed_dim=dim,
        depth=int_of(vision, "num_hidden_layers", 12, source),
        num_heads=int_of(vision, "num_attention_heads", 12, source),
        mlp_ratio=int_of(vision, "intermediate_size", 3072, source) / dim,
        norm_eps=eps_of(vision, "layer_norm_eps", 1e-5, source), qkv_bias=True,
        act=activation(vision, source, default="quick_gelu"), num_classes=0, pool="cls", norm_pre=True,
        projection_dim=projection_dim)
    name = "CLIPModel" if model_type == "clip" else \
        ("CLIPVisionModelWithProjection" if projection is not None else "CLIPVisionModel")
    return HFArchitecture(name, fields, ours, processor_model_type="clip")


READERS.update({"dinov2": read_dinov2, "dinov2_with_registers": read_dinov2,
                "clip_vision_model": read_clip, "clip": read_clip})
