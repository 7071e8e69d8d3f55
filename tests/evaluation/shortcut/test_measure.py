"""Cue shares of one model (infsa_viz/evaluation/shortcut/measure.py and salience.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from infsa_viz import VisionTransformer
from infsa_viz.data import test_split
from infsa_viz.evaluation.shortcut import SALIENCE, cue_regions, cue_share, identical_maps, measure_model, salient_scene
from infsa_viz.maps import attribute_images
from infsa_viz.stats.shortcut import detection_auroc
from tests.conftest import tiny_config
from tests.evaluation.shortcut.planted import CueBlind, CueReader

N = 24
METHODS = ("edge", "intensity", "random", "evidence_oracle")


@pytest.fixture(scope="module")
def scenes():
    return test_split(N, benchmark="cued-digits").scenes


def test_cue_share_is_one_on_the_cue_alone_and_uniform_over_objects():
    regions = np.zeros((1, 3, 8, 8), bool)
    regions[0, 0, :4], regions[0, 1, 4:, :4], regions[0, 2, 4:, 4:] = True, True, True  # cue = object 1
    on_cue = np.zeros((1, 2, 2))
    on_cue[0, 1, 0] = 1.0
    np.testing.assert_allclose(cue_share(on_cue, regions, 1), [1.0])
    np.testing.assert_allclose(cue_share(np.ones((1, 2, 2)), regions, 1), [1 / 3])
    assert np.isnan(cue_share(-np.ones((1, 2, 2)), regions, 1)).all()
    with pytest.raises(ValueError, match="cue_object"):
        cue_share(on_cue, regions, 3)


def test_salient_scenes_change_only_the_cue(scenes):
    scene = scenes[0]
    c = scene.names.index("cue")
    base = scene.render(remove=["cue"])
    for name in SALIENCE:
        changed, box = salient_scene(scene, name)
        np.testing.assert_array_equal(changed.render(remove=["cue"]), base)
        x0, y0, x1, y1 = box
        side = 14 if name == "large" else 7
        assert (x1 - x0, y1 - y0) == (side, side) and 0 <= x0 and x1 <= 48 and 0 <= y0 and y1 <= 48
        regions = cue_regions(changed, box)
        assert regions[c].sum() == side * side and regions.sum(axis=0).max() <= 1
    faint, _ = salient_scene(scene, "faint")
    assert set(np.unique(faint.parts[c])) <= {0, 96}
    assert salient_scene(scene, "absent")[0].parts[c].size == 0
    with pytest.raises(ValueError, match="salience"):
        salient_scene(scene, "loud")


def test_identical_maps_are_grouped_up_to_scale_and_tolerance():
    rng = np.random.default_rng(0)
    a = rng.random((5, 6, 6))
    groups = identical_maps({"a": a, "b": 3.0 * a, "c": rng.random((5, 6, 6)), "d": a + 1e-5})
    assert groups == [["a", "b", "d"]]
    assert identical_maps({"a": a, "d": a + 1e-5}, tolerance=0.0) == []
    with pytest.raises(ValueError, match="tolerance"):
        identical_maps({"a": a}, tolerance=1.5)


def test_linear_infsa_attention_visits_and_perron_are_one_map_and_softmax_s_are_not():
    images = torch.randn(4, 1, 16, 16)
    found = {}
    for variant in ("linear_infsa", "softmax"):
        model = VisionTransformer(tiny_config(variant)).eval()
        maps = {m: attribute_images(model, images, m).maps.numpy() for m in ("attention", "visits", "perron", "rollout")}
        found[variant] = identical_maps(maps)
    assert found["linear_infsa"] == [["attention", "visits", "perron"]]
    assert found["softmax"] == []


def test_a_planted_cue_reader_is_detected_by_the_oracle_and_the_edge_map_is_blind_to_the_regime(scenes):
    shortcut = [measure_model(CueReader(gain=g).eval(), scenes, methods=METHODS, salience=("as_generated",))
                for g in (4.0, 6.0, 8.0)]
    useless = [measure_model(CueBlind(seed=s).eval(), scenes, methods=METHODS, salience=("as_generated",))
               for s in (0, 1, 2)]

    def score(result, method):
        return float(np.nanmean(result.shares["as_generated"][method]))

    oracle = detection_auroc([score(r, "evidence_oracle") for r in shortcut],
                             [score(r, "evidence_oracle") for r in useless])
    assert oracle["auroc"] == 1.0  # (3 models a side: a wide interval)
    for method in ("edge", "intensity", "random"):  # they never read the model: the same share in both regimes
        for result in shortcut[1:] + useless:
            np.testing.assert_array_equal(result.shares["as_generated"][method],
                                          shortcut[0].shares["as_generated"][method])
    edge = detection_auroc([score(r, "edge") for r in shortcut], [score(r, "edge") for r in useless])
    assert edge["auroc"] == 0.5
    # the cue reader's evidence is the cue's alone; the blind model's cue evidence is 0 but where a
    # digit's ink enters the cue's window
    assert all((r.evidence["as_generated"] > 0.5).all() for r in shortcut)
    assert all(np.median(np.abs(r.evidence["as_generated"])) < 1e-9 for r in useless)


def test_measure_model_reports_every_salience_and_round_trips(scenes):
    result = measure_model(CueReader().eval(), scenes[:6], methods=("edge", "evidence_oracle"))
    assert list(result.shares) == list(SALIENCE)
    np.testing.assert_allclose(result.evidence["absent"], 0.0, atol=1e-12)  # nothing left to remove
    again = type(result).from_dict(result.to_dict(digits=12))
    for name in SALIENCE:
        np.testing.assert_allclose(again.shares[name]["edge"], result.shares[name]["edge"], atol=1e-11)
    with pytest.raises(ValueError, match="method"):
        measure_model(CueReader().eval(), scenes[:2], methods=("nope",))
