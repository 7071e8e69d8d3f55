"""The preprocessing contract end to end: a model trained on a folder of photos reads a file the
same way through ``evaluate``, ``explain``, ``compare`` and the app (identical logits)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from infsa_viz import load_model, preprocess
from infsa_viz.cli import main
from infsa_viz.images import read_image
from infsa_viz.preprocess import CLUTTERED_DIGITS

pytestmark = pytest.mark.slow
APP = Path(__file__).resolve().parents[1] / "app" / "streamlit_app.py"


@pytest.fixture(scope="module")
def folder_model(tmp_path_factory):
    """Two classes of 30×20 RGB photos (red-left vs blue-right), trained 1 epoch at 16×16 px."""
    root = tmp_path_factory.mktemp("photos")
    rng = np.random.default_rng(0)
    for split, count in (("train", 6), ("test", 2)):
        for label, channel in (("left", 2), ("right", 0)):  # BGR on disk: red = 2, blue = 0
            for i in range(count):
                image = (rng.random((20, 30, 3)) * 120).astype(np.uint8)
                image[:, :15 if label == "left" else 15:, channel] = 230
                path = root / split / label / f"{split}-{label}-{i}.png"
                path.parent.mkdir(parents=True, exist_ok=True)
                assert cv2.imwrite(str(path), image)
    out = tmp_path_factory.mktemp("model") / "folder-vit"
    assert main(["train", "--variant", "pure_infsa", "--data", f"folder:{root}", "--image-size", "16",
                 "--patch-size", "4", "--epochs", "1", "--batch-size", "4", "--out", str(out), "--threads", "1"]) == 0
    return root, out


@torch.no_grad()
def _expected(model_dir: Path, file: Path) -> np.ndarray:
    model = load_model(model_dir)
    return model(preprocess(model, [read_image(file)]))[0].double().numpy()


def test_the_model_stores_the_preprocessing_it_was_trained_with(folder_model):
    root, model_dir = folder_model
    how = load_model(model_dir).config.preprocessing
    assert how != CLUTTERED_DIGITS and len(how.mean) == 3 and how.resize == "stretch"
    train = sorted((root / "train").glob("*/*.png"))
    resized = np.stack([cv2.resize(read_image(p), (16, 16), interpolation=cv2.INTER_AREA) for p in train]) / 255.0
    np.testing.assert_allclose(how.mean, resized.mean((0, 1, 2)), atol=1e-6)
    np.testing.assert_allclose(how.std, resized.std((0, 1, 2), ddof=1), atol=1e-6)


def test_identical_logits_through_evaluate_explain_compare_and_the_app(folder_model, tmp_path, monkeypatch):
    root, model_dir = folder_model
    file = sorted((root / "test").glob("*/*.png"))[0]
    expected = _expected(model_dir, file)

    report = tmp_path / "eval.json"
    assert main(["evaluate", "--models", str(model_dir), "--data", f"folder:{root / 'test'}", "--methods", "attention",
                 "--steps", "2", "--per-image", "--out", str(report)]) == 0
    with open(report.with_suffix(".images.csv")) as f:
        (row,) = [r for r in csv.DictReader(f) if r["name"] == str(file)]
    np.testing.assert_allclose(json.loads(row["logits"]), expected, rtol=0, atol=2e-6)

    assert main(["explain", str(file), "--model", str(model_dir), "--method", "visits",
                 "--out", str(tmp_path / "e.png")]) == 0
    (shown,) = json.loads((tmp_path / "e.json").read_text())["maps"]
    np.testing.assert_allclose(shown["logits"], expected, rtol=0, atol=2e-6)

    assert main(["compare", str(file), "--models", f"{model_dir},{model_dir}", "--methods", "attention,perron",
                 "--out", str(tmp_path / "c.png")]) == 0
    for shown in json.loads((tmp_path / "c.json").read_text())["maps"]:
        np.testing.assert_allclose(shown["logits"], expected, rtol=0, atol=2e-6)

    from streamlit.testing.v1 import AppTest

    threads = torch.get_num_threads()
    monkeypatch.setenv("INFSA_VIZ_MODEL_ROOTS", str(model_dir.parent))  # a folder whose models may be typed in
    try:
        at = AppTest.from_file(str(APP), default_timeout=240).run()
        at.multiselect(key="models").set_value([]).run()
        at.text_input(key="extra_model").input(str(model_dir)).run()
        at.radio(key="image_set").set_value("upload").run()
        at.file_uploader(key="upload").set_value((file.name, file.read_bytes(), "image/png")).run()
        at.radio(key="upload_fit").set_value("model's own").run()  # the default: each model's own resize
        assert not at.exception, [e.value for e in at.exception]
        (details,) = [json.loads(j.value) for j in at.json]
        (shown,) = details.values()
        np.testing.assert_allclose(shown["logits"], expected, rtol=0, atol=2e-6)
    finally:
        torch.set_num_threads(threads)
