"""The forward record: one clean forward per (model, images), read by maps, metrics and the engine."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from infsa_viz.forward import ForwardRecord, forward_record
from infsa_viz.maps import METHODS, attribute, attribute_images
from infsa_viz.model import VisionTransformer, capture_attention
from infsa_viz.preprocess import Preprocessing, prepare
from infsa_viz.targets import Target
from tests.counting import counting


@pytest.fixture
def model(make_config):
    return VisionTransformer(make_config("pure_infsa", preprocessing=Preprocessing(mean=0.4, std=0.3))).eval()


def _images(n: int = 3) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (n, 16, 16), dtype=np.uint8)


def test_the_record_holds_the_prepared_input_the_logits_and_the_preprocessing(model):
    images = _images()
    prepared = prepare(model, images)
    record = forward_record(model, images, labels=[0, -1, 2], target="label")
    torch.testing.assert_close(record.inputs, prepared.tensor)
    assert record.preprocessing == model.config.preprocessing and record.prepared is not None
    with torch.no_grad():
        assert torch.equal(record.logits, model(prepared.tensor).double())
    assert record.known.tolist() == [True, False, True]
    predicted = record.logits.argmax(-1)
    assert record.filled_labels.tolist() == [0, int(predicted[1]), 2]  # an unknown label: the prediction
    assert record.explained.tolist() == record.filled_labels.tolist()


def test_the_forward_runs_once_and_only_when_read(model):
    x = prepare(model, _images()).tensor
    with counting(model) as forwards:
        record = forward_record(model, x, target=1)
        assert record.explained.tolist() == [1, 1, 1] and forwards.total == 0  # a class needs no forward
        record.logits, record.predicted, record.logits
        assert forwards.total == 1


def test_capture_records_attention_in_the_one_forward(model):
    x = prepare(model, _images()).tensor
    _, expected = capture_attention(model, x)
    with counting(model) as forwards:
        record = forward_record(model, x, capture=True)
        record.logits, record.attention, record.explained
        assert forwards.total == 1
    for got, want in zip(record.attention, expected):
        assert torch.equal(got.q, want.q) and torch.equal(got.k, want.k)


def test_attention_after_a_plain_forward_costs_one_more(model):
    record = forward_record(model, prepare(model, _images()).tensor)
    with counting(model) as forwards:
        record.logits
        record.attention
        record.attention
    assert forwards.total == 2


def test_targets_resolve_once_against_the_records_logits(model):
    x = prepare(model, _images()).tensor
    record = forward_record(model, x, labels=[1, 1, 1], target="top 2")
    order = torch.argsort(record.logits, dim=-1, descending=True, stable=True)
    assert record.explained.tolist() == order[:, 1].tolist()
    assert forward_record(model, x, target=Target.of_class(2)).explained.tolist() == [2, 2, 2]
    with pytest.raises(ValueError, match="target=7 is not a class"):
        forward_record(model, x, target=7)


def test_take_and_explaining_keep_the_forward(model):
    x = prepare(model, _images(4)).tensor
    record = forward_record(model, x, labels=[0, 1, 2, 0], target="label")
    record.logits
    with counting(model) as forwards:
        part = record.take([1, 3])
        assert torch.equal(part.logits, record.logits[[1, 3]]) and part.labels.tolist() == [1, 0]
        other = record.explaining(torch.tensor([2, 2, 2, 2]))
        assert other.explained.tolist() == [2, 2, 2, 2] and torch.equal(other.logits, record.logits)
        predicted = record.explaining(target="predicted")  # another target, resolved on the same logits
        assert predicted.explained.tolist() == record.predicted.tolist() and record.explained.tolist() == [0, 1, 2, 0]
        assert record.explaining().explained.tolist() == [0, 1, 2, 0]  # nothing given: the record's own target
    assert forwards.total == 0
    with pytest.raises(ValueError, match=r"target has shape \(3,\)"):
        record.explaining(torch.tensor([0, 1, 2]))


def test_take_and_explaining_keep_the_captured_attention(model):
    """A part of a record, and the record explaining other classes, read the attention captured once:
    the maps equal those of a record of the part alone, with no forward."""
    x = prepare(model, _images(4)).tensor
    record = forward_record(model, x, labels=[0, 1, 2, 0], target="label", capture=True)
    record.logits
    with counting(model) as forwards:
        part = record.take([3, 1])
        got = attribute(part, "visits").maps
        other = attribute(record.explaining([1, 1, 1, 1]), "attention").maps
        assert torch.equal(part.probabilities, torch.softmax(record.logits[[3, 1]], -1))
    assert forwards.total == 0
    torch.testing.assert_close(got, attribute(forward_record(model, x[[3, 1]]), "visits").maps)
    torch.testing.assert_close(other, attribute(record, "attention").maps, rtol=0, atol=0)


def test_a_record_is_its_own_images_and_target_for_attribute(model):
    x = prepare(model, _images()).tensor
    record = forward_record(model, x, labels=[0, 1, 2], target="label")
    torch.testing.assert_close(attribute(record, "saliency").maps,
                               attribute_images(model, x, "saliency", target="label", labels=[0, 1, 2]).maps)
    assert attribute(record, "saliency").target.tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="carries its images"):
        attribute(record, "saliency", target="label")


@pytest.mark.parametrize("method", ["attention", "rollout", "visits", "neumann", "perron", "linear_estimate", "tam",
                                    "attention_flow"])
def test_maps_that_read_attention_read_the_records(model, method):
    """Every method that reads attention gives the same map from a record captured beforehand,
    without a clean forward of its own."""
    x = prepare(model, _images()).tensor
    assert METHODS[method].reads_attention
    options = {"steps": 2} if "steps" in METHODS[method].defaults else {}
    expected = attribute_images(model, x, method, **options).maps
    record = forward_record(model, x, capture=True)
    record.logits
    with counting(model, [x]) as forwards:
        got = attribute(record, method, **options).maps
    assert forwards.clean == 0
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_a_record_for_a_model_without_attention_modules_is_refused_when_attention_is_read():
    model = nn.Sequential(nn.Flatten(), nn.Linear(16 * 16, 3))
    record = ForwardRecord(model, torch.zeros(2, 1, 16, 16))
    assert record.logits.shape == (2, 3)
    with pytest.raises(RuntimeError, match="no recordable attention"):
        record.attention


@pytest.mark.parametrize("variant", ["softmax", "pure_infsa", "linear_infsa"])
def test_joined_parts_are_the_record_of_all_their_images(make_config, variant):
    """Parts of two batches' records, joined, hold what one record of all their images holds (logits,
    attention, maps) and run no forward; the joined attention is take's inverse."""
    model = VisionTransformer(make_config(variant)).eval()
    x = prepare(model, _images(6)).tensor
    first = forward_record(model, x[:4], labels=[0, 1, 2, 0], capture=True)
    second = forward_record(model, x[4:], labels=[1, -1], capture=True)
    first.logits, second.logits
    whole = forward_record(model, x[[3, 1, 5]], labels=[0, 1, -1], capture=True)
    whole.logits
    with counting(model) as forwards:
        joined = ForwardRecord.join([first.take([3, 1]), second.take([1])])
        got = attribute(joined, "visits").maps
        assert joined.labels.tolist() == [0, 1, -1]
        torch.testing.assert_close(joined.logits, whole.logits)
        torch.testing.assert_close(joined.explained, whole.explained)
    assert forwards.total == 0
    torch.testing.assert_close(got, attribute(whole, "visits").maps)
    for layer, part in zip(joined.attention, first.attention):
        torch.testing.assert_close(layer.take(torch.tensor([0, 1])).q, part.take(torch.tensor([3, 1])).q)


def test_join_refuses_records_of_other_models_or_targets(model, make_config):
    x = prepare(model, _images(2)).tensor
    with pytest.raises(ValueError, match="parts is empty"):
        ForwardRecord.join([])
    other = VisionTransformer(make_config("softmax")).eval()
    with pytest.raises(ValueError, match="one model, one target"):
        ForwardRecord.join([forward_record(model, x), forward_record(other, x)])
    with pytest.raises(ValueError, match="one model, one target"):
        ForwardRecord.join([forward_record(model, x), forward_record(model, x, target="label", labels=[0, 1])])


def test_take_keeps_the_prepared_rows_and_explaining_takes_other_labels(model):
    """A part of a record keeps how its images were prepared (display pixels, box mapping), and the same
    forward explains against other labels with no forward."""
    images = _images(3)
    record = forward_record(model, images, labels=[-1, -1, -1], target="label")
    record.logits
    alone = prepare(model, images[[2]])
    with counting(model) as forwards:
        part = record.take([2])
        relabelled = part.explaining(labels=[1], target="label")
        assert relabelled.labels.tolist() == [1] and relabelled.explained.tolist() == [1]
        assert part.explained.tolist() == [int(record.predicted[2])]  # unknown label: the prediction
    assert forwards.total == 0
    torch.testing.assert_close(part.prepared.tensor, alone.tensor)
    np.testing.assert_array_equal(part.prepared.display[0], alone.display[0])
    np.testing.assert_array_equal(part.prepared.scales, alone.scales)
    assert relabelled.prepared is part.prepared
