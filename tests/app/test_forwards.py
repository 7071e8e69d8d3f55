"""The app keeps one forward record per model and image: rendering every page for one model and one
image runs the model's clean forward on that image (no gradient, the image as the model sees it) once,
and that one forward captures the attention every page reads (the conformance test of issue 46 for the
app, as ``tests/evaluation/test_engine.py`` is the evaluation's). Forwards that do new work (gradients,
perturbed or randomised copies, other images of the set) are not counted."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import pytest
import torch

from infsa_viz import load_model
from infsa_viz.data import test_split
from infsa_viz.model import capture
from infsa_viz.preprocess import prepare
from tests.app.test_apptest import _app, _ok
from tests.app.test_own_models import PAGES
from tests.counting import Forwards


class _Log:
    """Every forward of every top-level model, by model: a :class:`~tests.counting.Forwards` per model
    (clean: no gradient and every row the watched image), and the clean forwards that captured attention."""

    def __init__(self, clean: torch.Tensor) -> None:
        self.clean = [clean]
        self.by_model: dict[int, tuple[torch.nn.Module, Forwards]] = {}
        self.captures: dict[int, int] = {}
        self.recording = 0

    def __call__(self, module: torch.nn.Module, args: tuple) -> None:
        if not hasattr(module, "forward_features"):  # models only, not their blocks
            return
        _, counter = self.by_model.setdefault(id(module), (module, Forwards(self.clean)))
        before = counter.clean
        counter(module, args)
        if counter.clean > before and self.recording:
            self.captures[id(module)] = self.captures.get(id(module), 0) + 1

    def of(self, model: torch.nn.Module) -> tuple[int, int]:
        """``(clean forwards, of which with attention captured)`` of ``model``."""
        counter = self.by_model.get(id(model), (None, Forwards([])))[1]
        return counter.clean, self.captures.get(id(model), 0)


@contextmanager
def _logging(monkeypatch, clean: torch.Tensor) -> Iterator[_Log]:
    log = _Log(clean)
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


def test_every_page_reads_one_forward_per_model_and_image(shipped_models, monkeypatch, app):
    """Every page, with methods that read attention (attention, visits) and a gradient one (saliency),
    for one model on one image: one clean forward of that image in all, which captured the attention."""
    import streamlit as st

    shipped = shipped_models[0]
    image = prepare(load_model(shipped.path).config, test_split().images[2:3]).tensor  # image 3 of the set
    st.cache_data.clear()
    st.cache_resource.clear()
    with _logging(monkeypatch, image) as log:
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
    assert (clean, captured) == (1, 1), (clean, captured)
