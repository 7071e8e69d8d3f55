"""torchvision ViT state dicts, plain or converted by the official InfSA code, → our ViT.

The official InfSA repository (github.com/giorgioroffo/infinite-self-attention, ``infsa.convert``)
converts a torchvision ``vit_b_16`` by replacing each ``encoder.layers.encoder_layer_i.
self_attention`` (an ``nn.MultiheadAttention``) with its ``InfSAAttention``, whose parameters are
``q_proj``, ``k_proj``, ``v_proj``, ``out_proj`` (weights and biases) and one scalar
``rho_logit`` per layer, ``ρ = sigmoid(rho_logit)``. Its forward, per head (``D`` = head width):

* pure: ``A = ρ · N(ReLU(q kᵀ / D))`` with ``N(S) = S / (‖S‖_F + ε)``, output ``A v``;
* linear: ``w_i = ‖q_i/√D‖ / (Σ_l ‖q_l/√D‖ + ε)``, ``q̄ = Σ_i w_i q_i/√D``,
  ``a_j = ReLU(q̄ · k_j/√D)``, ``a ← a / (Σ a + ε)``, every token's output ``ρ Σ_j a_j v_j``;

with ``ε = 1e-6``. Our operators compute ``ReLU(q kᵀ) / (‖ReLU(q kᵀ)‖_F + ε')``: the ``1/D``
scale cancels in the normalisation except against ``ε``, so ``ε' = D·ε`` reproduces the pure
variant exactly and the linear variant's ``a`` exactly; its query weights ``α`` then carry
``D·ε`` where the official code has ``√D·ε`` (a relative difference below ``D·ε / Σ‖q‖``).

The state dict records neither the head count nor which InfSA variant ran (both have the same
parameters), so both are options. A torchvision state dict with ``nn.MultiheadAttention``
(``in_proj_weight``) loads as softmax. torchvision's ViT uses LayerNorm ε = 1e-6 and exact GELU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from torch import Tensor

from ..model.blockwise import EPS
from ..model.config import ViTConfig
from ..model.vit import VisionTransformer
from ..preprocess import Preprocessing
from ..weights import check_floating
from ._registry import LoadOptions, ModelFormat, register_format
from ._state import block_count, flat_conv, fuse_qkv, load_state, read_safetensors, require

__all__ = ["OFFICIAL_EPS", "TORCHVISION_IMAGENET", "from_torchvision_state_dict", "is_torchvision_state",
           "to_torchvision_state_dict"]

#: ε of the official InfSA code's normalisations.
OFFICIAL_EPS = 1e-6
#: torchvision's ``ViT_B_16_Weights.IMAGENET1K_V1`` transforms: resize the shorter side to 256
#: (bilinear), centre-crop 224, ImageNet mean/std.
TORCHVISION_IMAGENET = Preprocessing(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225), resize="center_crop",
                                     resample="bilinear", crop_fraction=224 / 256)
_LAYER = re.compile(r"^encoder\.layers\.encoder_layer_(\d+)\.(.+)$")
_BLOCK = {
    "ln_1": "norm1", "ln_2": "norm2", "mlp.0": "mlp.fc1", "mlp.3": "mlp.fc2", "mlp.linear_1": "mlp.fc1",
    "mlp.linear_2": "mlp.fc2", "self_attention.out_proj": "attn.proj",
}
_TOP = {"class_token": "cls_token", "encoder.pos_embedding": "pos_embed", "conv_proj.bias": "patch_embed.proj.bias",
        "encoder.ln.weight": "norm.weight", "encoder.ln.bias": "norm.bias", "heads.head.weight": "head.weight",
        "heads.head.bias": "head.bias"}


def is_torchvision_state(keys: set[str] | frozenset[str] | list[str]) -> bool:
    """Whether tensor names are a torchvision ``VisionTransformer``'s (``conv_proj``, ``encoder.pos_embedding``)."""
    return "conv_proj.weight" in keys and "encoder.pos_embedding" in keys


def _convert(state: Mapping[str, Tensor], source: str) -> tuple[dict[str, Tensor], bool]:
    """torchvision names → ours; returns the state and whether it holds official InfSA layers."""
    ours: dict[str, Tensor] = {}
    parts: dict[tuple[int, str], dict[str, Tensor]] = {}
    unknown, infsa = [], False
    for key, tensor in state.items():
        if key in _TOP:
            ours[_TOP[key]] = tensor
        elif key == "conv_proj.weight":
            ours["patch_embed.proj.weight"] = flat_conv(tensor)
        elif m := _LAYER.match(key):
            layer, rest = int(m[1]), m[2]
            module, _, param = rest.rpartition(".")
            if module in _BLOCK:
                ours[f"blocks.{layer}.{_BLOCK[module]}.{param}"] = tensor
            elif rest in ("self_attention.in_proj_weight", "self_attention.in_proj_bias"):
                ours[f"blocks.{layer}.attn.qkv.{rest.rpartition('_')[2]}"] = tensor  # already q, k, v stacked
            elif module in ("self_attention.q_proj", "self_attention.k_proj", "self_attention.v_proj"):
                parts.setdefault((layer, param), {})[module[-6]] = tensor
            elif rest == "self_attention.rho_logit":
                infsa = True
                ours[f"blocks.{layer}.attn.rho_logit"] = tensor.reshape(1) if tensor.numel() == 1 else tensor  # a scalar
            else:
                unknown.append(key)
        else:
            unknown.append(key)
    fuse_qkv(ours, parts, ("q", "k", "v"), unknown, source=source, what="projections")
    return ours, infsa


def from_torchvision_state_dict(
    state: Mapping[str, Tensor],
    *,
    num_heads: int | None,
    variant: str | None = None,
    preprocessing: Preprocessing | None = None,
    source: str = "state dict",
) -> VisionTransformer:
    """A torchvision ``VisionTransformer`` state dict (plain, or converted by the official InfSA code).

    Args:
        state: the state dict (``conv_proj``, ``class_token``, ``encoder.layers.encoder_layer_i``,
            ``heads.head``).
        num_heads: heads per layer (a state dict does not record it; torchvision's ViT-B uses 12).
        variant: for official InfSA state dicts, ``"pure_infsa"`` or ``"linear_infsa"`` (the
            weights do not say which ran); must be ``None`` or ``"softmax"`` for plain ones.
        preprocessing: what the checkpoint expects of its input; default
            :data:`TORCHVISION_IMAGENET`.
        source: where the state came from, for messages.

    Raises:
        ValueError: a missing option, unknown weights, or shapes that do not fit.
    """
    check_floating(state, source=source)
    ours, infsa = _convert(state, source)
    if num_heads is None:
        raise ValueError(f"{source}: a state dict does not record its heads; pass num_heads "
                         "(CLI: PATH?num_heads=H; torchvision's ViT-B/16 has 12)")
    if infsa and variant not in ("pure_infsa", "linear_infsa"):
        raise ValueError(f"{source}: official InfSA weights do not record which variant ran; pass "
                         f"variant='pure_infsa' or 'linear_infsa' (CLI: PATH?variant=...), got variant={variant!r}")
    if not infsa and variant not in (None, "softmax"):
        raise ValueError(f"{source}: softmax (nn.MultiheadAttention) weights; variant={variant!r} does not apply "
                         "(to convert them, pass convert_to=... to load_model)")
    what = "a torchvision ViT state dict"
    conv = require(state, "conv_proj.weight", source, dims=4, what=what)
    pos = require(ours, "pos_embed", source, dims=3, what=what)
    head = require(ours, "head.weight", source, dims=2, what=what)
    depth = block_count(ours, r"^blocks\.(\d+)\.", source)
    hidden = require(ours, "blocks.0.mlp.fc1.weight", source, dims=2, what=what).shape[0]
    dim, in_chans, patch = conv.shape[0], conv.shape[1], conv.shape[-1]
    side = round(max(pos.shape[1] - 1, 0) ** 0.5)
    if side < 1 or side * side != pos.shape[1] - 1:
        raise ValueError(f"{source}: encoder.pos_embedding holds {pos.shape[1] - 1} patch positions; "
                         "expected a square grid")
    head_dim = dim // num_heads if num_heads and dim % num_heads == 0 else 1
    config = ViTConfig(
        img_size=side * patch, in_chans=in_chans, patch_size=patch, embed_dim=dim, depth=depth, num_heads=num_heads,
        mlp_ratio=hidden / dim, pool="cls",
        attention=variant if infsa else "softmax", num_classes=head.shape[0],
        preprocessing=preprocessing or (TORCHVISION_IMAGENET if in_chans == 3 else Preprocessing(resample="bilinear")),
        norm_eps=1e-6, qkv_bias="blocks.0.attn.qkv.bias" in ours,
        infsa_eps=head_dim * OFFICIAL_EPS if infsa else EPS,
        source={"format": "official-infsa" if infsa else "torchvision", "layout": "torchvision VisionTransformer"},
    )
    return load_state(config, ours, source=source, against="the architecture its conv_proj, pos_embedding and "
                      "encoder_layer_0 give")


def to_torchvision_state_dict(model: VisionTransformer) -> dict[str, Tensor]:
    """The inverse of :func:`from_torchvision_state_dict`: a softmax model in torchvision's names
    (``in_proj_weight``), an InfSA one in the official InfSA code's (``q_proj`` … and ``rho_logit``).

    Raises:
        ValueError: a weight torchvision's ViT has no place for (registers, a distillation head).
    """
    c, infsa = model.config, model.config.attention != "softmax"
    top, block = {v: k for k, v in _TOP.items()}, {v: k for k, v in _BLOCK.items() if "linear" not in k}
    out: dict[str, Tensor] = {}
    for key, tensor in model.state_dict().items():
        layer = re.match(r"^blocks\.(\d+)\.(.+)\.(\w+)$", key)
        if key in top:
            out[top[key]] = tensor
        elif key == "patch_embed.proj.weight":
            out["conv_proj.weight"] = tensor.reshape(c.embed_dim, c.in_chans, c.patch_size, c.patch_size)
        elif layer and layer[2] in block:
            out[f"encoder.layers.encoder_layer_{layer[1]}.{block[layer[2]]}.{layer[3]}"] = tensor
        elif layer and layer[2] == "attn.qkv":
            p = f"encoder.layers.encoder_layer_{layer[1]}.self_attention."
            if infsa:
                out.update({f"{p}{part}_proj.{layer[3]}": chunk for part, chunk in zip("qkv", tensor.chunk(3))})
            else:
                out[f"{p}in_proj_{layer[3]}"] = tensor
        elif layer and f"{layer[2]}.{layer[3]}" == "attn.rho_logit":
            out[f"encoder.layers.encoder_layer_{layer[1]}.self_attention.rho_logit"] = tensor.reshape(())
        else:
            raise ValueError(f"weight {key!r} has no place in a torchvision ViT state dict")
    return out


def _sample(variant: str, query: str):
    def write(folder: Path) -> str:
        from ._sample import SAMPLE_HEADS, sample_model, write_state

        path = write_state(folder / "vit.safetensors", to_torchvision_state_dict(sample_model(variant)))
        return f"{path}?num_heads={SAMPLE_HEADS}{query}"
    return write


def _is_official(keys: frozenset[str]) -> bool:
    return any(k.endswith("self_attention.rho_logit") for k in keys)


def _load(path: Path, options: LoadOptions) -> VisionTransformer:
    state = read_safetensors(path, map_location=options.map_location)
    model = from_torchvision_state_dict(state, num_heads=options.num_heads, variant=options.variant,
                                        preprocessing=options.preprocessing, source=str(path))
    model.config = model.config.replace(source={**(model.config.source or {}), "path": str(path)})
    return model


_OPTIONS = frozenset({"num_heads", "variant", "preprocessing"})
TORCHVISION = register_format(ModelFormat(
    "torchvision", detect=lambda c: is_torchvision_state(c.keys) and not _is_official(c.keys), load=_load,
    options=_OPTIONS, sample=_sample("softmax", ""),
    expects="a .safetensors torchvision ViT state dict (conv_proj.*, encoder.layers.*)"))
OFFICIAL_INFSA = register_format(ModelFormat(
    "official-infsa", detect=lambda c: is_torchvision_state(c.keys) and _is_official(c.keys), load=_load,
    options=_OPTIONS, sample=_sample("pure_infsa", "&variant=pure_infsa"),
    expects="the same with the official InfSA code's self_attention.rho_logit"))
