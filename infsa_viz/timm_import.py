"""Bring your own ViT: import a timm-format ViT state dict into :class:`VisionTransformer`.

timm's ``vision_transformer`` names (``patch_embed.proj``, ``cls_token``, ``pos_embed``,
``blocks.i.attn.qkv``, ``blocks.i.mlp.fc1``, ``norm``, ``head``) are ours too, with timm's
LayerNorm ε = 1e-6 and exact GELU; the only layout change is the patch embedding: timm's ``Conv2d`` weight ``(C', C, p, p)`` becomes our
``Linear`` weight ``(C', C·p·p)`` (same (C, y, x) order). Any attention variant can be chosen:
q/k/v projections are shared by all variants, so a softmax-pretrained ViT becomes an InfSA ViT
with the same weights and a fresh ``ρ`` (fine-tune it with ``infsa-viz train``-style code).
"""

from __future__ import annotations

import re
from typing import Mapping

from torch import Tensor

from .attention import DEFAULT_VARIANT
from .preprocess import Preprocessing
from .vit import ViTConfig, VisionTransformer

__all__ = ["IMAGENET", "from_timm_state_dict", "to_timm_state_dict"]

#: The usual preprocessing of ImageNet-trained timm ViTs (mean/std of the ImageNet training set).
IMAGENET = Preprocessing(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225), resample="bicubic")

_UNSUPPORTED = ("reg_token", "ls1.", "ls2.", "fc_norm", "attn.q_norm", "attn.k_norm", "norm_pre", "attn_pool")


def from_timm_state_dict(
    state: Mapping[str, Tensor],
    *,
    num_heads: int,
    attention: str = DEFAULT_VARIANT,
    num_classes: int | None = None,
    rho_init: float = 0.5,
    rho_per_head: bool = False,
    preprocessing: Preprocessing | None = None,
) -> VisionTransformer:
    """Build a :class:`VisionTransformer` from a timm ViT state dict (no timm needed).

    Args:
        state: timm ``VisionTransformer.state_dict()`` (CLS-token ViT, no register tokens,
            no layer scale).
        num_heads: heads per layer (a state dict does not record it).
        attention: the attention variant of the new model.
        num_classes: keep the checkpoint's head (default) or start a fresh head with this many
            classes.
        rho_init, rho_per_head: ρ of InfSA variants.
        preprocessing: what the checkpoint expects of its input (a state dict does not record
            it); default :data:`IMAGENET` for RGB checkpoints, ``pixel / 255`` otherwise.

    Raises:
        ValueError: missing keys, unsupported features, or shapes that do not fit together.
    """
    keys = set(state)
    bad = sorted(k for k in keys if any(tag in k for tag in _UNSUPPORTED))
    if bad:
        raise ValueError(f"state dict uses features this ViT does not have: {bad[:4]}")
    for key in ("patch_embed.proj.weight", "pos_embed", "head.weight"):
        if key not in keys:
            raise ValueError(f"state dict has no {key!r}; is it a timm VisionTransformer?")
    conv = state["patch_embed.proj.weight"]
    if conv.dim() != 4 or conv.shape[-1] != conv.shape[-2]:
        raise ValueError(f"patch_embed.proj.weight has shape {tuple(conv.shape)}; expected (C', C, p, p)")
    dim, in_chans, patch = conv.shape[0], conv.shape[1], conv.shape[-1]
    has_cls = "cls_token" in keys
    grid_tokens = state["pos_embed"].shape[1] - int(has_cls)
    side = int(round(grid_tokens**0.5))
    if side * side != grid_tokens:
        raise ValueError(f"pos_embed holds {grid_tokens} patch positions; expected a square grid")
    depth = 1 + max(int(m.group(1)) for k in keys if (m := re.match(r"blocks\.(\d+)\.", k)))
    hidden = state["blocks.0.mlp.fc1.weight"].shape[0]
    head_classes = state["head.weight"].shape[0]
    config = ViTConfig(img_size=side * patch, in_chans=in_chans, patch_size=patch, embed_dim=dim, depth=depth,
                       num_heads=num_heads, mlp_ratio=hidden / dim, pool="cls" if has_cls else "mean",
                       attention=attention, rho_init=rho_init, rho_per_head=rho_per_head,
                       num_classes=num_classes or head_classes, norm_eps=1e-6,  # timm's LayerNorm ε
                       qkv_bias="blocks.0.attn.qkv.bias" in keys,
                       preprocessing=preprocessing or (IMAGENET if in_chans == 3 else Preprocessing(resample="bicubic")),
                       source={"format": "timm"})
    model = VisionTransformer(config)
    ours = dict(state)
    ours["patch_embed.proj.weight"] = conv.reshape(dim, in_chans * patch * patch)
    if num_classes is not None and num_classes != head_classes:
        ours.pop("head.weight")
        ours.pop("head.bias", None)
    expected = model.state_dict()
    unknown = sorted(set(ours) - set(expected))
    if unknown:
        raise ValueError(f"state dict has keys this ViT does not have: {unknown[:5]}")
    for name, tensor in ours.items():
        if tensor.shape != expected[name].shape:
            raise ValueError(f"{name}: shape {tuple(tensor.shape)} does not fit {tuple(expected[name].shape)}")
    missing = [k for k in expected if k not in ours and "rho_logit" not in k and not k.startswith("head.")]
    if missing:
        raise ValueError(f"state dict lacks {missing[:5]}")
    model.load_state_dict(ours, strict=False)
    return model


def to_timm_state_dict(model: VisionTransformer) -> dict[str, Tensor]:
    """The inverse layout change (for exporting, and for tests): ρ logits are dropped."""
    state = {k: v.clone() for k, v in model.state_dict().items() if "rho_logit" not in k}
    c = model.config
    state["patch_embed.proj.weight"] = state["patch_embed.proj.weight"].reshape(
        c.embed_dim, c.in_chans, c.patch_size, c.patch_size)
    return state
