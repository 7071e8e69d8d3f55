"""The registry of folder layouts: a new layout (here a CSV of boxes, registered by a module written in the
test) is opened by ``--data folder:PATH`` in ``infsa-viz evaluate`` and by the app's image sets, with no
other edit."""

from __future__ import annotations

import importlib.util
import json
import textwrap

import cv2
import numpy as np
import pytest

from infsa_viz.cli import main
from infsa_viz.data import LAYOUTS, FolderDataset, Layout, open_image_folder, register_layout
from infsa_viz.data.layouts import find_layout, folder_root
from infsa_viz.data.voc import AnnotatedImages

#: A plugin module a user might write: ``root/boxes.csv`` of ``file,class,x0,y0,x1,y1`` beside the images.
CSV_LAYOUT = textwrap.dedent('''
    import csv
    import numpy as np
    from infsa_viz.data import Layout, LabelledImages, register_layout
    from infsa_viz.data.folder import folder_labels
    from infsa_viz.images import read_image


    class CsvBoxes:
        def __init__(self, root, *, classes=None, boxes_dir=None, num_classes=None):
            if boxes_dir is not None:
                raise ValueError(f"{root} carries its own boxes (boxes.csv)")
            with open(root / "boxes.csv", newline="") as handle:
                self.rows = list(csv.DictReader(handle))
            self.root = root
            self.classes = sorted({row["class"] for row in self.rows})
            self.class_to_idx, _ = folder_labels(self.classes, classes=classes, num_classes=num_classes, root=root)

        def labelled(self, n=None):
            rows = self.rows[:n]
            return LabelledImages(
                images=[read_image(self.root / row["file"]) for row in rows],
                labels=np.array([self.class_to_idx[row["class"]] for row in rows], dtype=np.int64),
                boxes=[np.array([[int(row[k]) for k in ("x0", "y0", "x1", "y1")]], dtype=np.int64) for row in rows],
                names=[row["file"] for row in rows],
                description={"name": "csv-boxes", "root": str(self.root), "n_images": len(rows)})


    register_layout(Layout("csv-boxes", "images with a boxes.csv of file,class,x0,y0,x1,y1",
                           lambda root: (root / "boxes.csv").is_file(), CsvBoxes))
''')


@pytest.fixture
def csv_layout(registries, tmp_path):
    """The plugin module above, imported from a file (the registries are restored afterwards)."""
    path = tmp_path / "csv_layout.py"
    path.write_text(CSV_LAYOUT)
    spec = importlib.util.spec_from_file_location("csv_layout", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    return LAYOUTS["csv-boxes"]


@pytest.fixture
def csv_folder(tmp_path):
    """Four 48 px gray images of classes ``3`` and ``7`` (class indices of a digit model), one box each."""
    root = tmp_path / "csv-photos"
    root.mkdir()
    rng = np.random.default_rng(0)
    rows = ["file,class,x0,y0,x1,y1"]
    for i in range(4):
        image = rng.integers(0, 60, (48, 48), dtype=np.uint8)
        image[10:30, 12:32] = 230
        assert cv2.imwrite(str(root / f"img{i}.png"), image)
        rows.append(f"img{i}.png,{3 if i % 2 else 7},12,10,32,30")
    (root / "boxes.csv").write_text("\n".join(rows) + "\n")
    return root


def test_the_shipped_layouts_are_registered_with_class_folders_last(tmp_path):
    assert list(LAYOUTS) == ["class-folders", "voc", "imagenet-val"]
    (tmp_path / "JPEGImages").mkdir()
    (tmp_path / "Annotations").mkdir()
    assert find_layout(tmp_path).name == "voc"
    assert find_layout(tmp_path / "JPEGImages").name == "class-folders"  # the fallback
    assert folder_root("folder:a/b") is not None and folder_root("cluttered-digits") is None
    with pytest.raises(ValueError, match="is not a folder"):
        find_layout(tmp_path / "missing")


def test_registering_a_layout_twice_or_not_a_layout_is_refused(registries):
    with pytest.raises(ValueError, match="registered twice"):
        register_layout(LAYOUTS["voc"])
    with pytest.raises(TypeError, match="expected a Layout"):
        register_layout("voc")  # type: ignore[arg-type]


def test_a_registered_layout_is_found_before_the_class_folder_fallback(csv_layout, csv_folder):
    folder = open_image_folder(csv_folder, num_classes=10)
    assert not isinstance(folder, (FolderDataset, AnnotatedImages)) and folder.classes == ["3", "7"]
    data = folder.labelled(3)
    assert data.labels.tolist() == [7, 3, 7] and data.boxes[0].tolist() == [[12, 10, 32, 30]]
    assert isinstance(csv_layout, Layout)


def test_a_registered_layout_is_a_cli_data_source(csv_layout, csv_folder, tmp_path, shipped_model):
    out = tmp_path / "r.json"
    code = main(["evaluate", "--models", shipped_model, "--data", f"folder:{csv_folder}", "--methods", "attention",
                 "--n-images", "3", "--chunk", "3", "--steps", "2", "--metrics", "box_auc", "--out", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["dataset"]["name"] == "csv-boxes" and report["results"][0]["n_images"] == 3


@pytest.fixture
def shipped_model() -> str:
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "models" / "softmax-vit4"
    if not (path / "model.safetensors").is_file():
        pytest.skip("models/softmax-vit4 is not trained here")
    return str(path)

