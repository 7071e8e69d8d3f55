"""A user's model and photos through the CLI with no code change: info, explain, compare, eigencheck, evaluate.

Models are built here (transformers with random weights, saved with ``save_pretrained``; an
official-InfSA state dict written by hand); photos are the labelme examples Debian ships
(``apt-get install labelme-examples``; the test skips without them) or written here.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest
from safetensors.torch import save_file

from infsa_viz.cli import main

transformers = pytest.importorskip("transformers")

LABELME_VOC = Path("/usr/share/doc/labelme-examples/examples/bbox_detection/data_dataset_voc")
METRICS = ("accuracy", "morf_aoc", "lerf_auc", "aopc", "box_roc_auc", "box_pr_auc", "pointing_game")


def save_hf_vit(path: Path, class_names: list[str], *, image_size: int = 32) -> Path:
    config = transformers.ViTConfig(image_size=image_size, patch_size=8, hidden_size=32, num_hidden_layers=2,
                                    num_attention_heads=4, intermediate_size=48,
                                    id2label=dict(enumerate(class_names)),
                                    label2id={n: i for i, n in enumerate(class_names)})
    model = transformers.ViTForImageClassification(config).eval()
    model.save_pretrained(path)
    transformers.ViTImageProcessorPil(size={"height": image_size, "width": image_size}).save_pretrained(path)
    return path


def _check_rows(report: dict) -> None:
    for row in report["results"]:
        for key in METRICS:
            value = row[key]
            assert isinstance(value, float)
            if math.isnan(value):  # undefined only with a stated reason
                assert key.startswith("box_") and row["box_undefined"] > 0, (row["method"], key)


@pytest.mark.slow
@pytest.mark.skipif(not LABELME_VOC.is_dir(), reason="Debian's labelme-examples is not installed")
def test_evaluate_a_transformers_vit_on_real_photos_with_real_boxes(tmp_path, capsys):
    names = [line.strip() for line in (LABELME_VOC / "class_names.txt").read_text().splitlines() if line.strip()]
    model = save_hf_vit(tmp_path / "vit", names)
    out = tmp_path / "report.json"
    code = main(["evaluate", "--models", str(model), "--data", f"folder:{LABELME_VOC}", "--steps", "4",
                 "--select", "all", "--methods", "attention,rollout,perron,saliency", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert report["dataset"]["name"] == "annotated-folder" and report["dataset"]["n_images"] == 3
    assert {r["n_images"] for r in report["results"]} == {3}
    _check_rows(report)


@pytest.mark.slow
def test_a_users_models_and_folder_through_every_command(tmp_path, capsys):
    from tests.formats.test_official import HEADS, official_state

    synsets = ["n01440764", "n01443537", "n01484850"]
    hf = save_hf_vit(tmp_path / "hf", ["tench", "goldfish", "shark"])
    save_file(official_state(), tmp_path / "infsa.safetensors")
    official = f"{tmp_path / 'infsa.safetensors'}?num_heads={HEADS}&variant=pure_infsa"
    photos = tmp_path / "val"  # the ImageNet-val layout of the official repository
    photos.mkdir()
    rng = np.random.default_rng(0)
    for i, (h, w) in enumerate([(40, 60), (50, 30), (33, 33)]):
        stem = f"ILSVRC2012_val_{i:08d}"
        image = rng.integers(0, 256, (h, w, 4 if i == 1 else 3), dtype=np.uint8)  # one RGBA PNG
        cv2.imwrite(str(photos / (stem + (".png" if i == 1 else ".JPEG"))), image)
        (photos / f"{stem}.xml").write_text(
            f"<annotation><size><width>{w}</width><height>{h}</height></size><object><name>{synsets[i]}</name>"
            f"<bndbox><xmin>3</xmin><ymin>4</ymin><xmax>{w // 2}</xmax><ymax>{h - 2}</ymax></bndbox></object>"
            "</annotation>")
    (tmp_path / "synsets.txt").write_text("".join(f"{s} class {i}\n" for i, s in enumerate(synsets)))
    image = str(photos / "ILSVRC2012_val_00000001.png")

    assert main(["info", "--model", official]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["format"], info["variant"], info["grid"]) == ("official-infsa", "pure_infsa", [4, 4])
    assert main(["explain", image, "--model", str(hf), "--method", "rollout", "--out", str(tmp_path / "e.png")]) == 0
    assert main(["compare", image, "--models", f"{hf},{official}", "--methods", "attention,perron",
                 "--out", str(tmp_path / "c.png")]) == 0
    assert (tmp_path / "e.png").stat().st_size > 0 and (tmp_path / "c.png").stat().st_size > 0
    assert main(["eigencheck", "--model", official, "--data", f"folder:{photos}", "--classes",
                 str(tmp_path / "synsets.txt"), "--out", str(tmp_path / "eig.json")]) == 0
    assert json.loads((tmp_path / "eig.json").read_text())["settings"]["n_images"] == 3
    capsys.readouterr()
    out = tmp_path / "report.json"
    assert main(["evaluate", "--models", f"{hf},{official}", "--data", f"folder:{photos}", "--classes",
                 str(tmp_path / "synsets.txt"), "--steps", "4", "--select", "all", "--methods", "attention,visits",
                 "--out", str(out)]) == 0, capsys.readouterr().err
    report = json.loads(out.read_text())
    assert sorted({r["variant"] for r in report["results"]}) == ["pure_infsa", "softmax"]
    _check_rows(report)
    # Without a class file, synset-named boxes do not match the model's id2label: one clear error.
    assert main(["evaluate", "--models", str(hf), "--data", f"folder:{photos}", "--out", str(out)]) == 2
    assert "--classes" in capsys.readouterr().err
