"""Safe weight loading: header checked before building, finite weights, checksum from the card."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from infsa_viz import load_model, save_model
from infsa_viz.model import VisionTransformer, state_shapes
from infsa_viz.weights import check_finite, file_sha256, header_shapes, load_weights


@pytest.fixture
def saved(tmp_path, make_config):
    model = VisionTransformer(make_config("pure_infsa")).eval()
    save_model(model, tmp_path / "m")
    return tmp_path / "m", model


def test_state_shapes_equal_a_built_model(make_config):
    config = make_config("softmax")
    assert state_shapes(config) == {k: tuple(v.shape) for k, v in VisionTransformer(config).state_dict().items()}


def test_state_shapes_draw_no_values_and_import_no_compiler():
    """The shape check of every load builds the model on the meta device: nothing is initialised
    there, so the first load does not pay for importing ``torch._dynamo`` (seconds)."""
    import subprocess
    import sys

    code = ("import sys; from infsa_viz.model import ViTConfig, state_shapes; state_shapes(ViTConfig()); "
            "print('torch._dynamo' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_header_shapes_read_without_loading(saved):
    directory, model = saved
    assert header_shapes(directory / "model.safetensors") == {k: tuple(v.shape) for k, v in model.state_dict().items()}


def test_huge_config_is_refused_before_building(saved, monkeypatch):
    directory, _ = saved
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "depth": 100000, "embed_dim": 4096}))

    def never(*_args, **_kwargs):
        raise AssertionError("built the model before checking the weights")

    monkeypatch.setattr(VisionTransformer, "__init__", never)
    with pytest.raises(ValueError, match="asks for depth=100000, the weights hold 2 blocks"):
        load_model(directory)


def test_width_mismatch_names_the_tensor(saved):
    directory, _ = saved
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "embed_dim": 32}))
    with pytest.raises(ValueError, match=r"tensor 'cls_token' has shape \(1, 1, 16\), config.json implies \(1, 1, 32\)"):
        load_model(directory)


def test_nan_weight_names_file_and_tensor(saved):
    directory, model = saved
    state = {k: v.clone() for k, v in model.state_dict().items()}
    state["blocks.1.mlp.fc1.weight"][0, 0] = float("nan")
    save_file(state, str(directory / "model.safetensors"))
    with pytest.raises(ValueError, match=r"model.safetensors: tensor 'blocks.1.mlp.fc1.weight' holds 1 NaN/Inf"):
        load_model(directory)


def test_card_checksum_is_verified(saved):
    directory, model = saved
    weights = directory / "model.safetensors"
    (directory / "card.json").write_text(json.dumps({"weights_sha256": file_sha256(weights)}))
    load_model(directory)  # matches
    state = {k: v + 1e-3 for k, v in model.state_dict().items()}
    save_file(state, str(weights))
    with pytest.raises(ValueError, match="differs from the model card"):
        load_model(directory)


def test_garbage_file_is_refused(tmp_path):
    bad = tmp_path / "w.safetensors"
    bad.write_bytes(b"\xff" * 64)
    with pytest.raises(ValueError, match="not a readable safetensors file"):
        load_weights(bad, {}, against="config")


def test_check_finite_ignores_integer_tensors():
    check_finite({"steps": torch.arange(3)}, source="x")
    with pytest.raises(ValueError, match="'w' holds 2 NaN/Inf"):
        check_finite({"w": torch.tensor([1.0, float("inf"), float("-inf")])}, source="x")


def test_weights_over_the_memory_budget_are_refused_from_the_header(tmp_path):
    import struct

    from infsa_viz.weights import check_fits_memory

    header = json.dumps({"w": {"dtype": "F16", "shape": [1000, 1000], "data_offsets": [0, 2_000_000]}}).encode()
    path = tmp_path / "big.safetensors"
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(header)) + header)
        handle.truncate(8 + len(header) + 2_000_000)
    check_fits_memory(path, budget=7e6)  # 2 MB stored + 4 MB as float32
    with pytest.raises(ValueError, match=r"big.safetensors: loading needs about 6 MB .* over the 5 MB of memory"):
        check_fits_memory(path, budget=5e6)
