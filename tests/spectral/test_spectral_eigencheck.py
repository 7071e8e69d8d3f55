"""Eigencheck logic and the ``eigencheck`` command (with a tiny saved model and fake data)."""

from __future__ import annotations

import argparse
import json
import sys
import types

import numpy as np
import pytest
import torch

from infsa_viz.commands import eigencheck as command
from infsa_viz.spectral import eigencheck
from infsa_viz.vit import VisionTransformer, ViTConfig, save_model


def _model(variant: str = "linear_infsa") -> VisionTransformer:
    config = ViTConfig(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2, attention=variant)
    return VisionTransformer(config).eval()


def test_eigencheck_reports_per_layer_head_statistics_and_protocol():
    result = eigencheck(_model(), torch.randn(5, 1, 16, 16), batch_size=2, seed=7, data="random",
                        baseline_samples=8)
    protocol = result["protocol"]
    assert protocol["n_images"] == 5 and protocol["seed"] == 7 and protocol["data"] == "random"
    assert protocol["side"].startswith("left") and protocol["max_residual"] < 1e-8
    assert (protocol["num_heads"], protocol["num_tokens"], protocol["head_dim"]) == (2, 17, 8)
    pairs = [(row["layer"], row["head"]) for row in result["per_layer_head"]]
    assert pairs == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for row in result["per_layer_head"]:
        stats = row["left"]
        assert stats["count"] == 5
        assert 0.0 <= stats["min"] <= stats["p5"] <= stats["median"] <= 1.0 + 1e-12
    assert result["overall"]["left"]["count"] == 20
    assert result["gaussian_baseline"]["num_tokens"] == 17
    json.dumps(result)  # JSON-ready


def test_eigencheck_layers_option_and_validation():
    model, images = _model("pure_infsa"), torch.randn(2, 1, 16, 16)
    assert eigencheck(model, images, layers=[1], baseline_samples=0)["protocol"]["layers"] == [1]
    with pytest.raises(ValueError, match="layers"):
        eigencheck(model, images, layers=[2])
    with pytest.raises(ValueError, match="images"):
        eigencheck(model, images[:0])


def test_command_writes_the_json_atomically(tmp_path, monkeypatch):
    save_model(_model(), tmp_path / "model")
    fake = types.ModuleType("infsa_viz.data")

    def generate_cluttered(n, split="test", seed=0):
        rng = np.random.default_rng(seed)
        return types.SimpleNamespace(images=rng.integers(0, 255, (n, 16, 16), dtype=np.uint8))

    fake.generate_cluttered = generate_cluttered
    fake.to_tensor = lambda images: torch.from_numpy(images).float().div(255).unsqueeze(1)
    monkeypatch.setitem(sys.modules, "infsa_viz.data", fake)
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    out = tmp_path / "check.json"
    args = parser.parse_args(["--model", str(tmp_path / "model"), "--n-images", "3", "--layers", "0,1",
                              "--seed", "4", "--out", str(out)])
    args.threads = 1
    assert command.run(args) == 0
    result = json.loads(out.read_text())
    assert result["settings"]["n_images"] == 3 and result["settings"]["layers"] == [0, 1]
    assert result["protocol"]["seed"] == 4 and "seed=4" in result["protocol"]["data"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["check.json", "model"]  # no temp file left
    with pytest.raises(SystemExit):
        parser.parse_args(["--model", "m", "--layers", "a,b", "--out", "x.json"])
    args.n_images = 0
    with pytest.raises(ValueError, match="n-images"):
        command.run(args)
