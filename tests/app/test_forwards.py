"""The app keeps one forward record per model and image set: rendering every page, the single-image ones
and those of a whole set, runs the model's clean forward (no gradient, the image as the model sees it) on
each image of the set once, in its batch, and that one forward captures the attention every page reads
(the conformance test of issue 46 for the app, as ``tests/evaluation/test_engine.py`` is the evaluation's).
Forwards that do new work (gradients, perturbed or randomised copies) are counted apart."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import numpy as np
import pytest
import torch

from infsa_viz import load_model
from infsa_viz.data import test_split
from infsa_viz.model import capture
from infsa_viz.preprocess import prepare
from tests.app.test_apptest import _app, _ok
from tests.app.test_own_models import PAGES


class _PerImage:
    """How often each image of a set went through a model in a clean forward (no gradient, the image as
    the model sees it), and in a clean forward that captured attention, by model; a perturbed copy or
    another image is not one of the set's. The model's other forwards (new work: gradients, perturbed
    copies, other images) are counted apart."""

    def __init__(self, images: torch.Tensor) -> None:
        self.index = {row.numpy().tobytes(): i for i, row in enumerate(images)}
        self.clean: dict[int, np.ndarray] = {}
        self.captured: dict[int, np.ndarray] = {}
        self.other: dict[int, int] = {}
        self.recording = 0

    def __call__(self, module: torch.nn.Module, args: tuple) -> None:
        if not hasattr(module, "forward_features"):  # models only, not their blocks
            return
        x = args[0] if args else None
        rows = [self.index.get(row.detach().cpu().numpy().tobytes()) for row in x] if (
            isinstance(x, torch.Tensor) and x.dim() == 4 and len(x)) else [None]
        if torch.is_grad_enabled() or any(r is None for r in rows):
            self.other[id(module)] = self.other.get(id(module), 0) + 1
            return
        for seen in (self.clean, *((self.captured,) if self.recording else ())):
            np.add.at(seen.setdefault(id(module), np.zeros(len(self.index), np.int64)), rows, 1)

    def of(self, model: torch.nn.Module) -> tuple[np.ndarray, np.ndarray]:
        """``(clean forwards, of which with attention captured)`` of each image, for ``model``."""
        zero = np.zeros(len(self.index), np.int64)
        return self.clean.get(id(model), zero).copy(), self.captured.get(id(model), zero).copy()

    def new_work(self, model: torch.nn.Module) -> int:
        """Forwards of ``model`` that are not clean forwards of the set's images."""
        return self.other.get(id(model), 0)


@contextmanager
def _per_image(monkeypatch, images: torch.Tensor) -> Iterator[_PerImage]:
    log = _PerImage(images)
    original = capture.record_attention

    @contextmanager
    def counted(*args, **kwargs):
        with original(*args, **kwargs) as recorder:
            log.recording += 1
            try:
                yield recorder
            finally:
                log.recording -= 1

    for module in ("infsa_viz.model.capture", "infsa_viz.forward", "infsa_viz.model"):
        monkeypatch.setattr(f"{module}.record_attention", counted, raising=False)
    handle = torch.nn.modules.module.register_module_forward_pre_hook(log)
    try:
        yield log
    finally:
        handle.remove()


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
def test_every_page_reads_one_forward_per_model_and_image(shipped_models, monkeypatch, app):
    """Every page, with methods that read attention (attention, visits) and a gradient one (saliency),
    for one model on one image of the set: that image went through the model in one clean forward (its
    set's batch, which the single-image pages read too), which captured the attention; no image twice."""
    import streamlit as st

    shipped = shipped_models[0]
    images = prepare(load_model(shipped.path).config, test_split().images).tensor  # (2000, C, H, W)
    st.cache_data.clear()
    st.cache_resource.clear()
    with _per_image(monkeypatch, images) as log:
        at = _app()
        at.query_params.update(models=shipped.name, image="3")
        at.run()
        _ok(at)
        assert at.number_input(key="image_number").value == 3
        for method in ("visits", "saliency"):  # and attention, the first screen's
            at.selectbox(key="method").set_value(method).run()
            for page in PAGES:
                at.switch_page(f"views/{page}.py").run()
                _ok(at)
        model, _ = app.catalog.get_model(app.catalog.model_entry(shipped.path))
        clean, captured = log.of(model)
    assert (clean[2], captured[2]) == (1, 1), (clean[2], captured[2])  # image 3 of the set
    assert clean.max() == 1 and captured.max() == 1, (np.flatnonzero(clean > 1), np.flatnonzero(captured > 1))


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
def test_the_set_pages_read_one_forward_per_model_and_image_set(shipped_models, monkeypatch, app):
    """The pages of a whole set (gallery, slice) and the sidebar's set browsing, with a method that reads
    attention (visits) and a gradient one (saliency): every image of the set goes through the model once,
    in a forward of its batch that captures its attention (the images the sidebar shows included: the
    single-image pages read the same record), and a second render of each page runs no forward."""
    import streamlit as st

    shipped = shipped_models[0]
    images = prepare(load_model(shipped.path).config, test_split().images).tensor  # (2000, C, H, W)
    st.cache_data.clear()
    st.cache_resource.clear()
    with _per_image(monkeypatch, images) as log:
        at = _app()
        at.query_params.update(models=shipped.name)
        at.run()
        _ok(at)
        model, _ = app.catalog.get_model(app.catalog.model_entry(shipped.path))
        renders = []
        for method in ("visits", "saliency"):
            at.selectbox(key="method").set_value(method).run()
            for page in ("gallery", "slice", "gallery", "slice"):
                at.switch_page(f"views/{page}.py").run()
                _ok(at)
                renders.append((*log.of(model), log.new_work(model)))
        at.checkbox(key="only_wrong").check().run()  # the sidebar's browsing of the model's errors
        _ok(at)
        clean, captured = log.of(model)
    assert (clean == 1).all(), (np.flatnonzero(clean != 1), clean[clean != 1])
    assert (captured == 1).all(), (np.flatnonzero(captured != 1), captured[captured != 1])
    for before, after in zip(renders, renders[1:]):  # the first render ran them all; the others none
        assert all((b == a).all() for b, a in zip(before[:2], after[:2]))
    for method in range(2):  # new work (gradients, the slice's perturbed copies) once per page and method
        first_gallery, first_slice, gallery, again = renders[4 * method: 4 * method + 4]
        assert first_slice[2] >= first_gallery[2] and gallery[2] == again[2] == first_slice[2], renders


def test_the_set_pages_maps_are_the_librarys_of_those_images(shipped_models, app):
    """The gallery's maps, read from the set's record for images of several of its batches in any order,
    are what the library draws for a batch of those images alone (the seeded random map included)."""
    from infsa_viz.maps import attribute_images

    shipped = shipped_models[-1]
    entry = app.catalog.model_entry(shipped.path)
    model, _ = app.catalog.get_model(entry)
    key = app.inputs.DEFAULT_BENCHMARK
    indices = [130, 3, 64, 65, 2, 1999]
    x = prepare(model.config, test_split().images[indices])
    for method in ("visits", "random", "saliency"):
        views = app.compute.set_views(entry, key, indices, method, {})
        expected = attribute_images(model, x.tensor, method)
        torch.testing.assert_close(torch.as_tensor(np.stack([v.map for v in views])), expected.maps)
        assert [v.target for v in views] == (None if expected.target is None else expected.target.tolist()) or (
            expected.target is None and all(v.target is None for v in views))
        for view, display in zip(views, x.display):
            np.testing.assert_array_equal(view.display, display)


def test_a_set_forward_that_does_not_fit_is_refused_before_it_runs(shipped_models, monkeypatch, app):
    """With (almost) no memory left, the gallery and the slice say why in one line, and no image of the set
    went through the model in a batch."""
    import streamlit as st

    shipped = shipped_models[0]
    images = prepare(load_model(shipped.path).config, test_split().images).tensor
    st.cache_data.clear()
    st.cache_resource.clear()
    monkeypatch.setattr("infsa_viz.estimate.available_memory", lambda: 3e6)  # the model loads, a batch does not
    with _per_image(monkeypatch, images) as log:
        at = _app()
        at.query_params.update(models=shipped.name)
        at.run()
        for page in ("gallery", "slice"):
            at.switch_page(f"views/{page}.py").run()
            _ok(at)
            errors = [e.value for e in at.error]
            assert any("over the" in e and "memory available" in e for e in errors), (page, errors)
        model, _ = app.catalog.get_model(app.catalog.model_entry(shipped.path))
        clean, _ = log.of(model)
    assert clean.sum() <= 1  # at most the one image the first screen shows alone
    st.cache_data.clear()
    st.cache_resource.clear()
