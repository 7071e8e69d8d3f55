"""``infsa-viz explain`` / ``compare``: overlays written, settings saved, bad input → exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from infsa_viz.cli import main
from infsa_viz.model import VisionTransformer, ViTConfig, save_model


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    dirs = []
    for variant in ("softmax", "linear_infsa"):
        torch.manual_seed(0)
        save_model(VisionTransformer(ViTConfig(attention=variant, embed_dim=16, depth=2, num_heads=2)),
                   root / variant)
        dirs.append(str(root / variant))
    return dirs


def test_compare_writes_grid_png_and_settings(tmp_path, model_dirs):
    out = tmp_path / "grid.png"
    code = main(["compare", "test:5", "--models", ",".join(model_dirs), "--methods", "attention,visits",
                 "--out", str(out)])
    assert code == 0
    grid = cv2.imread(str(out))
    assert grid is not None and grid.shape[0] > 2 * 96
    info = json.loads(out.with_suffix(".json").read_text())
    assert [m["method"] for m in info["maps"]] == ["attention", "attention", "visits", "visits"]
    assert "learns no rho" in info["maps"][2]["metadata"]["gamma_source"]  # softmax visits state their gamma
    assert info["maps"][2]["validity"]["layers"] == [1] and info["maps"][0]["validity"] is None
    assert info["label"] is not None and info["scale"] == "shared"
    assert info["colour_scale"]["mode"] == "shared" and len(info["colour_scale"]["divisors"]) == 4


def test_explain_on_a_user_image(tmp_path, model_dirs):
    image = tmp_path / "photo.jpg"
    cv2.imwrite(str(image), (np.random.default_rng(0).random((100, 80, 3)) * 255).astype(np.uint8))
    out = tmp_path / "o.png"
    assert main(["explain", str(image), "--model", model_dirs[1], "--method", "perron", "--out", str(out)]) == 0
    assert cv2.imread(str(out)) is not None
    assert main(["explain", str(image), "--model", model_dirs[1], "--method", "saliency", "--target", "label",
                 "--out", str(out)]) == 2  # a file has no label to explain


@pytest.mark.parametrize("argv,message", [
    (["--method", "gradcam"], "method='gradcam'"),
    (["--method", "rollout", "--layer", "1"], "--layer does not apply"),
    (["--method", "attention", "--head", "x"], "head='x'"),
    (["--method", "saliency", "--target", "first"], "--target='first'"),
    (["--method", "attention", "--layer", "9"], "layer=9"),
])
def test_bad_options_exit_2(tmp_path, model_dirs, capsys, argv, message):
    assert main(["explain", "test:0", "--model", model_dirs[0], "--out", str(tmp_path / "x.png"), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "x.png").exists()


def test_bad_images_exit_2(tmp_path, model_dirs, capsys):
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    for image in (str(bad), str(tmp_path / "missing.png"), "test:99999", "test:abc"):
        assert main(["explain", image, "--model", model_dirs[0], "--method", "attention",
                     "--out", str(tmp_path / "x.png")]) == 2
    assert not (tmp_path / "x.png").exists()


def test_explain_checks_attn_lrp_conservation_on_a_shipped_model(tmp_path, capsys):
    out = tmp_path / "lrp.png"
    model = str(Path(__file__).parents[2] / "models" / "softmax-vit4")
    assert main(["explain", "test:0", "--model", model, "--method", "attn_lrp",
                 "--check-conservation", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    checks = summary["maps"][0]["conservation"]
    assert set(checks) == {"float64", "float32"}
    for dtype, check in checks.items():
        assert [s["stage"] for s in check["stages"]] == ["embedding", "block 0", "block 1", "block 2", "block 3", "head"]
        assert check["blocks_max_error_accounted"] <= 1e-4
        assert check["blocks_max_error"] > 1e-3  # biases and softmax's rule absorb relevance
        assert all(s["attention_rule_absorbs"] for s in check["stages"][1:5])
    saved = json.loads(out.with_suffix(".json").read_text())
    assert saved["maps"][0]["conservation"]["float64"]["target"] == saved["maps"][0]["target"]


def test_check_conservation_applies_to_attn_lrp_only(tmp_path, capsys, model_dirs):
    code = main(["explain", "test:0", "--model", model_dirs[0], "--method", "saliency", "--check-conservation",
                 "--out", str(tmp_path / "o.png")])
    err = capsys.readouterr().err
    assert code == 2 and "--check-conservation applies to --method attn_lrp" in err and "Traceback" not in err
