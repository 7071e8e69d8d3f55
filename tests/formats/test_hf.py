"""transformers ViT / DeiT directories → our ViT: same logits, same attention, same preprocessing.

The models are built here with transformers (random weights, offline), saved with
``save_pretrained`` and read back by our loader, which itself never imports transformers.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from infsa_viz import capture_attention, load_model, prepare
from infsa_viz.formats import describe_model, detect
from infsa_viz.formats.hf import preprocessing_from_hf

transformers = pytest.importorskip("transformers")

CASES = {
    "vit": ("ViTForImageClassification", {}),
    "vit-no-qkv-bias-tanh-gelu": ("ViTForImageClassification", {"qkv_bias": False, "hidden_act": "gelu_new",
                                                                "layer_norm_eps": 1e-6}),
    "deit": ("DeiTForImageClassification", {}),
    "deit-distilled": ("DeiTForImageClassificationWithTeacher", {}),
}


def build_hf(path, architecture: str = "ViTForImageClassification", *, num_labels: int = 5, seed: int = 0,
             image_size: int = 32, **changes):
    """A small transformers image classifier with random weights (every parameter N(0, 0.3²))."""
    config_class = transformers.DeiTConfig if architecture.startswith("DeiT") else transformers.ViTConfig
    config = config_class(image_size=image_size, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=48, attn_implementation="eager",
                          id2label={i: f"class {i}" for i in range(num_labels)},
                          label2id={f"class {i}": i for i in range(num_labels)}, **changes)
    torch.manual_seed(seed)
    model = getattr(transformers, architecture)(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    model.save_pretrained(path)
    return model


@pytest.mark.parametrize("case", CASES)
def test_logits_and_every_layers_attention_equal_transformers(tmp_path, case):
    architecture, changes = CASES[case]
    hf = build_hf(tmp_path / case, architecture, **changes)
    ours = load_model(tmp_path / case)
    assert detect(tmp_path / case) == "transformers"
    assert ours.config.class_names == tuple(f"class {i}" for i in range(5))
    assert ours.num_prefix_tokens == (2 if architecture.startswith("DeiT") else 1)
    x = torch.randn(3, 3, 32, 32)
    with torch.no_grad():
        reference = hf(pixel_values=x, output_attentions=True)
    logits, records = capture_attention(ours, x)
    assert_close(logits, reference.logits, atol=1e-5, rtol=1e-5)
    assert len(records) == len(reference.attentions) == 2
    for record, expected in zip(records, reference.attentions):  # (B, H, N, N) per layer
        assert_close(record.attention_matrix(), expected, atol=1e-5, rtol=1e-5)


def test_the_converted_model_is_ours_whatever_kernel_transformers_used(tmp_path):
    """SDPA in transformers, fused or explicit softmax in ours: capture recomputes from q and k."""
    build_hf(tmp_path / "m")
    sdpa = transformers.ViTForImageClassification.from_pretrained(tmp_path / "m", attn_implementation="sdpa").eval()
    eager = transformers.ViTForImageClassification.from_pretrained(tmp_path / "m", attn_implementation="eager").eval()
    ours = load_model(tmp_path / "m")
    x = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        expected = eager(pixel_values=x, output_attentions=True).attentions
        assert_close(ours(x), sdpa(pixel_values=x).logits, atol=1e-5, rtol=1e-5)
    for fused in (True, False):
        ours.set_fused_attention(fused)
        _, records = capture_attention(ours, x)
        for record, reference in zip(records, expected):
            assert_close(record.attention_matrix(), reference, atol=1e-5, rtol=1e-5)


def test_the_loader_does_not_import_transformers(tmp_path):
    build_hf(tmp_path / "m")
    code = ("import sys; from infsa_viz import load_model; m = load_model(sys.argv[1]); "
            "assert 'transformers' not in sys.modules, 'transformers was imported'; print(m.config.num_classes)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m")], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "5"


def test_preprocessor_config_is_read_and_matches_the_pil_processor_geometry(tmp_path):
    build_hf(tmp_path / "m")
    processor = transformers.ViTImageProcessorPil(size={"height": 32, "width": 32}, resample=0,
                                                  image_mean=[0.2, 0.4, 0.6], image_std=[0.1, 0.2, 0.3])
    processor.save_pretrained(tmp_path / "m")
    model = load_model(tmp_path / "m")
    how = model.config.preprocessing
    assert (how.resize, how.resample, how.crop_fraction) == ("stretch", "nearest", 1.0)
    assert_close(torch.tensor(how.mean), torch.tensor([0.2, 0.4, 0.6]), atol=1e-7, rtol=0)
    # A 64×96 image whose 2×3 blocks are constant: nearest resizing picks one pixel per block in
    # both libraries, so the inputs are equal, normalisation included.
    rng = np.random.default_rng(0)
    image = np.repeat(np.repeat(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8), 2, axis=0), 3, axis=1)
    ours = prepare(model, [image]).tensor
    reference = processor(images=[image], return_tensors="pt")["pixel_values"]
    assert_close(ours, reference, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("processor", "expected"), [
    ({"size": {"height": 32, "width": 32}}, {"resize": "stretch", "crop_fraction": 1.0, "resample": "bilinear"}),
    ({"size": {"shortest_edge": 40}, "do_center_crop": True, "crop_size": {"height": 32, "width": 32},
      "resample": 3}, {"resize": "center_crop", "crop_fraction": 0.8, "resample": "bicubic"}),
    ({"size": {"height": 64, "width": 64}, "do_center_crop": True, "crop_size": 32, "resample": 4},
     {"resize": "stretch", "crop_fraction": 0.5, "resample": "area"}),
])
def test_resize_and_crop_policies_map_to_ours(processor, expected):
    how = preprocessing_from_hf(processor, img_size=32)
    assert {k: getattr(how, k) for k in expected} == expected


_PIL = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "area"}


@pytest.mark.parametrize(("architecture", "processor"), [
    ("DeiTForImageClassification", {"image_processor_type": "ViTImageProcessor"}),  # the reported case
    ("DeiTForImageClassification", "saved ViTImageProcessorPil"),
    ("ViTForImageClassification", {"image_processor_type": "DeiTImageProcessor"}),
    ("ViTForImageClassification", {"feature_extractor_type": "DeiTFeatureExtractor"}),
    ("DeiTForImageClassification", {}),  # no processor class: the model's type decides
    ("ViTForImageClassification", {}),
], ids=["deit+vit-type", "deit+saved-vit", "vit+deit-type", "vit+deit-extractor", "deit+none", "vit+none"])
def test_the_processor_class_decides_the_defaults_as_transformers_does(tmp_path, architecture, processor):
    """transformers' AutoImageProcessor builds the class the file names and fills what it leaves
    out with that class's defaults; the resize/crop geometry we derive must be the one it applies."""
    build_hf(tmp_path, architecture, image_size=224)
    if processor == "saved ViTImageProcessorPil":
        transformers.ViTImageProcessorPil(size={"height": 224, "width": 224}).save_pretrained(tmp_path)
    else:
        (tmp_path / "preprocessor_config.json").write_text(json.dumps(processor))
    reference = transformers.AutoImageProcessor.from_pretrained(tmp_path)
    crops = bool(getattr(reference, "do_center_crop", False))
    fraction = reference.crop_size["height"] / reference.size["height"] if crops else 1.0
    how = load_model(tmp_path).config.preprocessing
    assert (how.crop_fraction, how.resize, how.resample) == (fraction, "stretch", _PIL[reference.resample])
    assert how.mean == pytest.approx(tuple(reference.image_mean)) and how.std == pytest.approx(tuple(reference.image_std))
    if processor == {"image_processor_type": "ViTImageProcessor"}:
        assert how.crop_fraction == 1.0  # a DeiT model with a ViT processor: no 224-from-256 crop


def test_an_unknown_processor_class_is_refused_naming_it(tmp_path):
    build_hf(tmp_path)
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"image_processor_type": "SiglipImageProcessor"}))
    with pytest.raises(ValueError, match=r"preprocessor_config.json: image_processor_type='SiglipImageProcessor' is not"):
        load_model(tmp_path)


@pytest.mark.parametrize(("key", "value", "match"), [
    ("rescale_factor", 0, r"rescale_factor=0 is invalid; expected a positive finite number"),
    ("image_mean", None, r"image_mean=None is invalid"),
    ("image_std", ["abc", 1, 1], r"image_std=\['abc', 1, 1\] is invalid"),
    ("image_std", [0, 1, 1], r"image_std=\[0, 1, 1\] is invalid"),
    ("size", {"height": 0, "width": 0}, r"size=.* expected one integer"),
    ("do_center_crop", "yes", r"do_center_crop='yes' is invalid; expected true or false"),
])
def test_malformed_processor_values_are_one_line_naming_file_and_key(tmp_path, key, value, match):
    build_hf(tmp_path)
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({key: value}))
    with pytest.raises(ValueError, match="preprocessor_config.json: " + match):
        load_model(tmp_path)


@pytest.mark.parametrize(("key", "value", "match"), [
    ("hidden_size", 0, r"hidden_size=0 is invalid; expected an integer"),
    ("hidden_size", "32", r"hidden_size='32' is invalid"),
    ("intermediate_size", 1e300, r"intermediate_size=1e\+300 is invalid"),
    ("layer_norm_eps", "abc", r"layer_norm_eps='abc' is invalid"),
    ("hidden_act", ["gelu"], r"hidden_act=\['gelu'\] is not supported"),
    ("architectures", 7, r"architectures=7 is invalid"),
])
def test_malformed_config_values_are_one_line_naming_file_and_key(tmp_path, key, value, match):
    build_hf(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, key: value}))
    with pytest.raises(ValueError, match="config.json: " + match):
        load_model(tmp_path)


def test_nested_json_and_link_loops_are_named(tmp_path):
    build_hf(tmp_path / "m")  # no preprocessor_config.json: a link loop takes its place
    (tmp_path / "m" / "preprocessor_config.json").symlink_to(tmp_path / "m" / "preprocessor_config.json")
    with pytest.raises(ValueError, match="preprocessor_config.json: cannot be read .*link loop"):
        load_model(tmp_path / "m")
    (tmp_path / "m" / "preprocessor_config.json").unlink()
    (tmp_path / "m" / "config.json").write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(ValueError, match="config.json: JSON nested too deeply"):
        load_model(tmp_path / "m")


def test_a_self_referencing_or_escaping_index_is_refused(tmp_path):
    build_hf(tmp_path)
    (tmp_path / "model.safetensors").rename(tmp_path / "shard.safetensors")
    index = tmp_path / "model.safetensors.index.json"
    for shard, match in (("model.safetensors.index.json", "no index files"), ("../x.safetensors", "no paths")):
        index.write_text(json.dumps({"weight_map": {"a": shard}}))
        with pytest.raises(ValueError, match=f"model.safetensors.index.json: weight_map names shard .*{match}"):
            load_model(tmp_path)
    index.write_text(json.dumps({"weight_map": {"a": "shard.safetensors"}}))
    assert load_model(tmp_path).config.num_classes == 5


def test_rescale_and_normalise_flags_fold_into_mean_and_std():
    # transformers: (p · r − m) / s.  Ours: (p/255 − mean) / std  ⇒  mean = m/(255 r), std = s/(255 r).
    how = preprocessing_from_hf({"rescale_factor": 1 / 127.5, "image_mean": [1.0] * 3, "image_std": [1.0] * 3},
                                img_size=32)
    assert_close(torch.tensor(how.mean), torch.full((3,), 0.5), rtol=1e-12, atol=0)
    raw = preprocessing_from_hf({"do_rescale": False, "do_normalize": False}, img_size=32)
    assert raw.mean == (0.0,) and raw.std == pytest.approx((1 / 255,))
    with pytest.raises(ValueError, match="size="):
        preprocessing_from_hf({"size": {"height": 32, "width": 40}}, img_size=32)
    with pytest.raises(ValueError, match="resample="):
        preprocessing_from_hf({"resample": 9}, img_size=32)


def test_describe_and_round_trip_through_our_format(tmp_path):
    from infsa_viz import save_model

    build_hf(tmp_path / "m", "DeiTForImageClassificationWithTeacher")
    model = load_model(tmp_path / "m")
    info = describe_model(model)
    assert info["format"] == "transformers" and info["source"]["architecture"] == "DeiTForImageClassificationWithTeacher"
    assert info["grid"] == [4, 4] and info["prefix_tokens"] == 2 and info["distillation_head"]
    assert json.loads(json.dumps(info)) == info
    save_model(model, tmp_path / "ours")
    again = load_model(tmp_path / "ours")
    assert again.config == model.config
    x = torch.randn(1, 3, 32, 32)
    assert_close(again(x), model(x))


def test_unsupported_directories_are_named(tmp_path):
    build_hf(tmp_path / "m")
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    (tmp_path / "m" / "config.json").write_text(json.dumps({**config, "hidden_act": "relu"}))
    with pytest.raises(ValueError, match="hidden_act='relu'"):
        load_model(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text(json.dumps({**config, "architectures": ["ViTModel"],
                                                            "model_type": "swin"}))
    with pytest.raises(ValueError, match="model_type='swin' is not a model this toolkit reads; expected one of"):
        load_model(tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").rename(tmp_path / "m" / "pytorch_model.bin")
    with pytest.raises(ValueError, match="pickle"):
        load_model(tmp_path / "m")
    with pytest.raises(ValueError, match="num_heads"):
        load_model(str(tmp_path / "m") + "?num_heads=4")


def test_a_config_asking_for_a_huge_model_is_refused_before_building(tmp_path, monkeypatch):
    from infsa_viz.model import VisionTransformer

    build_hf(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 100000, "hidden_size": 4096}))

    def never(*_args, **_kwargs):
        raise AssertionError("built the model before checking the weights")

    monkeypatch.setattr(VisionTransformer, "__init__", never)
    with pytest.raises(ValueError, match="asks for depth=100000, the weights hold"):
        load_model(tmp_path)


def test_nan_weights_are_refused_naming_the_file(tmp_path):
    from safetensors.torch import load_file, save_file

    build_hf(tmp_path)
    state = load_file(str(tmp_path / "model.safetensors"))
    name = next(k for k in state if k.endswith("query.weight"))
    state[name][0, 0] = float("inf")
    save_file(state, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(ValueError, match=r"holds 1 NaN/Inf value"):
        load_model(tmp_path)
    assert "query" in name
