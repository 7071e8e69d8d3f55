"""transformers DINOv2 (± registers) and CLIP vision directories → our ViT: same outputs at the native and
at a non-square input size, and every default map on the patch grid (register tokens left out).

The models are built here with transformers (random weights, offline), saved with ``save_pretrained``
and read back by :func:`infsa_viz.load_model`, which never imports transformers; the reference is
transformers' eager forward.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from infsa_viz import load_model
from infsa_viz.evaluation import default_methods
from infsa_viz.forward import ForwardRecord
from infsa_viz.maps import METHODS

transformers = pytest.importorskip("transformers")

PATCH = 14
NATIVE = 28  # a 2 × 2 stored grid
SIZES = {"native": (NATIVE, NATIVE), "non-square": (42, 70)}  # 3 × 5 patches: interpolated, upsampled
SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, image_size=NATIVE, patch_size=PATCH)

#: case → (transformers class, config class, config changes, what to compare, register tokens)
CASES = {
    "dinov2-classifier": ("Dinov2ForImageClassification", "Dinov2Config", {"num_labels": 5}, "logits", 0),
    "dinov2-model": ("Dinov2Model", "Dinov2Config", {}, "pooler_output", 0),
    "dinov2-registers-classifier": ("Dinov2WithRegistersForImageClassification", "Dinov2WithRegistersConfig",
                                    {"num_labels": 5, "num_register_tokens": 4}, "logits", 4),
    "dinov2-registers-model": ("Dinov2WithRegistersModel", "Dinov2WithRegistersConfig",
                               {"num_register_tokens": 2}, "pooler_output", 2),
    "clip-vision": ("CLIPVisionModel", "CLIPVisionConfig", {"intermediate_size": 48}, "pooler_output", 0),
    "clip-vision-projection": ("CLIPVisionModelWithProjection", "CLIPVisionConfig",
                               {"intermediate_size": 48, "projection_dim": 12}, "image_embeds", 0),
}


def _randomise(model: torch.nn.Module, seed: int, scale: float = 0.3) -> None:
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_scale" in name:  # DINOv2's layer scale: values around 1 keep the branches alive
                p.copy_(1 + torch.randn_like(p) * scale)
            else:
                p.copy_(torch.randn_like(p) * scale)


def build_backbone(path, case: str, *, seed: int = 0, small: dict | None = None):
    """A small transformers backbone of ``case`` with random weights, saved to ``path``; returns it (eager)."""
    architecture, config_class, changes, _, _ = CASES[case]
    config = getattr(transformers, config_class)(**{**(small or SMALL), **changes}, attn_implementation="eager")
    model = getattr(transformers, architecture)(config).eval()
    _randomise(model, seed)
    model.save_pretrained(path)
    return model


def _reference(model, x: torch.Tensor, output: str) -> torch.Tensor:
    kwargs = {"interpolate_pos_encoding": True} if "CLIP" in type(model).__name__ else {}
    with torch.no_grad():
        return getattr(model(pixel_values=x, **kwargs), output)


@pytest.mark.parametrize("case", CASES)
def test_outputs_equal_transformers_at_native_and_non_square_sizes(tmp_path, case):
    hf = build_backbone(tmp_path / case, case)
    ours = load_model(tmp_path / case)
    output, registers = CASES[case][3], CASES[case][4]
    assert ours.config.register_tokens == registers
    assert ours.num_prefix_tokens == 1 + registers
    assert ours.config.source["architecture"] == CASES[case][0]
    torch.manual_seed(1)
    for size in SIZES.values():
        x = torch.randn(2, 3, *size)
        expected = _reference(hf, x, output)
        with torch.no_grad():
            got = ours(x)
        assert got.shape == expected.shape
        assert_close(got, expected, atol=1e-4, rtol=1e-4)
        assert float((got - expected).abs().max()) < 1e-4


def test_a_whole_clip_model_loads_its_vision_side(tmp_path):
    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48)
    config = transformers.CLIPConfig(
        vision_config={**small, "image_size": NATIVE, "patch_size": PATCH},
        text_config={**small, "vocab_size": 64, "max_position_embeddings": 16, "bos_token_id": 62,
                     "eos_token_id": 63, "pad_token_id": 0},
        projection_dim=12, attn_implementation="eager")
    hf = transformers.CLIPModel(config).eval()
    _randomise(hf, 0)
    hf.save_pretrained(tmp_path / "clip")
    ours = load_model(tmp_path / "clip")
    assert ours.config.source["architecture"] == "CLIPModel" and ours.config.projection_dim == 12
    for size in SIZES.values():
        x = torch.randn(2, 3, *size)
        with torch.no_grad():
            expected = hf.get_image_features(pixel_values=x, interpolate_pos_encoding=True)
            expected = getattr(expected, "pooler_output", expected)  # transformers 5 returns an output object
            assert_close(ours(x), expected, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("case", ["dinov2-registers-classifier", "clip-vision-projection"])
def test_every_default_map_is_on_the_patch_grid_without_the_registers(tmp_path, case):
    build_backbone(tmp_path / case, case)
    ours = load_model(tmp_path / case)
    h, w = SIZES["non-square"]
    x = torch.randn(1, 3, h, w)
    record = ForwardRecord(ours, x)
    for name in default_methods():
        maps = METHODS[name].attribute(record).maps
        assert tuple(maps.shape) == (1, h // PATCH, w // PATCH), name
        assert bool(torch.isfinite(maps).all()), name


def test_dinov2_registers_get_no_position_embedding_and_sit_after_the_class_token(tmp_path):
    """Changing a register token changes the outputs; the stored positions are class + grid only."""
    build_backbone(tmp_path / "m", "dinov2-registers-model")
    ours = load_model(tmp_path / "m")
    assert ours.pos_embed.shape[1] == 1 + (NATIVE // PATCH) ** 2
    assert ours.reg_token.shape == (1, 2, 32)
    x = torch.randn(1, 3, NATIVE, NATIVE)
    with torch.no_grad():
        tokens = ours.forward_features(x)
    assert tokens.shape[1] == 1 + 2 + (NATIVE // PATCH) ** 2


def test_refusals_name_the_key(tmp_path):
    build_backbone(tmp_path / "m", "dinov2-model")
    config = tmp_path / "m" / "config.json"
    import json

    data = json.loads(config.read_text())
    config.write_text(json.dumps({**data, "use_swiglu_ffn": True}))
    with pytest.raises(ValueError, match="use_swiglu_ffn"):
        load_model(tmp_path / "m")
    config.write_text(json.dumps({**data, "model_type": "dinov3"}))
    with pytest.raises(ValueError, match="model_type='dinov3'.*expected one of"):
        load_model(tmp_path / "m")


@pytest.mark.slow
@pytest.mark.parametrize("case", ["dinov2-registers-classifier", "clip-vision-projection"])
def test_vit_b_size_equals_transformers(tmp_path, case):
    """ViT-B widths (12 layers, 768 wide, 12 heads) at 224 and a non-square 224 × 336 input."""
    base = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, image_size=224, patch_size=PATCH)
    if "clip" in case:
        base["intermediate_size"] = 3072
    hf = build_backbone(tmp_path / case, case, small=base)
    with torch.no_grad():  # ViT-B's residual stream grows with N(0, 0.3²) weights: a realistic scale
        for name, p in hf.named_parameters():
            if p.dim() == 2:
                p.mul_(0.02 / 0.3)
    hf.save_pretrained(tmp_path / case)
    ours = load_model(tmp_path / case)
    for size in ((224, 224), (224, 336)):
        x = torch.randn(1, 3, *size)
        assert_close(ours(x).detach(), _reference(hf, x, CASES[case][3]), atol=1e-4, rtol=1e-4)


def test_a_shortest_edge_processor_without_crop_keeps_the_aspect(tmp_path):
    """BitImageProcessor (DINOv2) with do_center_crop false: shorter side to the model's size, the longer side
    scaled as transformers does (truncated), then cut to whole patches; the model reads the non-square grid."""
    import json

    import numpy as np

    from infsa_viz import prepare

    build_backbone(tmp_path / "m", "dinov2-registers-classifier")
    (tmp_path / "m" / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "BitImageProcessor", "size": {"shortest_edge": NATIVE}, "do_center_crop": False,
        "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225], "resample": 3}))
    ours = load_model(tmp_path / "m")
    assert ours.config.preprocessing.resize == "shortest_edge"
    image = np.random.default_rng(0).integers(0, 256, (60, 100, 3), dtype=np.uint8)  # → 28 × 46 → 28 × 42
    prepared = prepare(ours, [image])
    assert prepared.tensor.shape == (1, 3, 28, 42)
    assert prepared.boxes(0, [[0, 0, 100, 60]]).tolist() == [[0, 0, 42, 28]]
    with torch.no_grad():
        assert ours(prepared.tensor).shape == (1, 5)
    with pytest.raises(ValueError, match="one shape per batch"):
        prepare(ours, [image, image[:, :60]])
    bit_defaults = transformers.BitImageProcessor(do_center_crop=False, size={"shortest_edge": NATIVE})
    pixels = bit_defaults(images=image, return_tensors="pt", do_normalize=False, do_rescale=False).pixel_values
    assert tuple(pixels.shape[-2:]) == (28, 46)  # the same resized size before our cut to whole patches


def test_info_names_registers_and_the_output(tmp_path):
    from infsa_viz.formats import describe_model

    build_backbone(tmp_path / "m", "dinov2-registers-model")
    info = describe_model(load_model(tmp_path / "m"))
    assert (info["prefix_tokens"], info["register_tokens"], info["output"]) == (3, 2, "embedding")


@pytest.mark.parametrize("variant", ["pure_infsa", "linear_infsa"])
def test_a_pretrained_backbone_becomes_an_infsa_model(tmp_path, variant):
    """?convert_to= keeps every weight (registers, layer scale, pre-norm, projection) under another operator."""
    for case in ("dinov2-registers-classifier", "clip-vision-projection"):
        build_backbone(tmp_path / case, case)
        softmax = load_model(tmp_path / case)
        converted = load_model(f"{tmp_path / case}?convert_to={variant}")
        assert converted.config.attention == variant
        kept = {k: v for k, v in converted.state_dict().items() if not k.endswith("rho_logit")}
        assert kept.keys() == softmax.state_dict().keys()
        for key, value in kept.items():
            assert torch.equal(value, softmax.state_dict()[key]), key
        with torch.no_grad():
            assert bool(torch.isfinite(converted(torch.randn(1, 3, 42, 70))).all())
