"""Eigencheck logic and the ``eigencheck`` command (with a tiny saved model and fake data)."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import torch

from infsa_viz.commands import eigencheck as command
from infsa_viz.data import TEST_SEED
from infsa_viz.model import VisionTransformer, ViTConfig, save_model
from infsa_viz.spectral import eigencheck, perron_cosines
from infsa_viz.spectral.eigencheck import _stats


def _model(variant: str = "linear_infsa") -> VisionTransformer:
    config = ViTConfig(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2, attention=variant)
    return VisionTransformer(config).eval()


def test_eigencheck_reports_per_layer_head_statistics_and_protocol():
    result = eigencheck(_model(), torch.randn(5, 1, 16, 16), batch_size=2, data="random", baseline_samples=8)
    protocol = result["protocol"]
    assert protocol["n_images"] == 5 and protocol["data"] == "random"
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


def test_command_writes_the_json_atomically(tmp_path):
    save_model(_model(), tmp_path / "model")
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    out = tmp_path / "check.json"
    args = parser.parse_args(["--model", str(tmp_path / "model"), "--n-images", "3", "--layers", "0,1",
                              "--out", str(out)])
    args.threads, args.argv = 1, ["eigencheck"]
    assert command.run(args) == 0
    result = json.loads(out.read_text())
    assert result["settings"]["n_images"] == 3 and result["settings"]["layers"] == [0, 1]
    data = result["protocol"]["data"]  # the first images of the one test split
    assert data["name"] == "cluttered-digits" and data["n_images"] == 3 and data["seed"] == TEST_SEED
    assert sorted(p.name for p in tmp_path.iterdir()) == ["check.json", "model"]  # no temp file left
    with pytest.raises(SystemExit):
        parser.parse_args(["--model", "m", "--layers", "a,b", "--out", "x.json"])
    args.n_images = 0
    with pytest.raises(ValueError, match="n-images"):
        command.run(args)


def test_undefined_cosines_are_counted_with_their_reason():
    """a = 0 (every q_bar.k_j <= 0), A_hat = 0 (every q_i.k_j <= 0): nan cosines, each with its reason."""
    q = torch.tensor([[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]], dtype=torch.float64)  # (1, N=3, D=2)
    k_estimate_zero = torch.tensor([[[-1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]]], dtype=torch.float64)
    # q_bar = (2/3, 1/3): q_bar.k = (-2/3, -2/3, 1/3) > 0 for one key, so a is defined here ...
    defined = perron_cosines(q, k_estimate_zero)
    assert int(defined["undefined"][0]) == 0 and np.isfinite(float(defined["left"][0]))
    # ... and zero once every key points away from q_bar, while A_hat (row 2 · key 2) is not zero.
    k_zero = torch.tensor([[[-1.0, 0.0], [-1.0, 0.0], [-1.0, 0.0]]], dtype=torch.float64)
    none = perron_cosines(q, k_zero)
    assert int(none["undefined"][0]) == 2 and np.isnan(float(none["left"][0]))  # A_hat = 0 as well
    k_mixed = torch.tensor([[[-1.0, 0.5], [-1.0, 0.5], [-1.0, 0.5]]], dtype=torch.float64)
    mixed = perron_cosines(q, k_mixed)  # q_bar.k = -2/3 + 1/6 < 0, but q_3.k_j = 0.5 > 0
    assert int(mixed["undefined"][0]) == 1 and np.isnan(float(mixed["left"][0]))
    stats = _stats(np.array([0.5, np.nan, np.nan]), np.array([0, 1, 2]))
    assert stats["nan"] == 2 and stats["undefined"] == {"estimate_zero": 1, "affinity_zero": 1}
    assert stats["mean"] == 0.5 and stats["mean_undefined_as_zero"] == pytest.approx(0.5 / 3)
