"""docs/metrics.md is generated from the metric registry and stays in step with it."""

from __future__ import annotations

from scripts import metric_docs


def test_metric_docs_are_up_to_date():
    assert metric_docs.main(["--check"]) == 0, "run: python scripts/metric_docs.py"


def test_every_metric_and_reference_map_is_documented():
    from infsa_viz.maps import METHODS
    from infsa_viz.metrics.registry import FIGURES, METRICS

    text = metric_docs.document()
    assert all(f"### {name} (" in text for name in METRICS)
    assert all(f"`{figure}`" in text for figure in FIGURES)
    assert all(f"`{name}`" in text for name, m in METHODS.items() if m.role != "explanation")
    assert all(len(metric_docs._paragraph(type(m))) > 80 for m in METRICS.values())  # one real paragraph each
