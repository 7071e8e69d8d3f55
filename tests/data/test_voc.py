"""VOC-labelled photo folders: both layouts, class-index files, labels and boxes from the XML."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from infsa_viz.data import FolderDataset
from infsa_viz.data import open_image_folder
from infsa_viz.data.voc import AnnotatedImages, read_class_index


def write_voc(path, width, height, objects):
    body = "".join(
        f"<object><name>{n}</name><bndbox><xmin>{b[0]}</xmin><ymin>{b[1]}</ymin><xmax>{b[2]}</xmax>"
        f"<ymax>{b[3]}</ymax></bndbox></object>" for n, b in objects)
    path.write_text(f"<annotation><size><width>{width}</width><height>{height}</height><depth>3</depth></size>"
                    f"{body}</annotation>")


def write_image(path, height, width, channels=3):
    rng = np.random.default_rng(0)
    shape = (height, width) if channels == 1 else (height, width, channels)
    assert cv2.imwrite(str(path), rng.integers(0, 256, shape, dtype=np.uint8))


def test_class_index_files_name_classes_by_line_or_by_synset(tmp_path):
    (tmp_path / "names.txt").write_text("_background_\naeroplane\npotted plant\n\n")
    assert read_class_index(tmp_path / "names.txt") == {"_background_": 0, "aeroplane": 1, "potted plant": 2}
    (tmp_path / "synsets.txt").write_text("n01440764 tench, Tinca tinca\nn01443537 goldfish, Carassius auratus\n")
    assert read_class_index(tmp_path / "synsets.txt") == {"n01440764": 0, "n01443537": 1}
    (tmp_path / "twice.txt").write_text("a\nb\na\n")
    with pytest.raises(ValueError, match="more than once"):
        read_class_index(tmp_path / "twice.txt")
    (tmp_path / "empty.txt").write_text("\n")
    with pytest.raises(ValueError, match="names no class"):
        read_class_index(tmp_path / "empty.txt")


def test_voc_layout_labels_by_the_largest_known_box_and_keeps_other_objects_as_negatives(tmp_path):
    (tmp_path / "JPEGImages").mkdir()
    (tmp_path / "Annotations").mkdir()
    write_image(tmp_path / "JPEGImages" / "a.jpg", 30, 40)
    write_voc(tmp_path / "Annotations" / "a.xml", 40, 30, [
        ("dog", (1, 1, 10, 10)), ("cat", (11, 1, 40, 30)), ("dog", (5, 5, 6, 6)), ("tree", (1, 1, 40, 30))])
    write_image(tmp_path / "JPEGImages" / "b.png", 20, 20, channels=1)
    write_voc(tmp_path / "Annotations" / "b.xml", 20, 20, [("dog", (2.5, 3, 4, 20))])
    write_image(tmp_path / "JPEGImages" / "c.png", 8, 8)  # no XML: skipped
    data = open_image_folder(tmp_path, classes=["cat", "dog"])
    assert isinstance(data, AnnotatedImages) and len(data) == 2
    images = data.labelled()
    # a: the largest known box is the cat (30×30; "tree" is not a class): its boxes are the targets.
    assert images.labels.tolist() == [0, 1]
    np.testing.assert_array_equal(images.boxes[0], [[10, 0, 40, 30]])  # 1-based inclusive → x0 = xmin − 1
    np.testing.assert_array_equal(images.negative_boxes[0], [[0, 0, 10, 10], [4, 4, 6, 6], [0, 0, 40, 30]])
    np.testing.assert_array_equal(images.boxes[1], [[1, 2, 4, 20]])  # fractional xmin 2.5 → floor(1.5)
    assert images.images[0].shape == (30, 40, 3) and images.images[1].shape == (20, 20)
    assert images.names[0].endswith("a.jpg")


def test_imagenet_val_layout_with_synsets(tmp_path):
    write_image(tmp_path / "ILSVRC2012_val_00000001.JPEG", 12, 16)
    write_voc(tmp_path / "ILSVRC2012_val_00000001.xml", 16, 12, [("n01443537", (1, 1, 16, 12))])
    (tmp_path / "synsets.txt").write_text("n01440764 tench\nn01443537 goldfish\n")
    data = open_image_folder(tmp_path, classes=read_class_index(tmp_path / "synsets.txt"))
    images = data.labelled(5)
    assert images.labels.tolist() == [1] and len(images) == 1
    np.testing.assert_array_equal(images.boxes[0], [[0, 0, 16, 12]])


def test_layout_errors_say_what_is_missing(tmp_path):
    write_image(tmp_path / "x.jpg", 10, 10)
    write_voc(tmp_path / "x.xml", 10, 10, [("zebra", (1, 1, 5, 5))])
    with pytest.raises(ValueError, match="--classes"):
        open_image_folder(tmp_path)
    with pytest.raises(ValueError, match=r"no object of a known class \(objects \['zebra'\]"):
        open_image_folder(tmp_path, classes=["cat"]).labelled()
    write_voc(tmp_path / "x.xml", 12, 10, [("cat", (1, 1, 5, 5))])
    with pytest.raises(ValueError, match="differs from the image"):
        open_image_folder(tmp_path, classes=["cat"]).labelled()
    with pytest.raises(ValueError, match="--boxes applies to class-folder data"):
        open_image_folder(tmp_path, classes=["cat"], boxes_dir=tmp_path)
    (tmp_path / "classes" / "a").mkdir(parents=True)
    write_image(tmp_path / "classes" / "a" / "y.png", 4, 4)
    assert isinstance(open_image_folder(tmp_path / "classes"), FolderDataset)
