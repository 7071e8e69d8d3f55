"""timm ``VisionTransformer`` state dicts (``.safetensors``) → our :class:`~infsa_viz.model.vit.VisionTransformer`.

timm's ``vision_transformer`` names (``patch_embed.proj``, ``cls_token``, ``reg_token``,
``pos_embed``, ``norm_pre``, ``blocks.i.attn.qkv``, ``blocks.i.attn.q_norm``/``k_norm``,
``blocks.i.ls1``/``ls2``, ``blocks.i.mlp.fc1``, ``norm``, ``head``) are ours too, with timm's
LayerNorm ε = 1e-6, exact GELU and antialiased bicubic position-embedding resizing; the layout
changes are the patch embedding (timm's ``Conv2d`` weight ``(C', C, p, p)`` becomes our ``Linear``
weight ``(C', C·p·p)``, same (C, y, x) order), ``fc_norm`` (our ``norm`` on the pooled vector,
``final_norm="pooled"``, with mean pooling as timm's ``global_pool="avg"`` that goes with it), and
register tokens with a position embedding of their own (timm's default ``no_embed_class=False``):
the constant is added to the register tokens, which then need none. A ``pos_embed`` of the patches
only (``no_embed_class=True``: DeiT III, timm's DINOv2 with registers) is read as such. A state dict
without a head gives the pooled embedding (``num_classes=0``). Attention pooling (``attn_pool``) is
refused, named. Any attention variant can be chosen: q/k/v projections are shared by all variants, so a
softmax-pretrained ViT becomes an InfSA ViT with the same weights and a fresh ``ρ`` (fine-tune it
with ``infsa-viz train``-style code). No timm is needed. ``infsa-viz import-timm`` writes the
result as one of our directories; :func:`~infsa_viz.formats.load_model` reads the file directly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import torch
from torch import Tensor

from ..model.attention import DEFAULT_VARIANT
from ..model.config import ViTConfig
from ..model.vit import VisionTransformer
from ..preprocess import Preprocessing
from ..weights import check_floating
from ._registry import Candidate, LoadOptions, ModelFormat, register_format
from ._state import block_count, load_state, read_safetensors, require

__all__ = ["IMAGENET", "from_timm_state_dict", "to_timm_state_dict"]

#: The usual preprocessing of ImageNet-trained timm ViTs (mean/std of the ImageNet training set).
IMAGENET = Preprocessing(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225), resample="bicubic")

_UNSUPPORTED = ("attn_pool",)
_WHAT = "a timm VisionTransformer state dict"


def from_timm_state_dict(
    state: Mapping[str, Tensor],
    *,
    num_heads: int,
    attention: str = DEFAULT_VARIANT,
    num_classes: int | None = None,
    rho_init: float = 0.5,
    rho_per_head: bool = False,
    preprocessing: Preprocessing | None = None,
    source: str = "state dict",
) -> VisionTransformer:
    """Build a :class:`VisionTransformer` from a timm ViT state dict (no timm needed), in eval mode.

    Every name and shape is checked against the architecture the state implies before the model
    is built (see :func:`~infsa_viz.formats._state.check_fits`).

    Args:
        state: timm ``VisionTransformer.state_dict()`` (class and register tokens, layer scale,
            q/k norm, ``norm_pre``, ``fc_norm``; no attention pooling), floating point.
        num_heads: heads per layer (a state dict does not record it).
        attention: the attention variant of the new model.
        num_classes: keep the checkpoint's head (default; none: the pooled embedding) or start a
            fresh head with this many classes.
        rho_init, rho_per_head: ρ of InfSA variants.
        preprocessing: what the checkpoint expects of its input (a state dict does not record
            it); default :data:`IMAGENET` for RGB checkpoints, ``pixel / 255`` otherwise.
        source: where the state came from, for messages.

    Raises:
        ValueError: missing keys, unsupported features, non-float tensors, or shapes that do not
            fit together; the message names ``source`` and the tensor.
    """
    check_floating(state, source=source)
    bad = sorted(k for k in state if any(k.startswith(tag) for tag in _UNSUPPORTED))
    if bad:
        raise ValueError(f"{source}: state dict uses features this ViT does not have: {bad[:4]} (attention pooling, "
                         "timm's global_pool='map'); supported: class/register tokens, layer scale, q/k norm, "
                         "norm_pre, fc_norm")
    conv = require(state, "patch_embed.proj.weight", source, dims=4, what=_WHAT)
    if conv.shape[-1] != conv.shape[-2]:
        raise ValueError(f"{source}: patch_embed.proj.weight has shape {tuple(conv.shape)}; expected (C', C, p, p)")
    pos = require(state, "pos_embed", source, dims=3, what=_WHAT)
    head = state.get("head.weight")
    if head is not None and head.dim() != 2:
        raise ValueError(f"{source}: tensor 'head.weight' has shape {tuple(head.shape)}; expected 2 dimensions")
    depth = block_count(state, r"^blocks\.(\d+)\.", source)
    hidden = require(state, "blocks.0.mlp.fc1.weight", source, dims=2, what=_WHAT).shape[0]
    dim, in_chans, patch = conv.shape[0], conv.shape[1], conv.shape[-1]
    has_cls = "cls_token" in state
    reg = state.get("reg_token")
    registers = reg.shape[1] if reg is not None and reg.dim() == 3 else 0
    ours = dict(state)
    side, pos_prefix = _grid_side(pos.shape[1], has_cls, registers)
    if side is None:
        raise ValueError(f"{source}: pos_embed holds {pos.shape[1]} positions; expected a square grid of patches, "
                         f"after {int(has_cls) + registers} prefix positions or alone")
    if registers and pos_prefix == int(has_cls) + registers:  # registers with positions: fold the constant in
        ours["reg_token"] = reg + pos[:, int(has_cls): int(has_cls) + registers]
        ours["pos_embed"] = torch.cat([pos[:, :int(has_cls)], pos[:, int(has_cls) + registers:]], dim=1)
    fc_norm = "fc_norm.weight" in state
    final_norm = "pooled" if fc_norm else ("tokens" if "norm.weight" in state else "none")
    for name in ("fc_norm.weight", "fc_norm.bias"):
        if name in ours:
            ours["norm." + name.rpartition(".")[2]] = ours.pop(name)
    classes = num_classes if num_classes is not None else (head.shape[0] if head is not None else 0)
    config = ViTConfig(img_size=side * patch, in_chans=in_chans, patch_size=patch, embed_dim=dim, depth=depth,
                       num_heads=num_heads, mlp_ratio=hidden / dim, pool="cls" if has_cls and not fc_norm else "mean",
                       class_token=has_cls, register_tokens=registers, class_pos_embed=pos_prefix > 0 or not has_cls,
                       pos_interpolation="bicubic_antialias", norm_pre="norm_pre.weight" in state,
                       layer_scale="blocks.0.ls1.gamma" in state, qk_norm="blocks.0.attn.q_norm.weight" in state,
                       final_norm=final_norm,
                       attention=attention, rho_init=rho_init, rho_per_head=rho_per_head,
                       num_classes=classes, norm_eps=1e-6,  # timm's LayerNorm ε
                       qkv_bias="blocks.0.attn.qkv.bias" in state,
                       preprocessing=preprocessing or (IMAGENET if in_chans == 3 else Preprocessing(resample="bicubic")),
                       source={"format": "timm"})
    ours["patch_embed.proj.weight"] = conv.reshape(dim, in_chans * patch * patch)
    optional: tuple[str, ...] = ("rho_logit",)
    if head is not None and classes != head.shape[0] or (head is None and classes):
        ours.pop("head.weight", None)
        ours.pop("head.bias", None)
        optional += ("head.weight", "head.bias")
    return load_state(config, ours, source=source, against="the architecture its patch_embed, pos_embed and blocks.0 give",
                      optional=optional)


def _grid_side(positions: int, has_cls: bool, registers: int) -> tuple[int | None, int]:
    """(the side of the square patch grid ``pos_embed`` holds, how many prefix positions come first):
    class and register tokens' positions (timm's default), the class token's only (transformers' layout,
    and what :func:`to_timm_state_dict` writes), or none (timm's ``no_embed_class``)."""
    for prefix in dict.fromkeys((int(has_cls) + registers, int(has_cls), 0)):
        side = math.isqrt(max(positions - prefix, 0))
        if side >= 1 and side * side == positions - prefix:
            return side, prefix
    return None, 0


def to_timm_state_dict(model: VisionTransformer) -> dict[str, Tensor]:
    """The inverse layout change (for exporting, and for tests): ρ logits are dropped."""
    state = {k: v.clone() for k, v in model.state_dict().items() if "rho_logit" not in k}
    c = model.config
    state["patch_embed.proj.weight"] = state["patch_embed.proj.weight"].reshape(
        c.embed_dim, c.in_chans, c.patch_size, c.patch_size)
    if c.final_norm == "pooled":
        for param in ("weight", "bias"):
            state[f"fc_norm.{param}"] = state.pop(f"norm.{param}")
    return state


def _detect(candidate: Candidate) -> bool:
    return "patch_embed.proj.weight" in candidate.keys


def _load(path: Path, options: LoadOptions) -> VisionTransformer:
    if options.num_heads is None:
        raise ValueError(f"{path}: a state dict does not record its heads; pass num_heads (CLI: PATH?num_heads=H)")
    if options.variant not in (None, "softmax"):
        raise ValueError(f"{path}: timm weights are softmax; to convert them pass convert_to=..., "
                         f"not variant={options.variant!r}")
    state = read_safetensors(path, map_location=options.map_location)
    model = from_timm_state_dict(state, num_heads=options.num_heads, preprocessing=options.preprocessing,
                                 source=str(path))
    model.config = model.config.replace(source={"format": "timm", "path": str(path)})
    return model


def _sample(folder: Path) -> str:
    from ._sample import SAMPLE_HEADS, sample_model, write_state

    return f"{write_state(folder / 'timm.safetensors', to_timm_state_dict(sample_model()))}?num_heads={SAMPLE_HEADS}"


FORMAT = register_format(ModelFormat("timm", detect=_detect, load=_load, sample=_sample,
                                     options=frozenset({"num_heads", "variant", "preprocessing"}),
                                     expects="a .safetensors timm ViT state dict (patch_embed.proj.weight)"))
