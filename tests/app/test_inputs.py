"""``app/inputs.py``: image sets, which models their labels speak of, uploads, the checks on how a
model sees an image."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from infsa_viz import VisionTransformer, save_model
from infsa_viz.data import BENCHMARKS, test_split


def _png(image: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", image)
    assert ok
    return buf.tobytes()


def test_set_image_is_the_split_image_with_its_boxes(app):
    choice, split = app.inputs.set_image("cluttered-digits", 17), test_split()
    np.testing.assert_array_equal(choice.data.images[0], split.images[17])
    np.testing.assert_array_equal(choice.data.boxes[0], split.boxes[17])
    np.testing.assert_array_equal(choice.data.negative_boxes[0], split.negative_boxes[17])
    assert (choice.base, choice.index, choice.name) == ("cluttered-digits:17", 17, "17")
    assert choice.label == int(split.labels[17])
    assert choice.source == "test image #18"  # numbered from 1: index 17


@pytest.mark.parametrize("shape", [(37, 81), (37, 81, 3), (37, 81, 4)])
def test_upload_image_has_no_label_and_a_content_key(app, shape):
    image = np.random.default_rng(0).integers(0, 255, shape, dtype=np.uint8)
    choice = app.inputs.upload_image(_png(image), "x.png")
    assert choice.label is None and choice.index is None and choice.set_key is None and choice.name == "x.png"
    assert choice.data.images[0].shape[:2] == (37, 81)
    assert choice.data.boxes[0].shape == (0, 4)
    assert choice.key == app.inputs.upload_image(_png(image), "other.png").key  # identity is the content
    assert choice.fitted("pad").key != choice.key
    with pytest.raises(ValueError, match="bad.png: not a readable image"):
        app.inputs.upload_image(b"GIF89a not really", "bad.png")


def test_data_specs_from_the_command_line_and_the_environment(app, tmp_path):
    (tmp_path / "a" / "photos").mkdir(parents=True)
    (tmp_path / "b" / "photos").mkdir(parents=True)
    argv = ["--data", f"folder:{tmp_path / 'a' / 'photos'}", "cluttered-digits-hard", f"folder:lab=~{tmp_path}/b"]
    environ = {"INFSA_VIZ_DATA": f"{tmp_path / 'b' / 'photos'}{os.pathsep}{tmp_path / 'a' / 'photos'}"}
    specs = app.inputs.data_specs(argv, environ)
    # a folder is named by its own name (or the NAME= given), never by its path; a repeat is named once
    assert specs == ["cluttered-digits-hard", "folder:photos", "folder:lab", "folder:photos-2"]
    folders = app.inputs.data_folders(argv, environ)
    assert folders == {"photos": (tmp_path / "a" / "photos").resolve(), "lab": Path(f"~{tmp_path}/b").expanduser().resolve(),
                       "photos-2": (tmp_path / "b" / "photos").resolve()}
    assert not any(str(tmp_path) in s for s in specs)


def test_labels_are_scored_only_for_the_models_that_belong_to_the_set(app, shipped_models, own_models):
    digits, photo = app.catalog.model_entry(shipped_models[0].path), app.catalog.model_entry(own_models.vit)
    assert app.inputs.image_sets([digits, photo], []) == ["cluttered-digits"]
    assert app.inputs.image_sets([photo], []) == ["cluttered-digits"]  # the default benchmark: shown, not scored
    assert app.inputs.belongs(digits, "cluttered-digits") and not app.inputs.belongs(photo, "cluttered-digits")
    assert not app.inputs.belongs(digits, "cluttered-digits-hard")
    image = app.inputs.set_image("cluttered-digits", 3)
    assert app.inputs.for_model(image, digits).label == image.label is not None
    seen = app.inputs.for_model(image, photo)  # the same pixels, no digit label, no digit boxes
    assert seen.label is None and seen.data.boxes[0].shape == (0, 4) and seen.key != image.key
    np.testing.assert_array_equal(seen.data.images[0], image.data.images[0])


def test_a_folder_set_belongs_to_the_models_that_name_its_classes(app, tmp_path, own_models, monkeypatch):
    """Folders named by a model's classes are scored against it, each mapped to its class by name
    (not by sorted position); a model that lacks them is not, and the reason names the classes."""
    from tests.app.conftest import PHOTO_CLASSES

    for i, name in enumerate(PHOTO_CLASSES):
        (tmp_path / "photos" / name).mkdir(parents=True)
        cv2.imwrite(str(tmp_path / "photos" / name / f"{i}.png"), np.full((20, 30, 3), 40 * i, np.uint8))
    monkeypatch.setattr(sys, "argv", ["app", "--data", f"folder:{tmp_path / 'photos'}", f"folder:nowhere={tmp_path}/x"])
    key = app.inputs.data_specs()[0]
    assert app.inputs.set_classes(key) == tuple(sorted(PHOTO_CLASSES))
    assert app.inputs.set_title(key) == "folder photos" and len(app.inputs.set_data(key)) == len(PHOTO_CLASSES)
    photo, fruit = app.catalog.model_entry(own_models.vit), app.catalog.model_entry(own_models.deit)
    assert not app.inputs.belongs(fruit, key) and app.inputs.set_labels(fruit, key) is None
    assert app.inputs.mismatch(fruit, key).startswith("its classes lack bicycle, bird, car")
    assert app.inputs.belongs(photo, key) and app.inputs.mismatch(photo, key) is None
    folders = [app.inputs.set_classes(key)[c] for c in app.inputs.set_data(key).labels]
    assert app.inputs.set_labels(photo, key).tolist() == [PHOTO_CLASSES.index(f) for f in folders]
    assert set(app.inputs.set_data(key).names) == {f"{n}/{i}.png" for i, n in enumerate(PHOTO_CLASSES)}  # relative
    with pytest.raises(ValueError, match="folder nowhere") as raised:  # said by its name, not its path
        app.inputs.set_data("folder:nowhere")
    assert str(tmp_path) not in str(raised.value)
    with pytest.raises(ValueError, match="no image folder named 'elsewhere' on this server"):
        app.inputs.set_data("folder:elsewhere")


def test_a_letterbox_is_explained_and_not_applied_to_a_centre_cropping_model(app, shipped_models, own_models):
    upload = app.inputs.upload_image(_png(np.zeros((30, 60, 3), np.uint8)), "wide.png").fitted("pad")
    digits, photo = app.catalog.model_entry(shipped_models[0].path), app.catalog.model_entry(own_models.vit)
    assert app.inputs.fit_note(digits, upload) is None and app.inputs.for_model(upload, digits).fit == "pad"
    note = app.inputs.fit_note(photo, upload)
    assert "crops the centre 88%" in note and "its own preprocessing" in note
    assert app.inputs.for_model(upload, photo).fit is None
    model = app.catalog.get_model(photo)[0]
    assert "60×30 RGB → 224×224 RGB: shorter side resized, centre square cropped, centre 87.5% kept" in \
        app.inputs.input_summary(model, app.inputs.for_model(upload, photo))


def test_input_warnings_name_what_differs_from_the_training_data(app, tmp_path, make_config):
    save_model(VisionTransformer(make_config("softmax", in_chans=1)), tmp_path / "gray")
    entry = app.catalog.model_entry(tmp_path / "gray")
    model = app.catalog.get_model(entry)[0]
    rgb = np.zeros((40, 100, 3), np.uint8)
    rgb[..., 0] = 255
    image = app.inputs.upload_image(_png(rgb), "red.png")
    x = app.compute.model_input(entry, image).tensor
    warnings = app.inputs.input_warnings(model, image, x)
    side = model.config.img_size
    assert warnings[:3] == ["aspect ratio 2.50 is stretched to 1 (shapes are distorted)",
                            "a colour image: the model sees gray only",
                            f"100 px is shrunk {100 / side:.0f}× to {side} px: small details vanish"]
    normal = torch.randn(1, 1, side, side, generator=torch.Generator().manual_seed(0))
    assert not any("intensity" in w for w in app.inputs.input_warnings(model, image, normal))
    assert "std 0.00" in app.inputs.input_warnings(model, image, normal * 0)[-1]
    assert set(BENCHMARKS) == set(app.inputs.BENCHMARK_CLASSES)


def test_an_upload_is_turned_upright_by_its_exif_orientation(app):
    from tests.exif_files import encode, with_orientation

    stored = np.random.default_rng(1).integers(0, 255, (30, 50), dtype=np.uint8)
    choice = app.inputs.upload_image(with_orientation(encode(stored, ".png"), 6), "phone.png")
    np.testing.assert_array_equal(choice.data.images[0], np.rot90(stored, -1))
