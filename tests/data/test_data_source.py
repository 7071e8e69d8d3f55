"""One data source for both kinds: :func:`~infsa_viz.data.data_source` resolves a benchmark's name or
``folder:PATH`` to a :class:`~infsa_viz.data.DataSource` declaring what it offers."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from infsa_viz.data import BENCHMARKS, LAYOUTS, data_source, test_split
from infsa_viz.data.sources import INTERVENTIONS, OBJECTS
from infsa_viz.train.data import training_data


def _class_folders(root, classes=("cat", "dog"), per_class=2):
    for c in classes:
        (root / c).mkdir(parents=True)
        for i in range(per_class):
            cv2.imwrite(str(root / c / f"{i}.png"), np.full((12, 16, 3), 40 * i, np.uint8))
    return root


def _voc(root):
    (root / "JPEGImages").mkdir(parents=True)
    (root / "Annotations").mkdir()
    cv2.imwrite(str(root / "JPEGImages" / "a.jpg"), np.zeros((20, 30, 3), np.uint8))
    (root / "Annotations" / "a.xml").write_text(
        "<annotation><size><width>30</width><height>20</height></size><object><name>cat</name><bndbox>"
        "<xmin>2</xmin><ymin>3</ymin><xmax>10</xmax><ymax>12</ymax></bndbox></object></annotation>")
    return root


def test_a_benchmark_declares_its_classes_splits_objects_and_interventions():
    source = data_source("cued-digits")
    assert source.classes == BENCHMARKS["cued-digits"].classes
    assert source.preprocessing == BENCHMARKS["cued-digits"].preprocessing
    assert source.splits == ("train", "test") and source.objects == "scenes" and source.interventions == INTERVENTIONS
    assert source.root is None and not source.model_labels and source.size == len(test_split(benchmark="cued-digits"))
    data = source.labelled(3)
    assert data.names == test_split(3, benchmark="cued-digits").names and data.scenes is not None
    for option in ({"boxes_dir": "x"}, {"classes": ["a"]}, {"num_classes": 3}):
        with pytest.raises(ValueError, match="folder data only"):
            source.labelled(3, **option)


def test_a_folder_declares_what_its_layout_declares(tmp_path):
    folders = data_source(f"folder:{_class_folders(tmp_path / 'pets')}")
    assert folders.name == "class-folders" and folders.preprocessing is None and folders.objects is None
    assert folders.splits == LAYOUTS["class-folders"].splits and folders.interventions == ("occlude",)
    assert folders.model_labels and folders.root == tmp_path / "pets" and folders.size is None
    assert folders.classes == ("cat", "dog")
    data = folders.labelled(3)
    assert len(data) == 3 and data.labels.tolist() == [0, 0, 1]
    assert folders.labelled(None, classes=["dog", "cat"]).labels.tolist() == [1, 1, 0, 0]

    voc = data_source(f"folder:{_voc(tmp_path / 'voc')}")
    assert voc.name == "voc" and voc.objects == "boxes" and "train" not in voc.splits
    assert voc.labelled(classes=["dog", "cat"]).boxes[0].tolist() == [[1, 2, 10, 12]]  # VOC is one-based, max inclusive
    with pytest.raises(ValueError, match="no training split"):
        training_data(voc, 8)


def test_every_layout_declares_known_objects_and_interventions():
    for layout in LAYOUTS.values():
        assert layout.objects in (None, *OBJECTS) and set(layout.interventions) <= set(INTERVENTIONS)
        assert "test" in layout.splits


def test_a_spec_that_is_neither_is_refused(tmp_path):
    with pytest.raises(ValueError, match="must be one of"):
        data_source("no-such-benchmark")
    with pytest.raises(ValueError, match="is not a folder"):
        data_source(f"folder:{tmp_path / 'missing'}")
    with pytest.raises(TypeError, match="expected a str"):
        data_source(3)
