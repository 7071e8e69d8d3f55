"""The built-in metrics of the registry inside the engine, on a tiny model: per-image figures
equal the metric functions, subsets follow the image index, class switch, sanity and ranks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from infsa_viz.data import LabelledImages
from infsa_viz.evaluation import EvalSettings, evaluate, score_images
from infsa_viz.maps import attribute_images
from infsa_viz.metrics import (
    class_switch,
    complexity,
    deletion_insertion,
    energy_pointing_game,
)
from infsa_viz.model import VisionTransformer
from infsa_viz.preprocess import Preprocessing, preprocess


def _data(n: int = 4) -> LabelledImages:
    rng = np.random.default_rng(0)
    labels = np.array([0, 1, 2, 0, 1, 2][:n])
    return LabelledImages(
        images=rng.integers(0, 256, (n, 16, 16), dtype=np.uint8), labels=labels,
        boxes=[np.array([[0, 0, 8, 8]])] * n, negative_boxes=[np.array([[8, 8, 16, 16]])] * n,
        names=[f"img{i}" for i in range(n)], negative_labels=[np.array([(c + 1) % 3]) for c in labels],
    )


@pytest.fixture
def model(make_config):
    return VisionTransformer(make_config("softmax", preprocessing=Preprocessing(mean=0.4, std=0.3))).eval()


def test_records_hold_the_metric_functions_on_their_subsets(model):
    data = _data()
    protocol = EvalSettings(steps=3, select="all", subsample=2, road_images=1, road_steps=3, insertion_steps=4,
                            sanity_images=0)
    records, _, parts = score_images(model, data, "chefer2021", protocol=protocol, name="m")
    x = preprocess(model, data.images)
    maps = attribute_images(model, x, "chefer2021", target=torch.as_tensor(data.labels)).maps
    energy = energy_pointing_game(maps, data.boxes, image_size=16)
    di = deletion_insertion(model, x[:2], maps[:2], data.labels[:2], patch_size=4, steps=4)
    switched = attribute_images(model, x[:2], "chefer2021", target=torch.tensor([1, 2])).maps
    shift = class_switch(maps[:2], switched, data.boxes[:2], [b[None] for b in [data.negative_boxes[0][0]] * 2],
                         image_size=16)["shift"]
    for i, r in enumerate(records):
        assert r.energy_pointing_game == pytest.approx(energy[i], abs=1e-6)
        assert r.complexity == pytest.approx(complexity(maps)[i], abs=1e-6)
        assert math.isfinite(r.deletion_auc) == (i < 2) and math.isfinite(r.road_morf_aoc) == (i < 1)
        if i < 2:
            assert r.deletion_auc == pytest.approx(di.deletion_auc[i], abs=1e-6)
            assert r.class_switch_shift == pytest.approx(shift[i], abs=1e-6)
    assert parts["road"]["ran"] and parts["class_switch"]["ran"] and parts["road"]["images"] == "index < 1"


def test_a_map_without_a_class_does_not_shift(model):
    protocol = EvalSettings(steps=2, select="all", road_images=0, sanity_images=0)
    records, _, _ = score_images(model, _data(2), "rollout", protocol=protocol)
    assert all(r.class_switch_shift == 0 for r in records)


def test_evaluate_adds_sanity_flags_and_ranks(model):
    protocol = EvalSettings(steps=2, select="all", subsample=2, road_images=0, sanity_images=3)
    result = evaluate([("m", model)], ["attention", "chefer2021", "random"], _data(4), protocol=protocol)
    rows = {r["method"]: r for r in result.rows}
    assert rows["random"]["sanity_fails"] is True  # seeded noise ignores the model entirely
    assert rows["random"]["sanity_random_logit_spearman"] is None
    assert rows["chefer2021"]["sanity"]["random_logit"] is not None
    assert [s["stage"] for s in rows["attention"]["sanity"]["stages"]] == ["head", "block_1", "block_0", "embedding"]
    assert all(r["passes_morf_fails_sanity"] in (True, False, None) for r in result.rows)
    assert {r["method"] for r in result.rankings} == set(rows) and all(r["mean_rank"] for r in result.rows)
    assert rows["chefer2021"]["n_subsample"] == 2 and rows["chefer2021"]["n_class_switch"] == 2


def test_road_row_mean_is_over_the_curve_selection_only():
    """ROAD divides by p_0: a misclassified image (tiny p_0, huge score) must not enter the row mean."""
    from infsa_viz.evaluation import ImageRecord, summarise

    def record(index, road, deletion, predicted=0):
        logits = np.zeros(3)
        logits[predicted] = 1.0
        return ImageRecord(model="m", variant="softmax", method="attention", index=index, name=str(index), label=0,
                           logits=logits, target=None, explained=0,
                           figures={"morf_aoc": 10.0, "road_morf_aoc": road, "road_lerf_auc": road,
                                    "deletion_auc": deletion, "insertion_auc": math.nan})

    records = [record(0, 40.0, 0.2), record(1, -300.0, 0.4, predicted=1), record(2, 60.0, 0.6),
               record(3, math.nan, math.nan)]
    row = summarise(records, select="correct", protocol={})
    assert row["road_morf_aoc"] == pytest.approx(50.0) and row["n_road"] == 2
    assert row["deletion_auc"] == pytest.approx(0.4) and row["n_subsample"] == 3  # not a curve-selected figure
    assert summarise(records, select="all", protocol={})["road_morf_aoc"] == pytest.approx(-200.0 / 3)


@pytest.mark.parametrize("target", ["predicted", "label", "top 2"])
def test_sanity_checks_explain_the_class_the_run_asks_for(model, monkeypatch, target):
    """The sanity check explains the run's target class (it used to explain the label always)."""
    from infsa_viz.metrics.catalog import checks as catalog
    from infsa_viz.targets import Target

    seen = []
    real = catalog.sanity_report

    def spy(model, images, maps_of, targets, **kwargs):
        seen.append(None if targets is None else targets.tolist())
        return real(model, images, maps_of, targets, **kwargs)

    monkeypatch.setattr(catalog, "sanity_report", spy)
    data = _data(4)
    protocol = EvalSettings(steps=2, select="all", subsample=0, road_images=0, sanity_images=4, target=target,
                            metrics=["sanity"])
    evaluate([("m", model)], ["saliency"], data, protocol=protocol)
    with torch.no_grad():
        logits = model(preprocess(model, data.images))
    assert seen == [Target.parse(target).resolve(logits, data.labels).tolist()]
    if target != "label":  # the case that used to be wrong differs from the labels here
        assert seen[0] != data.labels.tolist()


def test_evidence_figures_are_the_evidence_functions_on_the_shared_importance(make_config):
    """The engine measures each object's importance once per chunk and scores every map against it."""
    from infsa_viz.data import test_split
    from infsa_viz.evaluation import object_importance
    from infsa_viz.metrics import evidence_oracle, evidence_scores

    model = VisionTransformer(make_config("softmax", num_classes=10)).eval()
    data = test_split(6)
    protocol = EvalSettings(metrics=["evidence"], chunk=3)
    result = evaluate([("m", model)], ["attention", "evidence_oracle"], data, protocol=protocol)
    found = object_importance(model, data, explained=data.labels)
    x = preprocess(model, data.images)
    expected = evidence_scores(attribute_images(model, x, "attention").maps, found.masks, found.prob_drop)
    records = [r for r in result.records if r.method == "attention"]
    np.testing.assert_allclose([r.evidence_spearman for r in records], expected["evidence_spearman"], atol=1e-9)
    np.testing.assert_allclose([r.mask_relevance_mass_accuracy for r in records],
                               expected["relevance_mass_accuracy"], atol=1e-9)
    np.testing.assert_allclose(np.stack([r.curves["importance"] for r in records]), found.prob_drop)
    oracle = [r for r in result.records if r.method == "evidence_oracle"]
    painted = evidence_oracle(found.masks, found.prob_drop, patch_size=model.patch_size)
    assert [r.map_max for r in oracle] == pytest.approx(painted.reshape(6, -1).max(1), abs=1e-6)
    row = next(r for r in result.rows if r["method"] == "attention")
    assert row["protocol"]["evidence"]["objects"][0] == "target" and row["evidence_spearman_ci"] is not None


def test_evidence_is_undefined_without_scenes(model):
    records, _, parts = score_images(model, _data(2), "attention", protocol=EvalSettings(metrics=["evidence"]))
    assert all(math.isnan(r.evidence_spearman) for r in records) and "no scenes" in parts["evidence"]["undefined"]
