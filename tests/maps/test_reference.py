"""Reference maps: registered methods with a role, built from the images' ground truth."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from infsa_viz.maps import METHODS, GroundTruth, attribute_images
from infsa_viz.maps.reference import box_oracle_maps
from infsa_viz.model import VisionTransformer, ViTConfig


def test_box_oracle_is_the_covered_share_of_each_patch():
    boxes = [np.array([[0, 0, 8, 8]]), np.array([[2, 2, 6, 6]]), np.zeros((0, 4))]
    maps = box_oracle_maps(boxes, image_size=(16, 16), patch_size=4)
    expect = np.zeros((3, 4, 4))
    expect[0, :2, :2] = 1.0
    expect[1, :2, :2] = 0.25  # a 4x4 box centred on the corner of four patches covers 4 of 16 pixels of each
    np.testing.assert_allclose(maps.numpy(), expect)
    with pytest.raises(ValueError, match="patch_size"):
        box_oracle_maps(boxes, image_size=(16, 16), patch_size=5)


def test_the_box_oracle_is_a_method_that_reads_the_truth():
    model = VisionTransformer(ViTConfig(img_size=16, patch_size=4, in_chans=1, embed_dim=16, depth=1, num_heads=2,
                                        num_classes=3))
    images = torch.zeros(2, 1, 16, 16)
    truth = GroundTruth(boxes=[np.array([[0, 0, 8, 8]]), np.zeros((0, 4))])
    result = attribute_images(model, images, "box_oracle", truth=truth)
    assert result.method == "box_oracle" and result.metadata["images_without_box"] == 1
    assert float(result.maps[0, :2, :2].min()) == 1.0 and float(result.maps[1].abs().sum()) == 0.0
    with pytest.raises(ValueError, match="ground truth"):
        attribute_images(model, images, "box_oracle")


def test_roles_tell_references_apart():
    roles = {name: method.role for name, method in METHODS.items()}
    references = ("random", "box_oracle", "evidence_oracle", "greedy_deletion", "beam_deletion",
                  "evidence_oracle_greyfill", "edge", "intensity")
    assert roles["random"] == "floor" and {roles[n] for n in references[1:6]} == {"ceiling"}
    assert roles["edge"] == roles["intensity"] == "model_ignorant"
    assert {r for n, r in roles.items() if n not in references} == {"explanation"}
    assert not any(m.needs_truth for m in METHODS.values() if m.role == "explanation")


def test_the_greedy_oracle_removes_what_hurts_most_first(make_config):
    """Greedy deletion removes, step by step, what lowers the class most: here (seeded) it is at least as
    good as the attention and random orders on every image; the order is the one its curves follow."""
    from infsa_viz.metrics import morf_aoc, perturbation_curves

    model = VisionTransformer(make_config("softmax", num_classes=3)).eval()
    x = torch.randn(3, 1, 16, 16)
    target = torch.tensor([0, 1, 2])
    greedy = attribute_images(model, x, "greedy_deletion", target=target, steps=4)
    assert greedy.maps.shape == (3, 4, 4) and greedy.metadata["forwards_per_image"] > 0
    score = lambda maps: morf_aoc(perturbation_curves(model, x, maps, target, patch_size=4, steps=4),  # noqa: E731
                                  select="all").per_image
    for other in ("attention", "random"):
        assert (score(greedy.maps) >= score(attribute_images(model, x, other).maps) - 1e-9).all()


@pytest.mark.parametrize("obj", [0, 1, 2])
def test_the_grey_fill_oracle_finds_what_a_planted_classifier_reads(obj):
    """A classifier reading one object's mean (tests/evaluation/planted.py): filling that object with grey
    lowers its class, filling the others changes nothing, so the oracle lies on that object alone."""
    from infsa_viz.evaluation.interventions import object_importance
    from infsa_viz.preprocess import prepare
    from tests.evaluation.planted import PlantedModel, planted_data

    model, data = PlantedModel(obj, bias=100.0 / 255.0).eval(), planted_data(4)
    prepared = prepare(model, data.images)
    importance = object_importance(model, data, explained=np.ones(4, np.int64))
    truth = GroundTruth(boxes=[b for b in data.boxes], objects=importance.objects, masks=importance.masks,
                        importance=importance.prob_drop, scenes=list(data.scenes))
    maps = attribute_images(model, prepared.tensor, "evidence_oracle_greyfill", target=torch.ones(4, dtype=torch.long),
                     truth=truth).maps.numpy()
    on = importance.masks[:, obj].reshape(4, 4, 4, 4, 4).transpose(0, 1, 3, 2, 4).reshape(4, 4, 4, 16).any(-1)
    assert (maps[~on] == 0).all() and (maps[on] > 0).all()
