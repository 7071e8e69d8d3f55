"""Importing a timm-format ViT state dict (built here; no timm or download needed)."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from infsa_viz.formats.timm import IMAGENET, from_timm_state_dict, to_timm_state_dict
from infsa_viz.model import VisionTransformer, ViTConfig


def timm_like(in_chans=3) -> tuple[VisionTransformer, dict]:
    torch.manual_seed(0)
    model = VisionTransformer(ViTConfig(img_size=32, in_chans=in_chans, patch_size=8, embed_dim=24, depth=2,
                                        num_heads=3, num_classes=5, norm_eps=1e-6,
                                        pos_interpolation="bicubic_antialias", source={"format": "timm"})).eval()
    return model, to_timm_state_dict(model)


def test_round_trip_reproduces_the_model():
    model, state = timm_like()
    assert state["patch_embed.proj.weight"].shape == (24, 3, 8, 8)  # timm's Conv2d layout
    imported = from_timm_state_dict(state, num_heads=3, preprocessing=model.config.preprocessing).eval()
    assert imported.config == model.config
    assert from_timm_state_dict(state, num_heads=3).config.preprocessing == IMAGENET  # a state dict records none
    x = torch.randn(2, 3, 32, 32)
    assert_close(imported(x), model(x))


def test_conv_layout_matches_a_real_conv_patch_embedding():
    """Our Linear patch embedding with the imported weight equals timm's Conv2d."""
    _, state = timm_like()
    imported = from_timm_state_dict(state, num_heads=3)
    x = torch.randn(1, 3, 32, 32)
    conv = torch.nn.functional.conv2d(x, state["patch_embed.proj.weight"], state["patch_embed.proj.bias"], stride=8)
    assert_close(imported.patch_embed(x), conv.flatten(2).transpose(1, 2), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("variant", ["pure_infsa", "linear_infsa"])
def test_import_into_infsa_keeps_shared_weights(variant):
    _, state = timm_like()
    model = from_timm_state_dict(state, num_heads=3, attention=variant, num_classes=7)
    assert model.config.attention == variant and model.head.out_features == 7
    assert_close(model.blocks[1].attn.qkv.weight, state["blocks.1.attn.qkv.weight"])
    assert model.rho_values() == [[0.5] * 3, [0.5] * 3]


def test_bad_state_dicts_are_named():
    _, state = timm_like()
    with pytest.raises(ValueError, match=r"\['attn_pool.latent'\].*attention pooling"):
        from_timm_state_dict({**state, "attn_pool.latent": torch.zeros(1, 1, 24)}, num_heads=3)
    with pytest.raises(ValueError, match="pos_embed"):
        from_timm_state_dict({k: v for k, v in state.items() if k != "pos_embed"}, num_heads=3)
    with pytest.raises(ValueError, match="num_heads=5"):
        from_timm_state_dict(state, num_heads=5)


def test_import_command(tmp_path, capsys):
    from safetensors.torch import save_file

    from infsa_viz import load_model
    from infsa_viz.cli import main

    _, state = timm_like(in_chans=1)
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp_path / "vit.safetensors"))
    assert main(["import-timm", str(tmp_path / "vit.safetensors"), "--num-heads", "3", "--variant",
                 "linear_infsa", "--mean", "0.5", "--std", "0.25", "--out", str(tmp_path / "m")]) == 0
    config = load_model(tmp_path / "m").config
    assert config.attention == "linear_infsa" and (config.preprocessing.mean, config.preprocessing.std) == ((0.5,), (0.25,))
    assert main(["import-timm", str(tmp_path / "vit.safetensors"), "--num-heads", "3", "--out", str(tmp_path / "y")]) == 2
    assert "takes 1 input channel(s)" in capsys.readouterr().err  # ImageNet's 3 means need --mean/--std
    (tmp_path / "vit.pt").write_bytes(b"pickle")
    assert main(["import-timm", str(tmp_path / "vit.pt"), "--num-heads", "3", "--out", str(tmp_path / "x")]) == 2
    assert "no pickle loading" in capsys.readouterr().err


def _timm_forward(state: dict, x: torch.Tensor, *, heads: int, registers: int, no_embed_class: bool,
                  pool: str) -> torch.Tensor:
    """timm's ``VisionTransformer.forward`` written out naively from its source (timm 1.0
    ``vision_transformer.py``: ``_pos_embed``, ``Block`` with ``ls1``/``ls2``, ``Attention`` with
    ``q_norm``/``k_norm``, ``norm_pre``, ``fc_norm``, ``forward_head``), at the stored grid."""
    F = torch.nn.functional
    ln = lambda t, name: F.layer_norm(t, t.shape[-1:], state[f"{name}.weight"], state[f"{name}.bias"], 1e-6)  # noqa: E731
    B = x.shape[0]
    tokens = F.conv2d(x, state["patch_embed.proj.weight"], state["patch_embed.proj.bias"],
                      stride=state["patch_embed.proj.weight"].shape[-1]).flatten(2).transpose(1, 2)
    prefix = [state["cls_token"].expand(B, -1, -1)] + ([state["reg_token"].expand(B, -1, -1)] if registers else [])
    if no_embed_class:
        tokens = torch.cat(prefix + [tokens + state["pos_embed"]], dim=1)
    else:
        tokens = torch.cat(prefix + [tokens], dim=1) + state["pos_embed"]
    if "norm_pre.weight" in state:
        tokens = ln(tokens, "norm_pre")
    depth = len({k.split(".")[1] for k in state if k.startswith("blocks.")})
    for i in range(depth):
        b = f"blocks.{i}."
        h = ln(tokens, b + "norm1")
        N, C = h.shape[1], h.shape[2]
        qkv = F.linear(h, state[b + "attn.qkv.weight"], state[b + "attn.qkv.bias"])
        q, k, v = qkv.reshape(B, N, 3, heads, C // heads).permute(2, 0, 3, 1, 4)
        if b + "attn.q_norm.weight" in state:
            q, k = ln(q, b + "attn.q_norm"), ln(k, b + "attn.k_norm")
        attn = torch.softmax(q @ k.transpose(-2, -1) * (C // heads) ** -0.5, dim=-1)
        out = F.linear((attn @ v).transpose(1, 2).reshape(B, N, C), state[b + "attn.proj.weight"],
                       state[b + "attn.proj.bias"])
        tokens = tokens + out * state.get(b + "ls1.gamma", torch.ones(C))
        h = F.linear(F.gelu(F.linear(ln(tokens, b + "norm2"), state[b + "mlp.fc1.weight"], state[b + "mlp.fc1.bias"])),
                     state[b + "mlp.fc2.weight"], state[b + "mlp.fc2.bias"])
        tokens = tokens + h * state.get(b + "ls2.gamma", torch.ones(C))
    if "norm.weight" in state:
        tokens = ln(tokens, "norm")
    pooled = tokens[:, 1 + registers:].mean(1) if pool == "avg" else tokens[:, 0]
    if "fc_norm.weight" in state:
        pooled = ln(pooled, "fc_norm")
    return F.linear(pooled, state["head.weight"], state["head.bias"]) if "head.weight" in state else pooled


def _timm_state(*, registers: int, no_embed_class: bool, fc_norm: bool, head: bool = True, seed: int = 0) -> dict:
    """A random timm ViT state dict (dim 24, 3 heads, 2 blocks, patch 8, 4 × 4 grid) with layer scale,
    q/k norm and norm_pre; registers with or without positions; fc_norm (avg pool) or norm."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape, scale=0.3: torch.randn(*shape, generator=g) * scale  # noqa: E731
    state = {"patch_embed.proj.weight": r(24, 3, 8, 8), "patch_embed.proj.bias": r(24), "cls_token": r(1, 1, 24),
             "pos_embed": r(1, 16 + (0 if no_embed_class else 1 + registers), 24),
             "norm_pre.weight": 1 + r(24), "norm_pre.bias": r(24)}
    if registers:
        state["reg_token"] = r(1, registers, 24)
    for i in range(2):
        b = f"blocks.{i}."
        for name, shape in (("norm1", 24), ("norm2", 24), ("attn.q_norm", 8), ("attn.k_norm", 8)):
            state[b + name + ".weight"], state[b + name + ".bias"] = 1 + r(shape), r(shape)
        for name, (rows, cols) in (("attn.qkv", (72, 24)), ("attn.proj", (24, 24)), ("mlp.fc1", (48, 24)),
                                   ("mlp.fc2", (24, 48))):
            state[b + name + ".weight"], state[b + name + ".bias"] = r(rows, cols), r(rows)
        state[b + "ls1.gamma"], state[b + "ls2.gamma"] = 1 + r(24), 1 + r(24)
    norm = "fc_norm" if fc_norm else "norm"
    state[norm + ".weight"], state[norm + ".bias"] = 1 + r(24), r(24)
    if head:
        state["head.weight"], state["head.bias"] = r(5, 24), r(5)
    return state


@pytest.mark.parametrize("registers, no_embed_class, fc_norm", [(0, False, False), (4, False, False),
                                                                (4, True, False), (2, False, True), (0, True, True)])
def test_timm_features_equal_a_naive_timm_forward(registers, no_embed_class, fc_norm):
    """Register tokens (with or without positions), layer scale, q/k norm, norm_pre, fc_norm (avg pool)."""
    state = _timm_state(registers=registers, no_embed_class=no_embed_class, fc_norm=fc_norm)
    model = from_timm_state_dict(state, num_heads=3)
    config = model.config
    assert (config.register_tokens, config.layer_scale, config.qk_norm, config.norm_pre) == (registers, True, True, True)
    assert config.final_norm == ("pooled" if fc_norm else "tokens") and config.pool == ("mean" if fc_norm else "cls")
    assert model.num_prefix_tokens == 1 + registers
    x = torch.randn(2, 3, 32, 32)
    expected = _timm_forward(state, x, heads=3, registers=registers, no_embed_class=no_embed_class,
                             pool="avg" if fc_norm else "token")
    with torch.no_grad():
        assert_close(model(x), expected, atol=1e-5, rtol=1e-5)
    again = from_timm_state_dict(to_timm_state_dict(model), num_heads=3)  # our export reads back the same
    with torch.no_grad():
        assert_close(again(x), expected, atol=1e-5, rtol=1e-5)


def test_a_headless_timm_state_dict_gives_the_embedding():
    state = _timm_state(registers=4, no_embed_class=True, fc_norm=False, head=False)
    model = from_timm_state_dict(state, num_heads=3)
    assert model.config.num_classes == 0
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        assert_close(model(x), _timm_forward(state, x, heads=3, registers=4, no_embed_class=True, pool="token"),
                     atol=1e-5, rtol=1e-5)
    assert from_timm_state_dict(state, num_heads=3, num_classes=7).head.out_features == 7
