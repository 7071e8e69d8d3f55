"""The paper's token count in the regular suite: every map method and every metric at 197 tokens, 2 threads.

A 224² image in patches of 16 is 196 patches and a CLS token, the size of the paper's ViT-B/16 (and the size
at which the batched LAPACK of the pinned wheel hung, :mod:`infsa_viz.linalg`). The models are narrow
(width 32, 2 heads, depth 2) so the whole file stays near a minute on 2 CPU threads; each method or
metric runs on a batch of 2 images of each variant, with its cheapest options where it has a step count.
Each test loops over the registries, so a new method or metric is covered with no edit here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from infsa_viz import VARIANTS, VisionTransformer, ViTConfig
from infsa_viz.forward import forward_record
from infsa_viz.maps import METHODS, GroundTruth, attribute, attribute_images
from infsa_viz.metrics.registry import METRICS, RowMetric, RowScoring, Scoring, resolve_settings

B, SIDE, PATCH, GRID = 2, 224, 16, 14  # 14 x 14 patches + CLS = 197 tokens
#: The cheapest setting of a method's step count and beam (each method keeps its other defaults).
CHEAP = {"steps": 2, "n_steps": 4, "width": 2, "expand": 2}


@pytest.fixture(autouse=True)
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module", params=VARIANTS)
def model(request) -> VisionTransformer:
    torch.manual_seed(0)
    config = ViTConfig(img_size=SIDE, in_chans=3, patch_size=PATCH, embed_dim=32, depth=2, num_heads=2,
                       num_classes=4, attention=request.param)
    assert config.num_prefix_tokens + (SIDE // PATCH) ** 2 == 197
    return VisionTransformer(config).eval()


def _images() -> torch.Tensor:
    return torch.randn(B, 3, SIDE, SIDE, generator=torch.Generator().manual_seed(1))


def _truth() -> GroundTruth:
    """A target box top-left, a distractor bottom-right, and three scene objects whose importance follows
    that order (the evidence metric and the oracles read them)."""
    masks = np.zeros((B, 3, SIDE, SIDE), dtype=bool)
    masks[:, 0, :112, :112], masks[:, 1, 112:, 112:] = True, True
    masks[:, 2] = ~(masks[:, 0] | masks[:, 1])
    return GroundTruth(boxes=[np.array([[0, 0, 112, 112]])] * B, objects=("target", "distractor_1", "background"),
                       masks=masks, importance=np.tile([0.6, 0.2, 0.0], (B, 1)))


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_maps_197_tokens(model, method):
    spec = METHODS[method]
    record = forward_record(model, _images(), labels=[0, 1], target="label", capture=spec.reads_attention)
    options = {k: v for k, v in CHEAP.items() if k in spec.defaults}
    result = attribute(record, method, truth=_truth() if spec.needs_truth else None, **options)
    assert result.maps.shape == (B, GRID, GRID)
    assert torch.isfinite(result.maps).all()
    assert result.validity is None or result.validity.row_share.shape[0] == B


@pytest.mark.parametrize("name", list(METRICS))
def test_every_metric_scores_197_tokens(model, name):
    metric = METRICS[name]
    x = _images()
    maps = attribute_images(model, x, "attention").maps  # (B, 14, 14)
    settings = {**resolve_settings({"steps": 4, "insertion_steps": 4, "road_steps": 2, "sanity_images": B}),
                "select": "all", "seed": 0, "batch_size": 64}
    if isinstance(metric, RowMetric):
        record = forward_record(model, x, capture=True)
        row = RowScoring(record=record, maps=maps, method="attention", options={}, settings=settings,
                         maps_of=lambda m, target: attribute(forward_record(m, x), "attention").maps)
        figures, report = metric.score_row(row)
        assert set(figures) == {f.key for f in metric.figures} and isinstance(report, dict)
        values = {k: np.asarray([v], dtype=np.float64) for k, v in figures.items()}
    else:
        record = forward_record(model, x, labels=[0, 1], target="label")
        ctx = Scoring(record=record, maps=maps, positions=np.arange(B), truth=_truth(),
                      negatives=[np.array([[112, 112, 224, 224]])] * B, negative_labels=[np.array([1])] * B,
                      settings=settings, redraw=lambda rows, classes: maps[rows])
        values = {k: np.asarray(v, dtype=np.float64) for k, v in metric.score(ctx).values.items()}
        assert {k: v.shape for k, v in values.items()} == {f.key: (B,) for f in metric.figures}
    for key, value in values.items():  # finite, or nan where the metric declares it undefined: never inf
        assert not np.isinf(value).any(), (name, key, value)
