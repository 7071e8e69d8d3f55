"""The one Target: parsing, validation and resolution of the class a map explains."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from infsa_viz.targets import Target

LOGITS = torch.tensor([[0.1, 2.0, 1.0], [3.0, 0.0, 3.0]])  # second row: a tie between classes 0 and 2


@pytest.mark.parametrize(("text", "expected"), [
    ("label", Target("label")), ("predicted", Target("predicted")), (None, Target("predicted")),
    ("top 1", Target("predicted")), ("top 2", Target("rank", 2)), (" top 3 ", Target("rank", 3)),
    ("2", Target("class", 2)), (2, Target("class", 2)), (np.int64(1), Target("class", 1)),
])
def test_parse_reads_the_vocabulary(text, expected):
    assert Target.parse(text) == expected
    assert Target.parse(str(expected)) == expected  # str() is what reports store, read back


def test_class_names_name_classes():
    names = ("cat", "dog", "person")
    assert Target.parse("person", class_names=names) == Target.of_class(2)
    assert Target.of_class(2).describe(names) == "class 2 (person)"
    with pytest.raises(ValueError, match="the model's classes are"):
        Target.parse("horse", class_names=names)


@pytest.mark.parametrize("bad", ["truth", "top 0", "top x", "-1", -1, True, 1.5, "top"])
def test_bad_targets_name_parameter_value_and_vocabulary(bad):
    with pytest.raises(ValueError, match=r"--target=.*expected|--target=.*K >= 1|--target=.*>= 0"):
        Target.parse(bad, name="--target")


def test_resolve_against_logits_and_labels():
    assert Target.predicted().resolve(LOGITS).tolist() == [1, 0]
    assert Target.top(2).resolve(LOGITS).tolist() == [2, 2]  # ties: the lower index ranks first
    assert Target.top(3).resolve(LOGITS).tolist() == [0, 1]
    assert Target.of_class(1).resolve(LOGITS).tolist() == [1, 1]
    assert Target.label().resolve(LOGITS, [2, 0]).tolist() == [2, 0]
    with pytest.raises(ValueError, match="label needs a ground-truth label"):
        Target.label().resolve(LOGITS, [2, -1])
    with pytest.raises(ValueError, match=r"not a class of the model; expected a class index in \[0, 3\)"):
        Target.of_class(3).resolve(LOGITS)
    with pytest.raises(ValueError, match="K <= 3"):
        Target.top(4).validate(3)


def test_descriptions_and_json():
    assert Target.top(2).describe() == "the 2nd-most-probable class"
    assert Target.top(11).describe() == "the 11th-most-probable class"
    assert Target.label().to_json() == "label" and Target.of_class(4).to_json() == 4
