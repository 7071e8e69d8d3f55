"""Own image folders (AppTest): a folder whose classes are a subset of a model's is scored against
it, each folder mapped to the model's class by name (as ``infsa-viz evaluate`` does); a model
whose classes lack the folder's is not scored, and the page says so once."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from tests.app.conftest import PHOTO_CLASSES
from tests.app.test_apptest import _app, _details, _ok, _shown


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
