"""Tests of the bring-your-own-data folder dataset (infsa_viz/data/folder.py)."""

import time

import cv2
import numpy as np
import pytest

from infsa_viz.data import FolderDataset, parse_voc_boxes

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<annotation><size><width>40</width><height>20</height></size>
<object><name>&lol9;</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></object>
</annotation>
"""

EXTERNAL_ENTITY = """<?xml version="1.0"?>
<!DOCTYPE annotation [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<annotation><size><width>40</width><height>20</height></size>
<object><name>&secret;</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></object>
</annotation>
"""


def voc_xml(width, height, objects):
    body = "".join(
        f"<object><name>{name}</name><bndbox><xmin>{x0}</xmin><ymin>{y0}</ymin>"
        f"<xmax>{x1}</xmax><ymax>{y1}</ymax></bndbox></object>"
        for name, (x0, y0, x1, y1) in objects
    )
    size = f"<size><width>{width}</width><height>{height}</height><depth>3</depth></size>"
    return f"<annotation>{size}{body}</annotation>"


def write_image(path, image):
    path.parent.mkdir(parents=True, exist_ok=True)
    ok, encoded = cv2.imencode(path.suffix, image)
    assert ok
    encoded.tofile(path)


@pytest.fixture
def tree(tmp_path):
    """root/{cat,dog,élan}/..., a 40x20 red image with boxes, a gray one, an RGBA one, noise files."""
    root, boxes = tmp_path / "images", tmp_path / "boxes"
    red = np.zeros((20, 40, 3), np.uint8)
    red[..., 2] = 255  # BGR: pure red
    write_image(root / "dog" / "red.png", red)
    write_image(root / "cat" / "gray.png", np.full((20, 40), 128, np.uint8))
    rgba = np.zeros((30, 30, 4), np.uint8)
    rgba[..., 0] = 200  # blue
    rgba[..., 3] = 0  # fully transparent: alpha is dropped, not composited
    write_image(root / "cat" / "alpha.png", rgba)
    write_image(root / "élan" / "green.jpg", np.tile(np.array([0, 255, 0], np.uint8), (16, 16, 1)))
    (root / "cat" / "notes.txt").write_text("not an image")
    (root / ".hidden").mkdir()
    write_image(root / ".hidden" / "x.png", red)
    boxes.mkdir()
    (boxes / "red.xml").write_text(voc_xml(40, 20, [("fox", (11, 1, 20, 10)), ("fox", (1, 1, 40, 20))]))
    return root, boxes


def test_class_discovery_and_labels(tree):
    root, _ = tree
    ds = FolderDataset(root)
    assert ds.classes == ["cat", "dog", "élan"]
    assert [(p.name, label) for p, label in ds.samples] == [
        ("alpha.png", 0),
        ("gray.png", 0),
        ("red.png", 1),
        ("green.jpg", 2),
    ]
    assert len(ds) == 4 and [ds[i][1] for i in range(4)] == [0, 0, 1, 2]


def test_items_are_the_decoded_files_at_their_own_size(tree):
    """No resizing or normalisation here: that is the model's preprocessing (tests/test_preprocess.py)."""
    root, _ = tree
    alpha, gray, red, green = (FolderDataset(root)[i][0] for i in range(4))
    assert alpha.shape == (30, 30, 3) and gray.shape == (20, 40) and red.shape == (20, 40, 3)
    assert all(image.dtype == np.uint8 for image in (alpha, gray, red, green))
    assert red[0, 0].tolist() == [255, 0, 0]  # RGB order
    assert alpha[0, 0].tolist() == [0, 0, 200]  # RGBA: alpha dropped, not composited
    assert (gray == 128).all()


def test_labelled_set_keeps_images_labels_boxes_and_names(tree):
    root, boxes = tree
    data = FolderDataset(root, boxes_dir=boxes).labelled(3)
    assert len(data) == 3 and data.labels.tolist() == [0, 0, 1]
    assert data.names[2].endswith("red.png") and data.description["classes"] == ["cat", "dog", "élan"]
    np.testing.assert_array_equal(data.boxes[2], [[10, 0, 20, 10], [0, 0, 40, 20]])  # source pixels
    assert data.boxes[0].shape == (0, 4)


def test_box_conversion_and_scaling(tree):
    root, boxes = tree
    xml = boxes / "red.xml"
    # VOC 1-based inclusive (11..20, 1..10) -> 0-based exclusive (10, 0, 20, 10).
    assert parse_voc_boxes(xml) == [("fox", (10, 0, 20, 10)), ("fox", (0, 0, 40, 20))]
    # Scaled from 40x20 to 20x20: x halves, y unchanged.
    assert parse_voc_boxes(xml, image_size=20) == [("fox", (5, 0, 10, 10)), ("fox", (0, 0, 20, 20))]
    # Non-integer scales round outwards: 10*0.3=3, 20*0.3=6 exactly; y: 0..10 * 0.6 -> 0..6.
    assert parse_voc_boxes(xml, image_size=12)[0] == ("fox", (3, 0, 6, 6))
    ds = FolderDataset(root, boxes_dir=boxes)
    red_index = [p.name for p, _ in ds.samples].index("red.png")
    np.testing.assert_array_equal(ds.boxes(red_index), [[10, 0, 20, 10], [0, 0, 40, 20]])  # the file's pixels
    assert ds.boxes(red_index).dtype == np.int64


def test_zero_based_files(tmp_path):
    xml = tmp_path / "a.xml"
    xml.write_text(voc_xml(40, 20, [("fox", (0, 0, 39, 19))]))
    assert parse_voc_boxes(xml, one_based=False) == [("fox", (0, 0, 40, 20))]
    with pytest.raises(ValueError, match="outside"):
        parse_voc_boxes(xml)  # xmin=0 is outside a 1-based image


def test_missing_xml_means_no_boxes(tree):
    root, boxes = tree
    ds = FolderDataset(root, boxes_dir=boxes)
    gray_index = [p.name for p, _ in ds.samples].index("gray.png")
    assert ds.box_file(gray_index) is None
    assert ds.boxes(gray_index).shape == (0, 4)
    assert FolderDataset(root).boxes(0).shape == (0, 4)


@pytest.mark.parametrize(
    "payload", [BILLION_LAUGHS, EXTERNAL_ENTITY], ids=["billion_laughs", "external_entity"]
)
def test_malicious_xml_is_rejected_quickly(tmp_path, payload):
    xml = tmp_path / "evil.xml"
    xml.write_text(payload)
    start = time.perf_counter()
    with pytest.raises(ValueError, match="evil.xml"):
        parse_voc_boxes(xml)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    "box",
    [(30, 1, 41, 10), (1, 1, 10, 21), (20, 1, 10, 10), (1, 12, 10, 11), (0, 1, 5, 5)],
    ids=["right", "bottom", "inverted_x", "inverted_y", "zero"],
)
def test_bad_box_is_rejected_with_file_box_and_size(tmp_path, box):
    xml = tmp_path / "bad.xml"
    xml.write_text(voc_xml(40, 20, [("fox", box)]))
    with pytest.raises(ValueError, match="bad.xml") as info:
        parse_voc_boxes(xml)
    message = str(info.value)
    assert "40x20" in message and f"xmin={box[0]}" in message and f"ymax={box[3]}" in message


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("<annotation><object/></annotation>", "no <size>"),
        ("<annotation><size><width>4</width></size></annotation>", "height"),
        (
            voc_xml(4, 4, []).replace("</annotation>", "<object><name>x</name></object></annotation>"),
            "bndbox",
        ),
        (voc_xml(4, 4, [("x", (1, 1, "two", 2))]), "not a number"),
        ("<annotation><size>", "malformed"),
        ("<other/>", "<annotation>"),
    ],
)
def test_malformed_xml(tmp_path, text, match):
    xml = tmp_path / "m.xml"
    xml.write_text(text)
    with pytest.raises(ValueError, match=match):
        parse_voc_boxes(xml)


def test_xml_size_must_match_image(tree):
    root, boxes = tree
    (boxes / "red.xml").write_text(voc_xml(50, 20, [("fox", (1, 1, 5, 5))]))
    ds = FolderDataset(root, boxes_dir=boxes)
    red_index = [p.name for p, _ in ds.samples].index("red.png")
    with pytest.raises(ValueError, match="differs"):
        ds.boxes(red_index)


def test_sixteen_bit_and_corrupt_images(tmp_path):
    root = tmp_path / "r"
    write_image(root / "a" / "deep.png", np.full((8, 8), 65535, np.uint16))
    ds = FolderDataset(root)
    assert ds[0][0].dtype == np.uint8 and (ds[0][0] == 255).all()
    (root / "a" / "zz_broken.png").write_bytes(b"not a png")
    ds = FolderDataset(root)
    with pytest.raises(ValueError, match="zz_broken.png"):
        ds[1]


def test_missing_boxes_dir_is_refused(tree):
    root, _ = tree
    with pytest.raises(ValueError, match="boxes_dir="):
        FolderDataset(root, boxes_dir="/nonexistent")


def test_empty_or_missing_root(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        FolderDataset(tmp_path / "missing")
    (tmp_path / "empty" / "cls").mkdir(parents=True)
    with pytest.raises(ValueError, match="no .png"):
        FolderDataset(tmp_path / "empty")


def _class_folders(root, names):
    for name in names:
        (root / name).mkdir(parents=True)
        cv2.imwrite(str(root / name / "a.png"), np.zeros((8, 8), np.uint8))
    return root


def test_folders_named_by_class_indices_are_those_classes(tmp_path):
    root = _class_folders(tmp_path, ["0", "2", "3", "5", "6", "9"])
    data = FolderDataset(root, num_classes=10).labelled()
    assert list(data.labels) == [0, 2, 3, 5, 6, 9] and data.description["labels"] == "class indices"
    assert list(FolderDataset(root).labelled().labels) == [0, 1, 2, 3, 4, 5]  # training: sorted positions
    with pytest.raises(ValueError, match=r"class folder '9' names class 9; the model has 6 classes \(0..5\)"):
        FolderDataset(root, num_classes=6)


def test_folders_named_by_the_models_class_names_map_to_them(tmp_path):
    root = _class_folders(tmp_path, ["tabby cat", "goldfish"])
    names = ["tench", "goldfish", "shark", "tabby cat"]
    data = FolderDataset(root, classes=names, num_classes=4).labelled()
    assert dict(zip(data.names, data.labels)) == {str(root / "goldfish" / "a.png"): 1, str(root / "tabby cat" / "a.png"): 3}
    assert data.description["class_to_idx"] == {"goldfish": 1, "tabby cat": 3}
    with pytest.raises(ValueError, match=r"class folders \['tabby cat'\] are neither the model's class names "
                                         r"\(e.g. \['tench', 'goldfish', 'shark'\]\) nor class indices below 3"):
        FolderDataset(root, classes=names[:3])


def test_classes_file_applies_to_class_folders_through_the_cli_inputs(tmp_path):
    import argparse

    from infsa_viz.commands._inputs import load_data
    from infsa_viz.model import VisionTransformer, ViTConfig

    root = _class_folders(tmp_path / "data", ["dog", "cat"])
    (tmp_path / "classes.txt").write_text("cat\nbird\ndog\n")
    model = VisionTransformer(ViTConfig(num_classes=3, embed_dim=16, depth=1, num_heads=2))
    args = argparse.Namespace(data=f"folder:{root}", boxes=None, classes=str(tmp_path / "classes.txt"), n_images=10)
    data = load_data(args, [("m", model)])
    assert sorted(zip(data.names, data.labels.tolist())) == [(str(root / "cat" / "a.png"), 0),
                                                              (str(root / "dog" / "a.png"), 2)]


def test_folder_images_are_turned_upright_by_their_exif_orientation(tmp_path):
    from tests.exif_files import encode, with_orientation

    stored = np.zeros((20, 40), np.uint8)
    stored[:5, :5] = 255  # a bright top-left corner
    (tmp_path / "3").mkdir()
    (tmp_path / "3" / "a.jpg").write_bytes(with_orientation(encode(stored, ".jpg"), 8))
    image = FolderDataset(tmp_path).labelled().images[0]
    assert image.shape == (40, 20)  # orientation 8: turned 90° anticlockwise to be seen
    assert image[-5:, :5].mean() > 200 and image[:5, :5].mean() < 50
