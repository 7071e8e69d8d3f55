"""python -m benchmarks metric-cost: every per-image metric timed, plus the interventions and the greedy oracle."""

from __future__ import annotations

from benchmarks.metric_cost import metric_cost
from infsa_viz.metrics.registry import METRICS, RowMetric


def test_every_per_image_metric_is_timed():
    report = metric_cost({"shipped": ("models/softmax-vit4", "cluttered-digits")}, n_images=2, repeats=1)
    times = report["models"]["shipped"]["ms_per_image"]
    assert {n for n, m in METRICS.items() if not isinstance(m, RowMetric)} <= set(times)
    assert all(v >= 0 for v in times.values()) and report["models"]["shipped"]["patches"] == 36
    assert report["protocol"]["statistic"] == "median"
