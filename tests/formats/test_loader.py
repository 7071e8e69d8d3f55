"""One loader: format detection, ``PATH?options`` specs, timm state dicts and attention swaps."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from torch.testing import assert_close

from infsa_viz import VisionTransformer, ViTConfig, load_model, save_model
from infsa_viz.formats import detect, parse_model_spec, swap_attention
from infsa_viz.formats.timm import to_timm_state_dict

SHIPPED = sorted(p for p in (Path(__file__).parents[2] / "models").glob("*") if (p / "config.json").is_file())


def _model(**changes) -> VisionTransformer:
    base = {"img_size": 16, "in_chans": 3, "patch_size": 4, "embed_dim": 16, "depth": 2, "num_heads": 2,
            "num_classes": 3}
    return VisionTransformer(ViTConfig(**{**base, **changes})).eval()


def test_spec_options_are_parsed_and_checked():
    assert parse_model_spec("a/b.safetensors?num_heads=12&variant=pure_infsa&rho_init=0.25") == (
        "a/b.safetensors", {"num_heads": 12, "variant": "pure_infsa", "rho_init": 0.25})
    assert parse_model_spec("models/x") == ("models/x", {})
    with pytest.raises(ValueError, match="unknown option 'heads'"):
        parse_model_spec("x?heads=3")
    with pytest.raises(ValueError, match="num_heads='many'"):
        parse_model_spec("x?num_heads=many")


def test_timm_state_dict_loads_through_the_loader_and_equals_the_source(tmp_path):
    source = _model(norm_eps=1e-6)
    save_file(to_timm_state_dict(source), tmp_path / "timm.safetensors")
    assert detect(tmp_path / "timm.safetensors") == "timm"
    model = load_model(f"{tmp_path / 'timm.safetensors'}?num_heads=2")
    assert model.config.source["format"] == "timm" and not model.training
    x = torch.randn(2, 3, 16, 16)
    assert_close(model(x), source(x))
    with pytest.raises(ValueError, match="num_heads"):
        load_model(tmp_path / "timm.safetensors")


def test_swapping_the_attention_keeps_the_shared_weights_and_rho_where_both_have_it(tmp_path):
    softmax = _model()
    save_model(softmax, tmp_path / "m")
    pure = load_model(f"{tmp_path / 'm'}?convert_to=pure_infsa&rho_init=0.25")
    assert pure.config.attention == "pure_infsa" and pure.config.source["converted_from"] == "softmax"
    assert pure.rho_values() == [[0.25, 0.25]] * 2
    assert_close(pure.blocks[1].attn.qkv.weight, softmax.blocks[1].attn.qkv.weight)
    with torch.no_grad():
        pure.blocks[0].attn.rho_logit.fill_(2.0)
    linear = swap_attention(pure, "linear_infsa")
    assert linear.rho_values()[0] == pure.rho_values()[0]
    assert swap_attention(linear, "softmax").rho_values() == [[], []]
    with pytest.raises(ValueError, match="variant='dense'"):
        swap_attention(softmax, "dense")


def test_our_directories_load_as_before_and_state_options_are_refused_for_them(tmp_path):
    model = _model(attention="linear_infsa")
    save_model(model, tmp_path / "m")
    assert detect(tmp_path / "m") == "infsa-viz"
    again = load_model(tmp_path / "m")
    x = torch.randn(1, 3, 16, 16)
    assert_close(again(x), model(x))
    with pytest.raises(ValueError, match="state-dict files"):
        load_model(tmp_path / "m", num_heads=2)


@pytest.mark.parametrize("directory", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_models_load_with_the_defaults_they_were_trained_with(directory):
    config = load_model(directory).config
    assert (config.norm_eps, config.qkv_bias, config.act, config.num_prefix_tokens) == (1e-5, True, "gelu", 1)
    assert config.class_names is None and config.source is None


def test_paths_of_no_known_format_are_named(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_model(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no config.json"):
        load_model(tmp_path / "empty")
    (tmp_path / "w.pt").write_bytes(b"\x80\x04")
    with pytest.raises(ValueError, match="pickle"):
        load_model(tmp_path / "w.pt")
    save_file({"weight": torch.zeros(2)}, tmp_path / "other.safetensors")
    with pytest.raises(ValueError, match="no known ViT layout"):
        load_model(tmp_path / "other.safetensors")
    with pytest.raises(ValueError, match="format='onnx'"):
        load_model(tmp_path / "other.safetensors", format="onnx")


def test_an_unknown_option_is_refused(tmp_path):
    save_model(_model(), tmp_path / "m")
    with pytest.raises(ValueError, match="unknown option 'attention'"):
        load_model(f"{tmp_path / 'm'}?attention=pure_infsa")
    with pytest.raises(TypeError, match="unexpected keyword"):
        load_model(tmp_path / "m", attention="linear_infsa")
