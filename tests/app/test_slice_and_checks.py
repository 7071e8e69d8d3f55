"""The Slice and the Differences & sanity pages (AppTest): the table holds every model's prediction
and the library's per-image figures, its filters select what they say, a row opens its image; the
difference map is the mass-normalised difference; the randomisation check's similarity is the
library's on a cascading-randomised copy."""

from __future__ import annotations

import re

import numpy as np
import torch

from infsa_viz import load_model
from infsa_viz.data import cue_conditions, test_split
from infsa_viz.evaluation import EvalSettings, score_images
from infsa_viz.maps import attribute
from infsa_viz.estimate import Workload
from infsa_viz.metrics.registry import METRICS, RowMetric, figures_of
from infsa_viz.metrics.sanity import cascading_randomisation, map_similarity
from infsa_viz.preprocess import prepare
from tests.app.test_apptest import _app, _ok, _shown


def _table(at):
    (table,) = [d.value for d in at.dataframe if "image" in d.value.columns]
    return table


def test_the_slice_table_holds_predictions_and_the_librarys_figures(shipped_models):
    at = _app().run()
    at.switch_page("views/slice.py").run()
    at.select_slider(key="slice_images").set_value(100).run()
    _ok(at)
    table = _table(at)
    assert len(table) == 100
    split = test_split(100)
    model = load_model(shipped_models[0].path).eval()
    with torch.no_grad():
        p = torch.softmax(model(prepare(model.config, split.images).tensor).double(), -1).numpy()
    name = shipped_models[0].name
    np.testing.assert_allclose(table[f"p · {name}"], p.max(-1), rtol=0, atol=1e-6)
    assert (table[f"correct · {name}"].to_numpy() == (p.argmax(-1) == split.labels)).all()
    chosen = at.multiselect(key="slice_metrics").value
    work, settings = Workload.of(model, batch=100), EvalSettings().resolved()
    cheap = [name for name, m in METRICS.items() if not isinstance(m, RowMetric) and not m.redraws
             and m.estimate(work, settings).forwards <= 5]  # by the metrics' own estimates
    assert chosen and chosen == cheap and not any(METRICS[m].category == "faithfulness" for m in chosen)
    records, _, _ = score_images(model, split, "attention", protocol=EvalSettings(metrics=chosen, select="all",
                                                                                    target="predicted"))
    for figure in figures_of(chosen):  # columns named by the registry's labels, values the engine's
        expected = np.array([getattr(r, figure.key) for r in records], dtype=np.float64)
        np.testing.assert_allclose(table[f"{figure.label} · {name}"], expected, rtol=0, atol=1e-9, equal_nan=True)

    at.selectbox(key="slice_class").set_value(3).run()
    at.selectbox(key="slice_correct").set_value("some model wrong").run()
    _ok(at)
    shown = _table(at)["image"].to_list()  # numbered from 1, as the sidebar numbers them
    right = np.logical_and.reduce([_correct(m.path, split) for m in shipped_models])
    assert shown == (np.flatnonzero((split.labels == 3) & ~right) + 1).tolist()
    if shown:
        at.selectbox(key="slice_open").set_value(shown[-1] - 1).run()
        at.button(key="slice_open_button").click().run()
        assert at.number_input(key="image_number").value == shown[-1]


@torch.no_grad()
def _correct(path: str, split) -> np.ndarray:
    model = load_model(path).eval()
    return model(prepare(model.config, split.images).tensor).argmax(-1).numpy() == split.labels


def test_the_cue_filter_of_the_cued_benchmark(shipped_models, monkeypatch):
    monkeypatch.setenv("INFSA_VIZ_DATA", "cued-digits-p100")
    at = _app().run()
    at.radio(key="image_set").set_value("cued-digits-p100").run()
    at.switch_page("views/slice.py").run()
    at.multiselect(key="slice_metrics").set_value([]).run()
    at.select_slider(key="slice_images").set_value(100).run()
    at.selectbox(key="slice_cue").set_value("conflicting").run()
    _ok(at)
    split = test_split(100, benchmark="cued-digits-p100")
    conditions = cue_conditions(split.scenes, split.labels)
    assert _table(at)["image"].to_list() == (np.flatnonzero(conditions == "conflicting") + 1).tolist()  # from 1
    assert at.query_params["cue"] in ("conflicting", ["conflicting"])


def test_difference_map_and_randomisation_check(shipped_models):
    at = _app().run()
    at.switch_page("views/checks.py").run()
    _ok(at)
    assert at.selectbox(key="checks_reference").value == shipped_models[0].path  # the softmax model
    captions = [_shown(i.caption) for image in at.image for i in image.proto.imgs]
    assert sum(" − softmax-vit4" in c for c in captions) == len(shipped_models) - 1
    assert at.selectbox(key="checks_stage").value == "embedding"  # every stage randomised
    index = at.number_input(key="image_number").value - 1  # numbered from 1
    x = prepare(load_model(shipped_models[1].path).config, test_split().images[index:index + 1]).tensor
    model = load_model(shipped_models[1].path).eval()
    trained = attribute(model, x, "attention").maps.numpy()
    randomised = next(m for stage, m in cascading_randomisation(model, seed=0) if stage == "embedding")
    similarity = map_similarity(trained, attribute(randomised, x, "attention").maps.numpy())
    line = next(t for m in at.markdown if (t := _shown(m.value)).startswith(f"**{shipped_models[1].label}** — Spearman"))
    rho = float(re.search(r"Spearman ρ ([+-][0-9.]+)", line)[1])
    assert rho == round(float(similarity["spearman"][0]), 2)
