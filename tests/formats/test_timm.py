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
                                        source={"format": "timm"})).eval()
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
    with pytest.raises(ValueError, match="reg_token"):
        from_timm_state_dict({**state, "reg_token": torch.zeros(1, 4, 24)}, num_heads=3)
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
