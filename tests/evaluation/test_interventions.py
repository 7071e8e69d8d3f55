"""Per-object importance by in-distribution intervention (infsa_viz/evaluation/interventions.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from infsa_viz import VisionTransformer, preprocess
from infsa_viz.data import test_split
from infsa_viz.evaluation.interventions import ObjectImportance, object_importance
from tests.conftest import tiny_config
from tests.evaluation.planted import PlantedModel, block_scene


@pytest.mark.parametrize("obj", [0, 1, 2, 3])
def test_a_planted_classifier_gets_importance_on_its_object_alone(obj):
    scene = block_scene()
    result = object_importance(PlantedModel(obj).eval(), [scene, scene], explained=np.array([1, 0]))
    assert result.objects == ("target", "distractor_1", "distractor_2", "background")
    for drops in (result.prob_drop, result.logit_drop):
        others = np.delete(drops, obj, axis=1)
        np.testing.assert_array_equal(others, 0.0)  # its output never saw the other objects' pixels
        assert drops[0, obj] > 0  # class 1 loses its evidence
    assert result.prob_drop[1, obj] < 0 and result.logit_drop[1, obj] == 0  # class 0 gains; its logit is constant
    np.testing.assert_array_equal(result.masks[0], scene.masks())  # identity preprocessing


def _vit() -> VisionTransformer:
    return VisionTransformer(tiny_config("softmax", img_size=48, patch_size=8, num_classes=10)).eval()


def test_importance_equals_forwards_of_the_changed_images_and_batching_does_not_matter():
    data = test_split(5)
    model = _vit()
    one = object_importance(model, data, explained=torch.as_tensor(data.labels), batch_size=1)
    many = object_importance(model, data.scenes, explained=data.labels, batch_size=256, indices=range(10, 15))
    for name in ("prob_drop", "logit_drop", "clean_prob", "clean_logit"):
        np.testing.assert_allclose(getattr(one, name), getattr(many, name), rtol=0, atol=1e-6)
    np.testing.assert_array_equal(one.masks, many.masks)
    np.testing.assert_array_equal(many.indices, np.arange(10, 15))
    i, scene = 3, data.scenes[3]
    with torch.no_grad():
        logits = model(preprocess(model, np.stack([scene.render(), scene.render(remove=[1]),
                                                   scene.render(swap_background=True)]))).double()
    probs = torch.softmax(logits, -1)[:, data.labels[i]].numpy()
    np.testing.assert_allclose([probs[0] - probs[1], probs[0] - probs[2]], one.prob_drop[i, [1, 3]], atol=1e-9)
    np.testing.assert_allclose(one.clean_logit[i], logits[0, data.labels[i]].item(), atol=1e-9)


def test_each_image_is_json_ready():
    data = test_split(2)
    result = object_importance(_vit(), data, explained=data.labels)
    record = json.loads(json.dumps(result.for_image(1)))
    assert record["index"] == 1 and list(record["objects"]) == list(result.objects)
    assert record["objects"]["target"]["mask_pixels"] == int(data.scenes[1].masks()[0].sum())
    assert result.protocol["forwards_per_image"] == len(result.objects) + 1 and len(result) == 2
    assert isinstance(result, ObjectImportance)


def test_bad_inputs_are_refused():
    data = test_split(2)
    model = _vit()
    with pytest.raises(ValueError, match="no scenes"):
        object_importance(model, data.subset([0]).__class__(data.images, data.labels, data.boxes), explained=[0, 0])
    with pytest.raises(ValueError, match="explained has shape"):
        object_importance(model, data, explained=[1])
    with pytest.raises(ValueError, match="explained has class"):
        object_importance(model, data, explained=[1, 10])
    with pytest.raises(ValueError, match="indices"):
        object_importance(model, data, explained=data.labels, indices=[0])
    with pytest.raises(ValueError, match="different objects"):
        object_importance(model, [data.scenes[0], block_scene()], explained=[0, 0])
    with pytest.raises(ValueError, match="different objects"):
        object_importance(model, [data.scenes[0], test_split(1, benchmark="cluttered-digits-hard").scenes[0]],
                          explained=[0, 0])
    with pytest.raises(ValueError, match="training mode"):
        object_importance(model.train(), data, explained=data.labels)
