"""Conformance: every entry of every registry keeps its contract (scikit-learn's estimator checks).

Each test loops over what the registry holds, so a new metric, map method or model format is
checked with no edit here (the format check also runs with the toy plugin's format registered); a
format declares its own small sample, and one without is named by the test that fails.

* every **metric**: its declaration (category, rule, figures with a direction where ranked, settings
  whose default passes their own check), per-image values of the right shape, finite or ``nan``,
  shares within [0, 1], and, on analytic cases, its direction: a figure's declared ceiling map
  scores better than the same map turned upside down;
* every **map method**: a finite ``(B, h, w)`` map with its declared options and target, and the
  forwards its ``cost`` declares ("none": no forward; "1 forward": one);
* every **model format**: the sample it declares (:attr:`~infsa_viz.formats.ModelFormat.sample`) is
  detected as it (and by no other format first), loads as a model that runs, and a path of another
  kind is refused or detected as another format.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from infsa_viz.formats import FORMATS, detect, load_model
from infsa_viz.forward import forward_record
from infsa_viz.maps import METHODS, GroundTruth, attribute
from infsa_viz.metrics.registry import CATEGORIES, METRICS, RowMetric, RowScoring, Scoring, resolve_settings
from infsa_viz.model import VisionTransformer
from tests.conftest import tiny_config
from tests.counting import counting

B, SIDE, PATCH = 4, 16, 4  # a 4 x 4 patch grid


def _truth() -> GroundTruth:
    """Every image: a target box in the top-left quadrant, a distractor in the bottom-right one, and
    three scene objects (target, distractor, background) whose importance follows that order."""
    masks = np.zeros((B, 3, SIDE, SIDE), dtype=bool)
    masks[:, 0, :8, :8], masks[:, 1, 8:, 8:] = True, True
    masks[:, 2] = ~(masks[:, 0] | masks[:, 1])
    importance = np.tile([0.6, 0.2, 0.0], (B, 1))
    return GroundTruth(boxes=[np.array([[0, 0, 8, 8]])] * B, objects=("target", "distractor_1", "background"),
                       masks=masks, importance=importance)


def _model() -> VisionTransformer:
    torch.manual_seed(0)
    return VisionTransformer(tiny_config("softmax")).eval()


def _context(model: VisionTransformer, maps: torch.Tensor) -> Scoring:
    x = torch.randn(B, 1, SIDE, SIDE, generator=torch.Generator().manual_seed(1))
    record = forward_record(model, x, labels=[0, 1, 2, 0], target="label")
    settings = {**resolve_settings({"steps": 4, "insertion_steps": 4, "road_steps": 4}), "select": "all",
                "seed": 0, "batch_size": 64}
    truth = _truth()
    return Scoring(record=record, maps=maps, positions=np.arange(B), truth=truth,
                   negatives=[np.array([[8, 8, 16, 16]])] * B, negative_labels=[np.array([1])] * B,
                   settings=settings, redraw=lambda rows, classes: maps[rows])


def _ceiling_maps(model: VisionTransformer, figure) -> torch.Tensor | None:
    """The map of the figure's declared ceiling on the analytic case (``None``: none declared)."""
    if figure.ceiling is None:
        return None
    ctx = _context(model, torch.zeros(B, 4, 4))
    options = {"steps": 4, "batch_size": 64} if "steps" in METHODS[figure.ceiling].defaults else {}
    return attribute(ctx.record, figure.ceiling, truth=ctx.truth, **options).maps


@pytest.mark.parametrize("name", list(METRICS))
def test_every_metric_declares_itself(name):
    metric = METRICS[name]
    assert metric.name == name and metric.category in CATEGORIES and metric.rule and metric.figures
    for figure in metric.figures:
        assert figure.label and figure.unit is not None
        assert not figure.ranked or figure.higher_is_better is not None
        assert figure.ceiling is None or METHODS[figure.ceiling].role == "ceiling"
    for setting in metric.settings:
        assert setting.check(setting.default) == setting.default
    assert metric.subset is None or metric.subset in {s.name for s in metric.settings}


@pytest.mark.parametrize("name", [n for n, m in METRICS.items() if not isinstance(m, RowMetric)])
def test_every_metric_scores_every_image_within_its_range(name):
    metric, model = METRICS[name], _model()
    maps = torch.rand(B, 4, 4, generator=torch.Generator().manual_seed(2))
    scores = metric.score(_context(model, maps))
    assert set(scores.values) == {f.key for f in metric.figures}
    for figure in metric.figures:
        values = np.asarray(scores.values[figure.key], dtype=np.float64)
        assert values.shape == (B,), figure.name
        defined = values[np.isfinite(values)]
        assert len(defined) or np.isnan(values).all()
        if figure.percent:
            assert ((defined >= -1e-12) & (defined <= 1 + 1e-12)).all(), (figure.name, defined)
    for curve in metric.curves:
        assert np.asarray(scores.curves[curve.name]).shape[0] == B


@pytest.mark.parametrize("figure_name", [f.name for m in METRICS.values() if not isinstance(m, RowMetric)
                                         for f in m.figures if f.ceiling is not None and f.higher_is_better is not None])
def test_every_figure_prefers_its_ceiling_to_its_ceiling_upside_down(figure_name):
    """The analytic case: the declared ceiling map against the same map with its order reversed."""
    metric = next(m for m in METRICS.values() for f in m.figures if f.name == figure_name)
    figure = next(f for f in metric.figures if f.name == figure_name)
    model = _model()
    best = _ceiling_maps(model, figure)
    worst = best.amax() - best
    good = np.nanmean(metric.score(_context(model, best)).values[figure.key])
    bad = np.nanmean(metric.score(_context(model, worst)).values[figure.key])
    assert (good > bad) if figure.higher_is_better else (good < bad), (figure_name, good, bad)


def test_a_row_metric_reports_every_figure_it_declares():
    for metric in (m for m in METRICS.values() if isinstance(m, RowMetric)):
        model = _model()
        x = torch.randn(2, 1, SIDE, SIDE)
        record = forward_record(model, x, capture=True)
        row = RowScoring(record=record, maps=attribute(record, "attention").maps, method="attention", options={},
                         settings={**resolve_settings({}), "seed": 0},
                         maps_of=lambda m, target: attribute(forward_record(m, x), "attention").maps)
        figures, report = metric.score_row(row)
        assert set(figures) == {f.key for f in metric.figures} and isinstance(report, dict)


@pytest.mark.parametrize("method", [m for m in METHODS if m != "integrated_gradients"])
def test_every_method_gives_a_finite_map_for_what_it_costs(method):
    spec = METHODS[method]
    model = _model()
    x = torch.randn(B, 1, SIDE, SIDE)
    record = forward_record(model, x, labels=[0, 1, 2, 0], target="label", capture=spec.reads_attention)
    options = {"steps": 2} if "steps" in spec.defaults else {}
    with counting(model) as forwards:
        result = attribute(record, method, truth=_truth() if spec.needs_truth else None, **options)
    assert result.maps.shape == (B, 4, 4) and torch.isfinite(result.maps).all()
    assert result.method == method and set(spec.defaults) == set(result.options)
    assert (result.target is not None) == spec.explains_class and spec.description and spec.cost
    if spec.cost.startswith("none"):
        assert forwards.total == 0, spec.cost
    elif spec.cost.startswith("1 forward;"):
        assert forwards.total == 1, spec.cost
    else:
        assert forwards.total >= 1, spec.cost


@pytest.fixture(params=["built-in", "with the toy plugin"])
def formats(request, toy_plugin):
    if request.param == "built-in":
        FORMATS.pop("toy", None)
    return list(FORMATS)


def test_every_format_is_detected_loaded_and_refuses_the_others(tmp_path, formats):
    missing = [name for name in formats if FORMATS[name].sample is None]
    assert not missing, f"formats registered without a sample (ModelFormat.sample): {missing}"
    paths = {}
    for name in formats:
        folder = tmp_path / name
        folder.mkdir()
        paths[name] = str(FORMATS[name].sample(folder))
    for name, spec in paths.items():
        path = spec.split("?")[0]
        assert detect(path) == name, (name, path)  # no format registered before it claims it
        model = load_model(spec)
        assert isinstance(model, VisionTransformer) and not model.training
        size, channels = model.config.img_size, model.config.in_chans
        with torch.no_grad():
            assert torch.isfinite(model(torch.randn(1, channels, size, size))).all()
        for other, other_spec in paths.items():  # another format's sample is not this format
            if other != name:
                assert detect(other_spec.split("?")[0]) != name, (other, name)
    with pytest.raises(ValueError, match="formats tried"):
        detect(Path(__file__))  # a path of no format
