"""The evaluation engine and its per-image record agree with the metric functions."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from sklearn.metrics import auc

from infsa_viz.data import LabelledImages
from infsa_viz.evaluation import EvalSettings, default_methods, evaluate, score_images, summarise
from infsa_viz.maps import METHODS, attribute_images
from infsa_viz.metrics import aopc, box_auc, box_curves, lerf_auc, morf_aoc, perturbation_curves, pointing_game
from infsa_viz.model import VisionTransformer
from infsa_viz.preprocess import Preprocessing, prepare, preprocess
from tests.counting import counting


def _data(n: int = 4, *, labels=None) -> LabelledImages:
    rng = np.random.default_rng(0)
    return LabelledImages(
        images=rng.integers(0, 256, (n, 16, 16), dtype=np.uint8),
        labels=np.array(labels if labels is not None else rng.integers(0, 3, n)),
        boxes=[np.array([[0, 0, 8, 8]])] * n,
        negative_boxes=[np.array([[8, 8, 16, 16]])] * n,
        names=[f"img{i}" for i in range(n)],
    )


@pytest.fixture
def model(make_config):
    return VisionTransformer(make_config("pure_infsa", preprocessing=Preprocessing(mean=0.4, std=0.3))).eval()


def test_records_equal_the_metric_functions_on_the_same_maps(model):
    data = _data()
    protocol = EvalSettings(steps=4, select="all")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every figure is defined here: no undefined-metric warning
        records, result, parts = score_images(model, data, "visits", protocol=protocol, name="m")
    x = preprocess(model, data.images)
    maps = attribute_images(model, x, "visits").maps
    torch.testing.assert_close(result.maps, maps)
    curves = perturbation_curves(model, x, maps, data.labels, patch_size=4, order="both", steps=4)
    expect = {"morf_aoc": morf_aoc(curves["morf"], select="all").per_image,
              "lerf_auc": lerf_auc(curves["lerf"], select="all").per_image,
              "aopc": aopc(curves["morf"], select="all").per_image,
              "box_roc_auc": box_auc(maps, data.boxes, image_size=16).roc_auc,
              "box_pr_auc": box_auc(maps, data.boxes, image_size=16).pr_auc,
              "pointing_hit": pointing_game(maps, data.boxes, image_size=16).hits}
    for i, r in enumerate(records):
        assert (r.model, r.method, r.index, r.name, r.label) == ("m", "visits", i, f"img{i}", int(data.labels[i]))
        for key, values in expect.items():
            assert getattr(r, key) == pytest.approx(values[i], abs=1e-12), key
        np.testing.assert_allclose(r.morf, curves["morf"].probs[i])
        with torch.no_grad():
            np.testing.assert_allclose(r.logits, model(x[i:i + 1])[0].double().numpy(), atol=1e-6)
        curve = box_curves(maps[i:i + 1], data.boxes[i:i + 1], image_size=16)[0]
        assert auc(curve.fpr, curve.tpr) == pytest.approx(r.box_roc_auc)
        assert r.validity["layers"] == [1] and r.target is None
    fractions, removed = parts["steps"]
    assert fractions.tolist() == [0, 0.25, 0.5, 0.75, 1.0] and removed.tolist() == [0, 4, 8, 12, 16]


def test_unknown_labels_score_and_explain_the_prediction(model):
    data = _data(labels=[-1, -1, 0, 1])
    records, _, _ = score_images(model, data, "saliency", protocol=EvalSettings(steps=2, target="label"))
    with torch.no_grad():
        predicted = model(preprocess(model, data.images)).argmax(-1).tolist()
    assert [r.label for r in records] == [None, None, 0, 1]
    assert [r.target for r in records] == predicted[:2] + [0, 1]
    assert [r.explained for r in records] == predicted[:2] + [0, 1]
    assert records[0].correct is None and records[2].scalars()["label"] == 0


def test_images_without_boxes_have_undefined_box_figures(model):
    data = LabelledImages(images=_data().images, labels=np.zeros(4, np.int64), boxes=[np.zeros((0, 4))] * 4)
    records, _, _ = score_images(model, data, "attention", protocol=EvalSettings(steps=2))
    assert all(math.isnan(r.box_roc_auc) and math.isnan(r.pointing_hit) for r in records)
    assert all(np.isnan(r.precision).all() for r in records)
    row = summarise(records, select="all", protocol={})
    assert row["box_roc_auc"] is None and row["box_undefined"] == 4 and row["n_scored"] == 4


def test_evaluate_rows_aggregate_the_records_and_are_chunk_independent(model):
    data = _data(6)
    results = [evaluate([("m", model)], ["attention", "random"], data, protocol=EvalSettings(steps=3, chunk=chunk,
                                                                                                  select="all"))
               for chunk in (2, 6)]
    a, b = results
    assert [r["method"] for r in a.rows] == ["attention", "random"] and len(a.records) == 12
    # chunk is in the protocol; the mean rank is relative to the random map, drawn per chunk
    figures = lambda row: {k: v for k, v in row.items() if k not in ("protocol", "mean_rank")}  # noqa: E731
    assert figures(a.rows[0]) == figures(b.rows[0])  # attention maps do not depend on the chunking
    first = a.rows[0]
    mine = [r for r in a.records if r.method == "attention"]
    assert first["morf_aoc"] == pytest.approx(np.mean([r.morf_aoc for r in mine]), abs=1e-3)
    assert first["box_pr_auc"] == pytest.approx(np.mean([r.box_pr_auc for r in mine]), abs=1e-5)
    assert first["protocol"]["evaluation"]["chunk"] == 2 and first["protocol"]["map"]["method"] == "attention"
    # A row's protocol covers every chunk: the random map is seeded per chunk (seed + first index).
    assert a.rows[1]["protocol"]["map"]["options"]["seed"] == {"varies_by_chunk": True, "min": 0, "max": 4}
    assert b.rows[1]["protocol"]["map"]["options"]["seed"] == 0
    assert a.dataset == data.description and a.protocol["world_size"] == 1


def test_protocol_validation_and_default_methods():
    assert set(default_methods()) == {n for n, m in METHODS.items() if m.in_default_report}
    for bad in ({"target": "truth"}, {"target": -1}, {"select": "some"}, {"steps": 0}, {"baseline": "zero"}):
        with pytest.raises(ValueError):
            EvalSettings(**bad)
    assert EvalSettings(target=3).to_dict()["target_rule"].endswith("class 3")


@pytest.mark.parametrize("methods", [["attention"], ["attention", "rollout", "visits", "saliency", "random",
                                                     "chefer2021", "box_oracle"]])
def test_one_clean_forward_per_chunk_whatever_the_number_of_methods(model, methods):
    """Every method and metric of a chunk reads the chunk's one forward record: the images are
    prepared once and the clean forward (no gradient, the chunk's own input) runs once per chunk."""
    data = _data(6)
    chunks = [[0, 1, 2], [3, 4, 5]]
    clean = [prepare(model, data.subset(c).images).tensor for c in chunks]
    protocol = EvalSettings(steps=2, chunk=3, select="all", metrics=["perturbation", "box_auc", "pointing_game",
                                                                     "class_switch"], subsample=6)
    with counting(model, clean) as forwards:
        found = evaluate([("m", model)], methods, data, protocol=protocol)
    assert len(found.rows) == len(methods) and all(r["n_images"] == 6 for r in found.rows)
    assert forwards.clean == len(chunks)


def _scene_run(make_config, methods, **settings):
    """``(clean forwards, chunks, evaluation)`` of ``evaluate`` on the first generated scenes, chunks of 2."""
    from infsa_viz.data import test_split

    model = VisionTransformer(make_config("softmax", num_classes=10)).eval()
    data = test_split(4)
    chunks = [[0, 1], [2, 3]]
    clean = [prepare(model, data.subset(c).images).tensor for c in chunks]
    protocol = EvalSettings(steps=2, chunk=2, subsample=4, road_images=1, road_steps=2, insertion_steps=2,
                            sanity_images=2, **settings)
    with counting(model, clean) as forwards:
        found = evaluate([("m", model)], methods, data, protocol=protocol)
    assert len(found.rows) == len(methods)
    return forwards.clean, len(chunks), found


def test_the_metrics_that_used_to_repeat_the_clean_forward_read_the_record(make_config):
    """The FunnyBirds checks, target sensitivity, the evidence metrics, the class switch and the sanity
    checks (which reuse the first chunk's record and trained maps), with occlusion (whose clean evaluation
    reads the record): at most one clean forward per chunk (the fast version of the test below)."""
    clean, chunks, found = _scene_run(make_config, ["attention", "saliency", "occlusion", "random"],
                                      metrics=["perturbation", "funnybirds", "target_sensitivity", "evidence",
                                               "class_switch", "sanity"])
    assert clean <= chunks, clean
    assert all(r["sanity"]["n_images"] == 2 for r in found.rows)


@pytest.mark.slow
def test_default_methods_and_metrics_run_the_clean_forward_once_per_chunk(make_config):
    """The conformance test of the forward record: ``evaluate`` with every default method and metric on
    generated scenes (so the FunnyBirds checks, the evidence metrics and the sanity checks all run) runs
    the trained model without gradients on the chunk's clean images, or any subset of them, at most once
    per chunk. A metric or a map that runs its own clean forward instead of reading the record fails it;
    forwards that do new work (perturbed copies, gradients, randomised copies) are not counted."""
    from infsa_viz.evaluation import default_methods

    protocol = EvalSettings()
    assert set(protocol.metrics) >= {"funnybirds", "target_sensitivity", "sanity", "evidence", "class_switch"}
    clean, chunks, _ = _scene_run(make_config, default_methods())
    assert clean <= chunks, clean
