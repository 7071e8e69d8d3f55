"""Own image folders (AppTest): a folder whose classes are a subset of a model's is scored against
it, each folder mapped to the model's class by name (as ``infsa-viz evaluate`` does); a model
whose classes lack the folder's is not scored, and the page says so once."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from tests.app.conftest import PHOTO_CLASSES
from tests.app.test_apptest import _app, _details, _ok, _shown
from tests.data.test_layouts import csv_folder, csv_layout  # noqa: F401  (fixtures)


@pytest.fixture
def subset_folder(tmp_path):
    """``car/`` and ``dog/`` (two of the 6-class model's classes), two photos each."""
    rng = np.random.default_rng(1)
    for name in ("car", "dog"):
        (tmp_path / "photos" / name).mkdir(parents=True)
        for i in range(2):
            ok, data = cv2.imencode(".png", rng.integers(0, 255, (40, 50, 3), dtype=np.uint8))
            assert ok
            (tmp_path / "photos" / name / f"{i}.png").write_bytes(data.tobytes())
    return tmp_path / "photos"


def test_a_subset_folder_is_scored_against_the_model_that_names_its_classes(subset_folder, own_models, monkeypatch,
                                                                           shipped_models):
    monkeypatch.setenv("INFSA_VIZ_MODELS", str(own_models.root))
    monkeypatch.setenv("INFSA_VIZ_DATA", f"folder:{subset_folder}")
    at = _app().run()
    key = "folder:photos"  # named by its folder's name: no server path in the link
    at.radio(key="image_set").set_value(key).run()
    at.selectbox(key="method").set_value("saliency").run()
    at.selectbox(key="target").set_value("label").run()
    _ok(at)
    captions = [_shown(c.value) for c in at.sidebar.caption]
    assert any("shows car (scored only for photo-vit6)" in c for c in captions), captions
    assert sum("not scored for fruit-deit64: its classes lack car, dog" in c for c in captions) == 1  # said once
    details = _details(at)
    assert details["softmax · photo-vit6"]["target"] == PHOTO_CLASSES.index("car")  # mapped by name, not position
    verdicts = [m.value for m in at.markdown if m.value.startswith("predicts **") and
                any(f"**{n}**" in m.value for n in PHOTO_CLASSES)]
    assert len(verdicts) == 1 and (":green[correct]" in verdicts[0] or "wrong: the image shows car" in verdicts[0])
    at.number_input(key="image_number").set_value(3).run()  # dog/0.png, the 3rd image
    _ok(at)
    assert _details(at)["softmax · photo-vit6"]["target"] == PHOTO_CLASSES.index("dog")
    at.switch_page("views/gallery.py").run()
    at.selectbox(key="gallery_model").set_value(str(own_models.vit.resolve())).run()
    _ok(at)
    assert not at.radio(key="gallery_correct").disabled  # its predictions are scored against the folder's labels


def test_a_link_reopened_on_a_second_server_with_the_same_short_names_shows_the_same_numbers(
        subset_folder, own_models, monkeypatch, tmp_path_factory, shipped_models):
    """Two servers hold copies of the same models and photos at different paths under the same short
    names: the link one writes, opened on the other, shows the same view and the same figures."""
    import shutil

    def serve(models_root: Path, photos: Path):
        monkeypatch.setenv("INFSA_VIZ_MODELS", str(models_root))
        monkeypatch.setenv("INFSA_VIZ_DATA", f"folder:photos={photos}")
        return _app()

    at = serve(own_models.root, subset_folder).run()
    at.radio(key="image_set").set_value("folder:photos").run()
    at.selectbox(key="method").set_value("saliency").run()
    at.number_input(key="image_number").set_value(3).run()
    _ok(at)
    query = {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}
    assert not any(str(tmp_path_factory.getbasetemp()) in str(v) for v in query.values()), query  # no server path
    here = _details(at)

    other = tmp_path_factory.mktemp("second-server")
    shutil.copytree(own_models.root, other / "models")
    shutil.copytree(subset_folder, other / "elsewhere" / "photos")
    copy = serve(other / "models", other / "elsewhere" / "photos")
    copy.query_params = dict(query)
    copy.run()
    _ok(copy)
    assert copy.number_input(key="image_number").value == 3 and copy.selectbox(key="method").value == "saliency"
    there = _details(copy)
    assert there.keys() == here.keys() and there  # the same models, named the same way
    assert any(name.endswith(("photo-vit6", "fruit-deit64")) for name in here)  # the copied models among them
    for name, shown in here.items():
        assert there[name]["logits"] == pytest.approx(shown["logits"], abs=1e-6), name
        assert {k: v for k, v in there[name].items() if k != "logits"} == \
            {k: v for k, v in shown.items() if k != "logits"}, name  # target, options, colour scale


def test_a_registered_layout_is_an_image_set_of_the_app(csv_layout, csv_folder, monkeypatch, shipped_models):
    """The app reads the folder through the registry: its images, classes (``3``, ``7``: digit indices of the
    shipped models) and labels, scored against each shipped model."""
    monkeypatch.setenv("INFSA_VIZ_DATA", f"folder:csvtoy={csv_folder}")
    at = _app().run()
    at.radio(key="image_set").set_value("folder:csvtoy").run()
    at.selectbox(key="method").set_value("saliency").run()
    at.selectbox(key="target").set_value("label").run()
    for number, label in ((1, 7), (2, 3)):  # img0.png is class 7, img1.png class 3 (boxes.csv)
        at.number_input(key="image_number").set_value(number).run()
        _ok(at)
        details = _details(at)
        assert [details[m.label]["target"] for m in shipped_models] == [label] * len(shipped_models), details


def test_a_short_name_reused_for_another_folder_reads_that_folders_forward(app, shipped_models, tmp_path,
                                                                           monkeypatch):
    """A set's cached forward is keyed by the folder a short name names on this server, not the name alone:
    a second folder called ``photos`` (another server, or the next test in one process) with more images
    is read whole (CI failed on ``index 2 is out of bounds`` when the name alone was the key)."""
    rng = np.random.default_rng(2)
    folders = []
    for copy, n in (("one", 2), ("two", 4)):
        folder = tmp_path / copy / "photos"
        (folder / "car").mkdir(parents=True)
        for i in range(n):
            ok, data = cv2.imencode(".png", rng.integers(0, 255, (40, 50, 3), dtype=np.uint8))
            assert ok
            (folder / "car" / f"{i}.png").write_bytes(data.tobytes())
        folders.append(folder)
    entry = app.catalog.model_entry(shipped_models[0].path)
    firsts = []
    for folder, n in zip(folders, (2, 4)):
        monkeypatch.setenv("INFSA_VIZ_DATA", f"folder:{folder}")
        record = app.compute.set_rows(entry, "folder:photos", list(range(n)))
        assert len(record) == n
        firsts.append(record.logits[0])
    assert not torch.equal(firsts[0], firsts[1])  # each folder's own first image
