"""timm ``VisionTransformer`` state dicts (``.safetensors``) → our :class:`~infsa_viz.model.vit.VisionTransformer`.

timm's ``vision_transformer`` names (``patch_embed.proj``, ``cls_token``, ``pos_embed``,
``blocks.i.attn.qkv``, ``blocks.i.mlp.fc1``, ``norm``, ``head``) are ours too, with timm's
LayerNorm ε = 1e-6 and exact GELU; the only layout change is the patch embedding: timm's
``Conv2d`` weight ``(C', C, p, p)`` becomes our ``Linear`` weight ``(C', C·p·p)`` (same (C, y, x)
order). Any attention variant can be chosen: q/k/v projections are shared by all variants, so a
softmax-pretrained ViT becomes an InfSA ViT with the same weights and a fresh ``ρ`` (fine-tune it
with ``infsa-viz train``-style code). No timm is needed. ``infsa-viz import-timm`` writes the
result as one of our directories; :func:`~infsa_viz.formats.load_model` reads the file directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

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

_UNSUPPORTED = ("reg_token", "ls1.", "ls2.", "fc_norm", "attn.q_norm", "attn.k_norm", "norm_pre", "attn_pool")
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
        state: timm ``VisionTransformer.state_dict()`` (CLS-token ViT, no register tokens,
            no layer scale), floating point.
        num_heads: heads per layer (a state dict does not record it).
        attention: the attention variant of the new model.
        num_classes: keep the checkpoint's head (default) or start a fresh head with this many
            classes.
        rho_init, rho_per_head: ρ of InfSA variants.
        preprocessing: what the checkpoint expects of its input (a state dict does not record
            it); default :data:`IMAGENET` for RGB checkpoints, ``pixel / 255`` otherwise.
        source: where the state came from, for messages.

    Raises:
        ValueError: missing keys, unsupported features, non-float tensors, or shapes that do not
            fit together; the message names ``source`` and the tensor.
    """
    check_floating(state, source=source)
    bad = sorted(k for k in state if any(tag in k for tag in _UNSUPPORTED))
    if bad:
        raise ValueError(f"{source}: state dict uses features this ViT does not have: {bad[:4]}")
    conv = require(state, "patch_embed.proj.weight", source, dims=4, what=_WHAT)
    if conv.shape[-1] != conv.shape[-2]:
        raise ValueError(f"{source}: patch_embed.proj.weight has shape {tuple(conv.shape)}; expected (C', C, p, p)")
    pos = require(state, "pos_embed", source, dims=3, what=_WHAT)
    head = require(state, "head.weight", source, dims=2, what=_WHAT)
    depth = block_count(state, r"^blocks\.(\d+)\.", source)
    hidden = require(state, "blocks.0.mlp.fc1.weight", source, dims=2, what=_WHAT).shape[0]
    dim, in_chans, patch = conv.shape[0], conv.shape[1], conv.shape[-1]
    has_cls = "cls_token" in state
    grid_tokens = pos.shape[1] - int(has_cls)
    side = int(round(max(grid_tokens, 0) ** 0.5))
    if side < 1 or side * side != grid_tokens:
        raise ValueError(f"{source}: pos_embed holds {grid_tokens} patch positions; expected a square grid")
    config = ViTConfig(img_size=side * patch, in_chans=in_chans, patch_size=patch, embed_dim=dim, depth=depth,
                       num_heads=num_heads, mlp_ratio=hidden / dim, pool="cls" if has_cls else "mean",
                       attention=attention, rho_init=rho_init, rho_per_head=rho_per_head,
                       num_classes=num_classes or head.shape[0], norm_eps=1e-6,  # timm's LayerNorm ε
                       qkv_bias="blocks.0.attn.qkv.bias" in state,
                       preprocessing=preprocessing or (IMAGENET if in_chans == 3 else Preprocessing(resample="bicubic")),
                       source={"format": "timm"})
    ours = dict(state)
    ours["patch_embed.proj.weight"] = conv.reshape(dim, in_chans * patch * patch)
    optional: tuple[str, ...] = ("rho_logit",)
    if num_classes is not None and num_classes != head.shape[0]:
        ours.pop("head.weight")
        ours.pop("head.bias", None)
        optional += ("head.weight", "head.bias")
    return load_state(config, ours, source=source, against="the architecture its patch_embed, pos_embed and blocks.0 give",
                      optional=optional)


def to_timm_state_dict(model: VisionTransformer) -> dict[str, Tensor]:
    """The inverse layout change (for exporting, and for tests): ρ logits are dropped."""
    state = {k: v.clone() for k, v in model.state_dict().items() if "rho_logit" not in k}
    c = model.config
    state["patch_embed.proj.weight"] = state["patch_embed.proj.weight"].reshape(
        c.embed_dim, c.in_chans, c.patch_size, c.patch_size)
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


FORMAT = register_format(ModelFormat("timm", detect=_detect, load=_load, options=frozenset({"num_heads", "variant",
                                                                                           "preprocessing"}),
                                     expects="a .safetensors timm ViT state dict (patch_embed.proj.weight)"))
