"""The examples run as a user runs them (smoke: they finish and print their figures)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
pytestmark = pytest.mark.slow  # each example is a fresh Python process over the shipped models
needs_models = pytest.mark.skipif(not (ROOT / "models" / "softmax-vit4" / "config.json").is_file(),
                                  reason="the shipped models are not in this checkout")


def run(script: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@needs_models
def test_metrics_example():
    out = run("metrics_for_a_model.py", "--n-images", "16", "--method", "attention")
    assert "MoRF-AOC" in out and "PR-AUC" in out


@needs_models
def test_compare_example(tmp_path):
    out = run("compare_maps.py", "--n-images", "8", "--index", "3", "--out", str(tmp_path / "c.png"))
    assert out.count("box PR-AUC") == 3 and (tmp_path / "c.png").stat().st_size > 1000


def test_explain_hf_vit_example(tmp_path):
    transformers = pytest.importorskip("transformers")
    import cv2
    import numpy as np

    config = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
                                    num_attention_heads=4, intermediate_size=48, id2label={0: "cat", 1: "dog"},
                                    label2id={"cat": 0, "dog": 1})
    transformers.ViTForImageClassification(config).save_pretrained(tmp_path / "vit")
    transformers.ViTImageProcessorPil(size={"height": 32, "width": 32}).save_pretrained(tmp_path / "vit")
    photo = np.random.default_rng(0).integers(0, 256, (45, 70, 3), dtype=np.uint8)
    cv2.imwrite(str(tmp_path / "photo.jpg"), photo)
    out = run("explain_hf_vit.py", str(tmp_path / "vit"), str(tmp_path / "photo.jpg"), "--out",
              str(tmp_path / "o.png"))
    assert "predicted 'cat'" in out or "predicted 'dog'" in out
    assert cv2.imread(str(tmp_path / "o.png")) is not None
