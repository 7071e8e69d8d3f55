"""Capture parity: the attention recorded during a fused forward (SDPA for softmax, the blockwise
path for pure InfSA) equals an eager recomputation written out naively here, for every variant and
every architecture the config builds (ViT, DeiT, DINOv2 with registers, CLIP, timm's q/k norm and
fc_norm), at a non-square input; and, for the transformers backbones, transformers' own eager
attention. Tolerance 1e-5 (float32).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from infsa_viz.model import VisionTransformer, ViTConfig
from infsa_viz.model.attention import VARIANTS, set_infsa_impl
from infsa_viz.model.capture import capture_attention
from infsa_viz.preprocess import Preprocessing

RGB = Preprocessing(mean=(0.5,), std=(0.5,))
BASE = dict(img_size=32, in_chans=3, patch_size=8, embed_dim=24, depth=2, num_heads=3, num_classes=5,
            preprocessing=RGB)
ARCHITECTURES = {
    "vit": {},
    "deit-distilled": {"distillation_token": True, "distillation_head": True},
    "dinov2-registers": {"register_tokens": 4, "layer_scale": True, "pool": "cls_mean", "norm_eps": 1e-6,
                         "pos_interpolation": "bicubic_antialias"},
    "clip": {"norm_pre": True, "act": "quick_gelu", "projection_dim": 8, "num_classes": 0},
    "clip-zero-shot": {"norm_pre": True, "act": "quick_gelu", "projection_dim": 8, "head": "cosine",
                       "logit_scale": 100.0},
    "timm-qk-norm-fc-norm": {"qk_norm": True, "final_norm": "pooled", "pool": "mean", "class_token": True,
                             "register_tokens": 2, "class_pos_embed": False},
}
SIZE = (24, 40)  # 3 × 5 patches: position embeddings interpolated from the stored 4 × 4


def _model(architecture: str, variant: str) -> VisionTransformer:
    torch.manual_seed(0)
    model = VisionTransformer(ViTConfig(**{**BASE, **ARCHITECTURES[architecture]}, attention=variant)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("rho_logit"):
                continue
            p.copy_((1.0 if name.endswith(("gamma", "norm1.weight", "norm2.weight")) else 0.0) + torch.randn_like(p) * 0.3)
    return model


def _naive_matrix(variant: str, q: torch.Tensor, k: torch.Tensor, eps: float) -> torch.Tensor:
    """The operator's (B, H, N, N) matrix from its definition (attention.py's module docstring)."""
    if variant == "softmax":
        return torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    if variant == "pure_infsa":
        S = torch.relu(q @ k.transpose(-2, -1))
        return S / (S.pow(2).sum((-2, -1), keepdim=True).sqrt() + eps)
    q_norm = q.norm(dim=-1)  # (B, H, N)
    alpha = q_norm / (q_norm.sum(-1, keepdim=True) + eps)
    q_bar = (alpha.unsqueeze(-1) * q).sum(-2)  # (B, H, D)
    s = torch.relu((k * q_bar.unsqueeze(-2)).sum(-1))  # (B, H, N)
    a = s / (s.sum(-1, keepdim=True) + eps)
    return a.unsqueeze(-2).expand(*a.shape, a.shape[-1])


@torch.no_grad()
def _eager(model: VisionTransformer, x: torch.Tensor) -> list[torch.Tensor]:
    """Every layer's matrix, recomputed eagerly block by block from the tokens entering the first block."""
    entering: list[torch.Tensor] = []
    handle = model.blocks[0].register_forward_pre_hook(lambda _m, args: entering.append(args[0]))
    with torch.no_grad():
        model(x)
    handle.remove()
    tokens, matrices = entering[0], []
    for block in model.blocks:
        attn = block.attn
        B, N, C = tokens.shape
        H, D = attn.num_heads, attn.head_dim
        h = F.layer_norm(tokens, (C,), block.norm1.weight, block.norm1.bias, block.norm1.eps)
        q, k, v = (h @ attn.qkv.weight.T + attn.qkv.bias).reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4)
        if hasattr(attn, "q_norm"):
            q = F.layer_norm(q, (D,), attn.q_norm.weight, attn.q_norm.bias, attn.q_norm.eps)
            k = F.layer_norm(k, (D,), attn.k_norm.weight, attn.k_norm.bias, attn.k_norm.eps)
        A = _naive_matrix(attn.variant, q, k, getattr(attn, "eps", 1e-6))
        matrices.append(A)
        rho = attn.rho()
        heads = A @ v if rho is None else rho.view(1, H, 1, 1) * (A @ v)
        out = heads.transpose(1, 2).reshape(B, N, C) @ attn.proj.weight.T + attn.proj.bias
        tokens = tokens + (out * block.ls1.gamma if hasattr(block.ls1, "gamma") else out)
        h = F.layer_norm(tokens, (C,), block.norm2.weight, block.norm2.bias, block.norm2.eps)
        out = block.mlp(h)
        tokens = tokens + (out * block.ls2.gamma if hasattr(block.ls2, "gamma") else out)
    return matrices


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_captured_attention_of_a_fused_forward_equals_an_eager_recomputation(architecture, variant):
    model = _model(architecture, variant)
    model.set_fused_attention(True)
    set_infsa_impl(model, "blockwise", block_size=4, key_block_size=8)  # pure InfSA's fused path
    x = torch.randn(2, 3, *SIZE)
    _, records = capture_attention(model, x)
    expected = _eager(model, x)
    prefix = model.config.num_prefix_tokens
    for record, matrix in zip(records, expected, strict=True):
        assert record.grid == (SIZE[0] // 8, SIZE[1] // 8) and record.num_prefix_tokens == prefix
        assert record.num_tokens == prefix + 15
        assert float((record.attention_matrix() - matrix).abs().max()) <= 1e-5


transformers_cases = {
    "dinov2-registers": ("Dinov2WithRegistersModel", "Dinov2WithRegistersConfig", {"num_register_tokens": 3}),
    "clip-vision": ("CLIPVisionModel", "CLIPVisionConfig", {"intermediate_size": 48}),
}


@pytest.mark.parametrize("case", transformers_cases)
def test_captured_attention_equals_transformers_eager_attention(tmp_path, case):
    transformers = pytest.importorskip("transformers")
    from infsa_viz import load_model

    architecture, config_class, changes = transformers_cases[case]
    config = getattr(transformers, config_class)(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                                 image_size=28, patch_size=14, attn_implementation="eager", **changes)
    torch.manual_seed(0)
    hf = getattr(transformers, architecture)(config).eval()
    with torch.no_grad():
        for name, p in hf.named_parameters():
            p.copy_((1.0 if "layer_scale" in name else 0.0) + torch.randn_like(p) * 0.3)
    hf.save_pretrained(tmp_path)
    ours = load_model(tmp_path)
    assert ours.blocks[0].attn.fused  # SDPA
    x = torch.randn(2, 3, 42, 70)
    with torch.no_grad():
        kwargs = {"interpolate_pos_encoding": True} if "CLIP" in architecture else {}
        expected = hf(pixel_values=x, output_attentions=True, **kwargs).attentions
    _, records = capture_attention(ours, x)
    assert len(records) == len(expected) == 2
    for record, matrix in zip(records, expected):
        assert float((record.attention_matrix() - matrix).abs().max()) <= 1e-5
