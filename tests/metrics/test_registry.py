"""The metric registry: every figure declared once, settings bounded, a toy metric one module away."""

from __future__ import annotations

import numpy as np
import pytest

from infsa_viz.metrics import registry
from infsa_viz.metrics.registry import FIGURES, METRICS, SETTINGS, Figure, Metric, Scores, Setting, register_metric


def test_every_figure_is_declared_once_with_a_direction_and_unit():
    keys = [f.key for m in METRICS.values() for f in m.figures]
    assert len(keys) == len(set(keys)) == len(FIGURES)
    for figure in FIGURES.values():
        assert figure.label and figure.unit and figure.images in registry.IMAGE_SUBSETS
        assert figure.ranked <= (figure.higher_is_better is not None)
        assert figure.ceiling is None or figure.ceiling in __import__("infsa_viz.maps", fromlist=["METHODS"]).METHODS
    for metric in METRICS.values():
        assert metric.rule and metric.category in registry.CATEGORIES
        assert metric.subset is None or metric.subset in SETTINGS


def test_settings_are_checked_with_their_bounds():
    steps = SETTINGS["steps"]
    assert steps.check(5) == 5 and steps.flag == "--steps"
    for bad in (0, 10**6, 2.5, True, "5"):
        with pytest.raises(ValueError, match=r"steps=.*expected an integer >= 1 and <= 1000"):
            steps.check(bad)
    assert SETTINGS["blur_sigma"].check(None) is None
    with pytest.raises(ValueError, match="baseline='zero'"):
        SETTINGS["baseline"].check("zero")
    with pytest.raises(ValueError, match="not settings of any metric"):
        registry.resolve_settings({"stepz": 3})


def test_registration_refuses_duplicates_and_contradictions():
    class Clash(Metric):
        name = "clash"
        category = "complexity"
        rule = "r"
        figures = (Figure("morf_aoc", "again", True, "u"),)

        def score(self, ctx):  # pragma: no cover
            return Scores({})

    with pytest.raises(ValueError, match="already declared"):
        register_metric(Clash)

    class OtherSteps(Clash):
        name = "other_steps"
        figures = (Figure("other_steps_figure", "x", True, "u"),)
        settings = (Setting("steps", 7, int, "different default"),)

    with pytest.raises(ValueError, match="differs"):
        register_metric(OtherSteps)
    assert "clash" not in METRICS and "other_steps" not in METRICS


class MapPeak(Metric):
    """A toy metric: the map's largest value (descriptive)."""

    name = "map_peak"
    category = "complexity"
    rule = "the map's largest value"
    figures = (Figure("map_peak", "map peak", None, "map units", ranked=False),)

    def score(self, ctx):
        return Scores({"map_peak": ctx.maps.flatten(1).amax(1).double().numpy()}, {"toy": True})


@pytest.fixture
def toy_metric(registries):
    register_metric(MapPeak)
    return METRICS["map_peak"]


def test_a_registered_metric_reaches_rows_columns_and_records(toy_metric, make_config):
    from infsa_viz.data import test_split
    from infsa_viz.evaluation import EvalSettings, evaluate, table_columns
    from infsa_viz.model import VisionTransformer

    assert "map_peak" in table_columns()
    model = VisionTransformer(make_config("softmax", num_classes=10)).eval()
    settings = EvalSettings(metrics=["perturbation", "map_peak"], steps=2)
    result = evaluate([("m", model)], ["attention"], test_split(3), protocol=settings)
    row = result.rows[0]
    peaks = [r.map_peak for r in result.records]
    assert row["map_peak"] == pytest.approx(np.mean(peaks), abs=1e-5) and row["map_peak_ci"] is not None
    assert row["protocol"]["map_peak"]["toy"] is True and "box_pr_auc" not in row
    assert all(r.map_peak == pytest.approx(r.map_max) for r in result.records)
