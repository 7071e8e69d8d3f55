"""The ViT family: shapes for every variant, resolution changes, save/load validation."""

from __future__ import annotations

import json

import pytest
import torch
from torch.testing import assert_close

from infsa_viz.formats import load_model
from infsa_viz.model import CONFIG_FILE, WEIGHTS_FILE, VisionTransformer, ViTConfig, save_model


def test_forward_split_matches_forward(tiny_model):
    x = torch.randn(3, 1, 16, 16)
    tokens = tiny_model.forward_features(x)
    assert tokens.shape == (3, 17, 16)
    assert_close(tiny_model.forward_head(tokens), tiny_model(x))


def test_mean_pooling_has_no_prefix_token(variant, make_config):
    model = VisionTransformer(make_config(variant, pool="mean"))
    assert model.cls_token is None and model.num_prefix_tokens == 0
    assert model.forward_features(torch.randn(1, 1, 16, 16)).shape == (1, 16, 16)


def test_patch_embedding_is_reshape_plus_linear_equal_to_conv(make_config):
    """Reshape + Linear equals a Conv2d with the same weights (timm's layout)."""
    model = VisionTransformer(make_config("softmax", in_chans=3))
    x = torch.randn(2, 3, 16, 16)
    w = model.patch_embed.proj.weight.reshape(16, 3, 4, 4)
    conv = torch.nn.functional.conv2d(x, w, model.patch_embed.proj.bias, stride=4)
    assert_close(model.patch_embed(x), conv.flatten(2).transpose(1, 2), atol=1e-5, rtol=1e-5)


def test_other_resolutions_interpolate_position_embeddings(tiny_model):
    out = tiny_model(torch.randn(1, 1, 32, 24))
    assert out.shape == (1, 3) and torch.isfinite(out).all()
    # the stored grid is returned unchanged at the training size
    assert_close(tiny_model._pos_embed_for(4, 4), tiny_model.pos_embed)


def test_bad_images_are_rejected(tiny_model):
    with pytest.raises(ValueError, match="must be \\(B, 1, H, W\\)"):
        tiny_model(torch.randn(1, 3, 16, 16))
    with pytest.raises(ValueError, match="multiples of patch_size=4"):
        tiny_model(torch.randn(1, 1, 18, 16))


def test_gradients_reach_every_parameter(variant, make_config):
    model = VisionTransformer(make_config(variant))
    model(torch.randn(2, 1, 16, 16)).sum().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert missing == []


@pytest.mark.parametrize(
    "changes,match",
    [
        (dict(img_size=50), "divisible by patch_size"),
        (dict(num_heads=3), "num_heads=3"),
        (dict(pool="max"), "pool='max'"),
        (dict(attention="flash"), "attention='flash'"),
        (dict(rho_init=0.0), "rho_init=0.0"),
        (dict(depth=0), "depth=0"),
        (dict(depth=2.5), "depth=2.5"),
    ],
)
def test_config_validation_names_the_problem(changes, match, make_config):
    with pytest.raises(ValueError, match=match):
        make_config("softmax", **changes)


def test_save_load_round_trip(tmp_path, tiny_model):
    save_model(tiny_model, tmp_path / "m")
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [CONFIG_FILE, WEIGHTS_FILE]
    loaded = load_model(tmp_path / "m")
    assert loaded.config == tiny_model.config and not loaded.training
    x = torch.randn(2, 1, 16, 16)
    assert_close(loaded(x), tiny_model(x))


def test_load_rejects_bad_configs_and_weights(tmp_path, tiny_model):
    save_model(tiny_model, tmp_path)
    config = json.loads((tmp_path / CONFIG_FILE).read_text())
    (tmp_path / CONFIG_FILE).write_text(json.dumps({**config, "colour": "red"}))
    with pytest.raises(ValueError, match="unknown keys \\['colour'\\]"):
        load_model(tmp_path)
    (tmp_path / CONFIG_FILE).write_text(json.dumps({**config, "embed_dim": 32}))
    with pytest.raises(ValueError, match="has shape"):
        load_model(tmp_path)
    (tmp_path / CONFIG_FILE).write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_model(tmp_path)
    (tmp_path / CONFIG_FILE).write_text(json.dumps(config))
    (tmp_path / WEIGHTS_FILE).write_bytes(b"\x80\x04pickle?")
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        load_model(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        load_model(tmp_path / "nope")


def test_config_dict_round_trip():
    config = ViTConfig(attention="linear_infsa", rho_per_head=True)
    assert ViTConfig.from_dict(config.to_dict()) == config
