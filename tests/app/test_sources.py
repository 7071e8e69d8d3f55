"""A data source of another kind on every app page: the toy squares benchmark (four quadrant classes, no
digits), registered and trained on in tests/data/test_sources.py with no other edit. The app offers the
models' own test split, names its classes and renders every page."""

from __future__ import annotations

import pytest
import torch

from tests.app.test_apptest import _app, _captions, _ok, _shown
from tests.app.test_own_models import PAGES
from tests.data.test_sources import QUADRANTS, squares_models  # noqa: F401  # the fixture: squares registered, two models


@pytest.fixture(scope="module")
def at(squares_models, monkeypatch_module):  # noqa: F811
    """The app with the two squares models added and only they selected."""
    threads = torch.get_num_threads()
    monkeypatch_module.setenv("INFSA_VIZ_MODELS", str(squares_models / "squares"))
    at = _app().run()
    _ok(at)
    ours = [p for p in at.multiselect(key="models").options if "seed1" in p]
    assert len(ours) == 2, at.multiselect(key="models").options
    at.multiselect(key="models").set_value(ours).run()
    _ok(at)
    yield at
    torch.set_num_threads(threads)  # the app sets one intra-op thread for the process


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _text(at) -> str:
    return " ".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def test_its_test_split_is_offered_with_its_classes(at):
    assert at.radio(key="image_set").value == "squares"
    shown = _text(at)
    assert any(f"shows {q}" in shown for q in QUADRANTS), shown[:2000]
    assert "target box green, distractors red" in shown  # its source declares scenes
    assert "digit" not in shown


@pytest.mark.parametrize("page", PAGES)
def test_every_page_works_on_it(at, page):
    at.switch_page(f"views/{page}.py").run()
    _ok(at)
    assert not [e.value for e in at.error], [e.value for e in at.error]
    text = _text(at)
    if page != "glossary":  # the glossary quotes the metrics' descriptions, some written for the digit benchmarks
        assert "digit " not in text
    predicted = [m.value for m in at.markdown if m.value.startswith("predicts **")]
    assert all(any(f"**{q}**" in line for q in QUADRANTS) for line in predicted)  # its own class names
    if page in ("compare", "grid", "spectral"):  # a map per model
        assert sum("seed1" in c for c in _captions(at)) >= 2
    if page == "compare":
        assert len(predicted) == 2
    if page == "intervention":  # its scene's objects, each changed alone
        assert any("| target | remove |" in _shown(m.value) and "| distractor_1 | remove |" in _shown(m.value)
                   for m in at.markdown)
    if page == "gallery":
        assert any(q in c for c in _captions(at) for q in QUADRANTS)


def test_another_image_of_it(at):
    at.switch_page("views/compare.py").run()
    at.number_input(key="image_number").set_value(5).run()
    _ok(at)
    assert any("test image #5: shows " in c.value for c in at.caption)
