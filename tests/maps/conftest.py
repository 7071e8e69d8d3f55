"""A naive ViT forward written out from the formulas, for reference implementations in tests."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F


def naive_forward(model, x, *, scale=1.0):
    """``(logits, [A per layer (B, H, N, N) with requires_grad])``, every step written out.

    Per head: softmax ``softmax(q kᵀ/√D)``; pure InfSA ``ReLU(q kᵀ)/(‖·‖_F + ε)``; Linear-InfSA
    ``1·aᵀ`` with ``a_j = ReLU(q̄·k_j)/(Σ + ε)``, ``q̄ = Σ_i ‖q_i‖ q_i / Σ‖q‖``.
    """
    x = x * scale
    B, C, H, W = x.shape
    p = model.patch_size
    patches = x.reshape(B, C, H // p, p, W // p, p).permute(0, 2, 4, 1, 3, 5).reshape(B, -1, C * p * p)
    t = patches @ model.patch_embed.proj.weight.T + model.patch_embed.proj.bias
    t = torch.cat([model.cls_token.expand(B, -1, -1), t], 1) + model.pos_embed
    mats = []
    for block in model.blocks:
        attn = block.attn
        h = F.layer_norm(t, t.shape[-1:], block.norm1.weight, block.norm1.bias, block.norm1.eps)
        heads, D = attn.num_heads, attn.head_dim
        N = h.shape[1]
        qkv = (h @ attn.qkv.weight.T + attn.qkv.bias).reshape(B, N, 3, heads, D).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        if attn.variant == "softmax":
            A = torch.softmax(q @ k.transpose(-2, -1) / D ** 0.5, -1)
        elif attn.variant == "pure_infsa":
            S = torch.relu(q @ k.transpose(-2, -1))
            A = S / (S.pow(2).sum((-2, -1), keepdim=True).sqrt() + attn.eps)
        else:
            qn = q.norm(dim=-1)
            alpha = qn / (qn.sum(-1, keepdim=True) + attn.eps)
            q_bar = (alpha.unsqueeze(-1) * q).sum(-2)  # (B, H, D)
            s = torch.relu((k * q_bar.unsqueeze(-2)).sum(-1))
            a = s / (s.sum(-1, keepdim=True) + attn.eps)
            A = a.unsqueeze(-2).repeat(1, 1, N, 1)
        mats.append(A)
        out = A @ v
        if attn.rho() is not None:
            out = out * attn.rho().view(1, -1, 1, 1)
        out = out.transpose(1, 2).reshape(B, N, heads * D) @ attn.proj.weight.T + attn.proj.bias
        t = t + out
        h2 = F.layer_norm(t, t.shape[-1:], block.norm2.weight, block.norm2.bias, block.norm2.eps)
        t = t + block.mlp.fc2(F.gelu(block.mlp.fc1(h2)))
    t = F.layer_norm(t, t.shape[-1:], model.norm.weight, model.norm.bias, model.norm.eps)
    return t[:, 0] @ model.head.weight.T + model.head.bias, mats


@pytest.fixture
def naive_vit():
    return naive_forward
