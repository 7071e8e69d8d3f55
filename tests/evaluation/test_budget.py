"""An evaluation's time and memory estimated before work (infsa_viz/evaluation/budget.py)."""

from __future__ import annotations

import logging

import pytest
import torch

from infsa_viz.estimate import PassTime, Workload, format_seconds, seconds_per_pass
from infsa_viz.evaluation import EvalSettings, evaluate
from infsa_viz.evaluation.budget import evaluation_estimate
from infsa_viz.metrics.registry import METRICS
from infsa_viz.model import VisionTransformer, ViTConfig
from tests.evaluation.test_engine import _data


def _model() -> VisionTransformer:
    torch.manual_seed(0)
    return VisionTransformer(ViTConfig(embed_dim=16, depth=2, num_heads=2)).eval()


def test_the_estimate_adds_every_declared_pass_times_the_measured_seconds():
    model = _model()
    protocol = EvalSettings(metrics=["perturbation", "box_auc"], steps=4)
    found = evaluation_estimate([("m", model)], ["attention", "saliency"], protocol, n_images=10,
                                per_pass=lambda m: PassTime(fixed=0.0, per_image=0.5))
    work_forwards = 10 * (1 + 2)  # the maps: attention one forward, saliency a forward and a backward
    metric_forwards = 2 * 10 * (2 * (4 - 1) + 1)  # MoRF/LeRF per map and image: 3 partial steps per order + the fill
    assert found.passes == work_forwards + metric_forwards
    assert found.seconds == pytest.approx(0.5 * found.passes)
    weights = 4 * sum(p.numel() for p in model.parameters())
    assert found.peak_bytes > weights and found.per_pass == {"m": PassTime(0.0, 0.5)}
    line = found.describe()
    assert line.startswith("about 1 min 25 s and ") and "170 model passes (10 image(s) x 2 method(s) x 1 model(s))" in line
    # a fixed cost per call weighs on the maps' calls of a chunk (10 images) more than on the metric's batches
    fixed = evaluation_estimate([("m", model)], ["attention", "saliency"], protocol, n_images=10,
                                per_pass=lambda m: PassTime(fixed=1.0, per_image=0.0))
    assert fixed.seconds == pytest.approx(work_forwards / 10 + metric_forwards / 70)  # 10 images x 7 copies a batch


def test_a_metric_on_an_image_subset_counts_only_those_images():
    protocol = EvalSettings(metrics=["deletion_insertion"], subsample=3, insertion_steps=4)
    found = evaluation_estimate([("m", _model())], ["attention"], protocol, n_images=10,
                                per_pass=lambda m: PassTime(0.0, 1.0))
    per_image = METRICS["deletion_insertion"].estimate(Workload.of(_model(), batch=3), protocol.resolved()).forwards
    assert found.passes == 10 * 1 + 3 * per_image


def test_the_measured_seconds_per_pass_are_positive_and_small_for_a_small_model():
    found = seconds_per_pass(_model())
    assert found is not None and 0 < found.per_image < 5 and found.fixed >= 0
    assert found.per_pass(1) >= found.per_pass(16) > 0
    assert seconds_per_pass(torch.nn.Linear(2, 2)) is None


def test_seconds_read_as_a_person_writes_them():
    assert [format_seconds(s) for s in (0.25, 42, 200, 3900)] == ["0.25 s", "42 s", "3 min 20 s", "1 h 05 min"]


def test_every_finished_chunk_is_logged_with_its_time_and_the_time_left(caplog):
    model = VisionTransformer(ViTConfig(img_size=16, patch_size=4, embed_dim=16, depth=2, num_heads=2,
                                        num_classes=3)).eval()
    with caplog.at_level(logging.INFO, logger="infsa_viz.evaluation.engine"):
        evaluate([("m", model)], ["attention", "random"], _data(4),
                 protocol=EvalSettings(metrics=["box_auc"], chunk=2, select="all"))
    ticks = [r.getMessage() for r in caplog.records if "left)" in r.getMessage()]
    assert len(ticks) == 4  # 2 chunks x 2 methods
    assert ticks[0].startswith("m: attention on images 0-1: ") and "(1/4; " in ticks[0]
    assert ticks[-1].startswith("m: random on images 2-3: ") and "(4/4; " in ticks[-1] and "about 0" in ticks[-1]
