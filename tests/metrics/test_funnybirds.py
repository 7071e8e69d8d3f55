"""FunnyBirds-style checks (infsa_viz/metrics/funnybirds.py) on planted scenes and classifiers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from infsa_viz import Preprocessing, VisionTransformer, ViTConfig
from infsa_viz.data import Scene, test_split
from infsa_viz.evaluation import EvalSettings
from infsa_viz.evaluation.engine import score_images
from infsa_viz.metrics.funnybirds import (
    THRESHOLDS,
    background_independence,
    completeness_checks,
    important_objects,
    object_shares,
    scene_inputs,
    target_sensitivity,
)
from tests.conftest import tiny_config
from tests.evaluation.planted import BOXES, PATCH, SIZE, PlantedModel, block_scene

TARGET, DISTRACTOR, FLAT = np.zeros((4, 4)), np.zeros((4, 4)), np.ones((4, 4))
TARGET[:2, :2] = 1  # the target's four patches
DISTRACTOR[3, 3] = 1  # distractor_1's patch


class TwoDigitModel(nn.Module):
    """Class 1 reads the target's box, class 0 distractor_1's (each: gain × (mean − bias)); counts rows."""

    def __init__(self) -> None:
        super().__init__()
        self.config = ViTConfig(img_size=SIZE, in_chans=1, patch_size=PATCH, num_classes=2,
                                preprocessing=Preprocessing(mean=0.0, std=1.0))
        self.patch_size, self.rows = PATCH, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.rows += len(x)
        mean = lambda b: x[:, :, b[1]:b[3], b[0]:b[2]].mean(dim=(1, 2, 3))  # noqa: E731
        return 8.0 * torch.stack([mean(BOXES[1]) - 0.3, mean(BOXES[0]) - 0.3], dim=1)


def test_preservation_and_deletion_of_exact_flat_and_wrong_maps():
    scenes = [block_scene()] * 3
    model = PlantedModel(0, bias=0.3).eval()  # reads the target alone; removing it flips the prediction
    found = completeness_checks(model, scenes, np.stack([TARGET, DISTRACTOR, FLAT]))
    flat = float((THRESHOLDS < 0.25).mean())  # four objects, a flat map gives each a share of 1/4
    np.testing.assert_allclose(found.preservation, [1.0, 0.0, flat])
    np.testing.assert_allclose(found.deletion, [1.0, 0.0, flat])
    assert (found.forwards <= 2 * 4 + 1).all()


def test_shares_thresholds_and_absent_objects():
    scene = block_scene()
    masks = scene.masks()[None]
    shares = object_shares(TARGET[None], masks)
    np.testing.assert_allclose(shares, [[1.0, 0.0, 0.0, 0.0]])
    np.testing.assert_allclose(object_shares(FLAT[None], masks), [[0.25] * 4])
    assert important_objects(shares, [0.5]).tolist() == [[[True, False, False, False]]]
    with pytest.raises(ValueError, match="thresholds"):
        important_objects(shares, [])
    hidden = Scene(scene.background, scene.alternative_background,
                   (scene.parts[0], np.zeros_like(scene.parts[1]), scene.parts[2]), scene.boxes, scene.labels)
    assert not hidden.masks()[1].any()  # a digit of zeros is absent: it is never above the background
    model = PlantedModel(0, bias=0.3).eval()
    both = completeness_checks(model, [hidden, scene], np.stack([FLAT, FLAT]))
    assert np.isnan(object_shares(FLAT[None], hidden.masks()[None])[0, 1])
    flat_three = float((THRESHOLDS < 1 / 3).mean())  # three objects present
    np.testing.assert_allclose(both.preservation, [flat_three, float((THRESHOLDS < 0.25).mean())])


def test_batching_does_not_change_the_checks():
    data = test_split(6)
    model = VisionTransformer(tiny_config("softmax", img_size=48, patch_size=8, num_classes=10)).eval()
    maps = np.random.default_rng(0).random((6, 6, 6))
    one = completeness_checks(model, data.scenes, maps, batch_size=1)
    many = completeness_checks(model, data.scenes, maps, batch_size=64)
    np.testing.assert_array_equal(one.preservation, many.preservation)
    np.testing.assert_array_equal(one.deletion, many.deletion)
    assert ((0 <= one.preservation) & (one.preservation <= 1)).all()


def test_the_checks_read_the_callers_clean_logits_instead_of_a_forward():
    """Given the clean logits (the chunk's forward record), each check runs only its interventions, and
    the results equal those with the clean forward of their own."""
    scenes = [block_scene()] * 3
    model = TwoDigitModel().eval()
    maps_a, maps_b = np.stack([TARGET, FLAT, TARGET]), np.stack([DISTRACTOR, FLAT, TARGET])
    inputs = scene_inputs(model, scenes)
    with torch.no_grad():
        logits = model(inputs.tensor).double()
    model.rows = 0
    given = target_sensitivity(model, scenes, maps_a, maps_b, [1] * 3, [0] * 3, [0] * 3, [1] * 3, logits=logits)
    assert model.rows == 2 * len(scenes)  # without a, without b: no clean forward
    own = target_sensitivity(model, scenes, maps_a, maps_b, [1] * 3, [0] * 3, [0] * 3, [1] * 3)
    np.testing.assert_array_equal(given.score, own.score)
    model.rows = 0
    checks = completeness_checks(model, scenes, maps_a, logits=logits)
    changed = model.rows
    np.testing.assert_array_equal(checks.preservation, completeness_checks(model, scenes, maps_a).preservation)
    assert model.rows - 2 * changed == len(scenes)  # the run without logits spent the clean forward
    with pytest.raises(ValueError, match="logits has shape"):
        background_independence(model, scenes, [1, 1, 1], logits=logits[:2])


def test_background_independence_is_a_property_of_the_model():
    scenes = [block_scene(background=30, alternative=10)] * 2
    assert background_independence(PlantedModel(0).eval(), scenes, [1, 1]).tolist() == [1.0, 1.0]
    # reads the background: the darker swap lowers class 1's logit far more than 5 %
    assert background_independence(PlantedModel(3).eval(), scenes, [1, 1]).tolist() == [0.0, 0.0]
    # class 0's logit is 0 whatever the background: a change of 0 is not relevant
    assert background_independence(PlantedModel(3).eval(), scenes, [0, 0]).tolist() == [1.0, 1.0]


def test_target_sensitivity_rewards_a_map_that_follows_the_class():
    scenes = [block_scene()] * 3
    model = TwoDigitModel().eval()
    maps_a = np.stack([TARGET, FLAT, TARGET])  # explaining class 1 (the target digit)
    maps_b = np.stack([DISTRACTOR, FLAT, TARGET])  # explaining class 0 (distractor_1)
    found = target_sensitivity(model, scenes, maps_a, maps_b, [1, 1, 1], [0, 0, 0], [0, 0, 0], [1, 1, 1])
    assert found.assumption.all() and model.rows == 3 * len(scenes)  # clean, without a, without b
    np.testing.assert_array_equal(found.score, [1.0, 0.0, 0.0])  # a class-blind map ties: 0
    planted = PlantedModel(0, bias=0.3).eval()  # class 0's logit never moves: the assumption fails
    assert np.isnan(target_sensitivity(planted, scenes, maps_a, maps_b, [1] * 3, [0] * 3, [0] * 3, [1] * 3).score).all()
    with pytest.raises(ValueError, match="objects_b"):
        target_sensitivity(model, scenes, maps_a, maps_b, [1] * 3, [0] * 3, [0] * 3, [1, 1, 9])
    with pytest.raises(ValueError, match="differ"):
        target_sensitivity(model, scenes, maps_a, maps_b, [1] * 3, [1] * 3, [0] * 3, [1] * 3)
    with pytest.raises(ValueError, match="training mode"):
        completeness_checks(model.train(), scenes, maps_a)


def test_registered_checks_run_in_the_evaluation_and_need_scenes():
    data = test_split(8)
    model = VisionTransformer(tiny_config("softmax", img_size=48, patch_size=8, num_classes=10)).eval()
    settings = EvalSettings(metrics=["funnybirds", "target_sensitivity"], select="all")
    records, _, protocols = score_images(model, data, "chefer2021", protocol=settings)
    for key in ("preservation_check", "deletion_check", "background_independence"):
        values = np.array([r.figures[key] for r in records])
        assert np.isfinite(values).all() and ((values >= 0) & (values <= 1)).all(), key
    ts = np.array([r.figures["target_sensitivity"] for r in records])
    assert np.isin(ts[np.isfinite(ts)], [0.0, 0.5, 1.0]).all()
    assert protocols["funnybirds"]["reference"].startswith("Hesse")
    bare = data.__class__(data.images, data.labels, data.boxes)  # no scenes
    records, _, protocols = score_images(model, bare, "rollout", protocol=settings)
    assert all(np.isnan(r.figures["preservation_check"]) for r in records)
    assert "no scenes" in protocols["funnybirds"]["undefined"]
