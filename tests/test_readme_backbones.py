"""Every command of the README's backbone table runs, on a small random-weight checkpoint of each kind
(transformers ViT, DINOv2 with and without registers, CLIP with its tokenizer, a timm state dict)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from infsa_viz.cli import main as cli

transformers = pytest.importorskip("transformers")

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _commands() -> list[list[str]]:
    """The backbone table's commands (its last column), as argument lists without ``infsa-viz``."""
    section = README.split("## Supported backbones", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "`infsa-viz " in line]
    return [shlex.split(re.search(r"`infsa-viz ([^`]+)`", row).group(1).replace("\\|", "|")) for row in rows]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """The table's paths, built in one folder: photo.jpg and one checkpoint per name the commands use."""
    import cv2
    import torch
    from safetensors.torch import save_file

    from infsa_viz.formats.timm import to_timm_state_dict
    from infsa_viz.model import VisionTransformer, ViTConfig
    from tests.formats.test_backbones import build_backbone
    from tests.formats.test_hf import build_hf
    from tests.test_zero_shot import build_clip

    root = tmp_path_factory.mktemp("backbones")
    cv2.imwrite(str(root / "photo.jpg"), np.random.default_rng(0).integers(0, 256, (40, 60, 3), dtype=np.uint8))
    build_hf(root / "vit-dir")
    build_backbone(root / "dinov2-dir", "dinov2-classifier")
    build_backbone(root / "dinov2-reg-dir", "dinov2-registers-classifier")
    build_clip(root / "clip-dir")
    torch.manual_seed(0)
    timm = VisionTransformer(ViTConfig(img_size=32, patch_size=8, embed_dim=48, depth=2, num_heads=12, num_classes=5,
                                       norm_eps=1e-6, register_tokens=2, layer_scale=True,
                                       source={"format": "timm"})).eval()
    save_file({k: v.contiguous() for k, v in to_timm_state_dict(timm).items()}, str(root / "timm-vit.safetensors"))
    return root


def test_the_table_names_each_backbone_once():
    used = [c for command in _commands() for c in command]
    assert {"vit-dir", "clip-dir", "timm-vit.safetensors?num_heads=12"} <= set(used)
    assert any("dinov2-dir,dinov2-reg-dir" in c for c in used)


@pytest.mark.parametrize("index", range(4))
def test_every_backbone_command_of_the_readme_runs(checkpoints, index, monkeypatch, capsys):
    commands = _commands()
    assert len(commands) == 4
    monkeypatch.chdir(checkpoints)
    argv = commands[index]
    assert cli(argv) == 0, (argv, capsys.readouterr().err)
    if "--out" in argv:
        assert (checkpoints / argv[argv.index("--out") + 1]).stat().st_size > 0
