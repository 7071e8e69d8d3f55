"""The format registry: a format is one module registering (detect, load); detect and load_model read it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from infsa_viz import ViTConfig, VisionTransformer, load_model, save_model
from infsa_viz.formats import FORMATS, ModelFormat, describe_model, detect, register_format

TINY = {"img_size": 16, "in_chans": 1, "patch_size": 4, "embed_dim": 16, "depth": 2, "num_heads": 2, "num_classes": 3}


def _toy_file(tmp_path: Path, seed: int = 3) -> Path:
    path = tmp_path / "m.toyvit"
    path.write_text(json.dumps({"config": TINY, "seed": seed}))
    return path


def test_the_built_in_formats_register_ours_first():
    """Our directories and transformers ones both hold a config.json: ours is detected first (every
    format's own sample is detected as it: tests/test_conformance.py)."""
    assert list(FORMATS)[0] == "infsa-viz" and set(FORMATS) >= {"transformers", "timm"}


def test_a_format_registered_in_one_module_is_detected_and_loaded(tmp_path, toy_plugin):
    path = _toy_file(tmp_path)
    assert detect(path) == "toy"
    model = load_model(path)
    torch.manual_seed(3)
    expected = VisionTransformer(ViTConfig(**TINY)).eval()
    x = torch.randn(2, 1, 16, 16)
    assert_close(model(x), expected(x))
    assert describe_model(model)["format"] == "toy" and model.origin == str(path) and not model.training
    assert load_model(f"{path}?convert_to=linear_infsa").config.attention == "linear_infsa"  # generic options apply
    with pytest.raises(ValueError, match=r"\['num_heads'\] apply to state-dict files .*a toy model records them"):
        load_model(f"{path}?num_heads=2")  # options the format does not read are refused, not ignored


def test_the_cli_reads_a_registered_format(tmp_path, toy_plugin, capsys):
    from infsa_viz.cli import main

    assert main(["info", str(_toy_file(tmp_path))]) == 0
    assert json.loads(capsys.readouterr().out)["format"] == "toy"


def test_without_the_module_the_path_is_refused_naming_the_formats_tried(tmp_path):
    with pytest.raises(ValueError, match=r"m.toyvit.* is neither a model directory .*formats tried: infsa-viz: .*"
                                         r"official-infsa: "):
        detect(_toy_file(tmp_path))


def test_registration_refuses_a_taken_name_and_unknown_options():
    with pytest.raises(ValueError, match="'timm' is already registered"):
        register_format(ModelFormat("timm", detect=lambda c: False, load=lambda p, o: None, expects="x"))
    with pytest.raises(ValueError, match=r"options \['colour'\] are unknown"):
        ModelFormat("x", detect=lambda c: False, load=lambda p, o: None, expects="x", options=frozenset({"colour"}))


def test_detect_names_what_it_found(tmp_path):
    save_model(VisionTransformer(ViTConfig(**TINY)), tmp_path / "ours")
    assert detect(tmp_path / "ours") == "infsa-viz"
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="model directory .*empty' has no config.json; formats tried"):
        detect(tmp_path / "empty")
    with pytest.raises(ValueError, match="does not exist"):
        detect(tmp_path / "nothing")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(ValueError, match="loop' is a broken symbolic link or a link loop"):
        detect(tmp_path / "loop")
