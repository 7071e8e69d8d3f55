"""``app/targets.py``: the class a map explains, parsed, resolved and validated in one place."""

from __future__ import annotations

import numpy as np
import pytest


def test_choices_offer_the_label_only_for_labelled_images(app):
    assert app.targets.choices(3, labelled=True) == ["predicted", "label", "top 2", "top 3", 0, 1, 2]
    assert app.targets.choices(2, labelled=False) == ["predicted", "top 2", 0, 1]


def test_parse_reads_every_word_and_refuses_the_rest(app):
    assert [app.targets.parse(t) for t in ("predicted", "label", "top 2", "7")] == ["predicted", "label", "top 2", 7]
    for bad in ("top", "top 0", "-1", "cat"):
        with pytest.raises(ValueError, match="class="):
            app.targets.parse(bad)


def test_resolve_against_one_models_probabilities(app):
    p = np.array([0.1, 0.6, 0.05, 0.25])
    assert app.targets.resolve("predicted", p, 2) == 1
    assert app.targets.resolve("label", p, 2) == 2
    assert app.targets.resolve("label", p, None) == 1  # no label for this model: its prediction
    assert app.targets.resolve("top 2", p, None) == 3 and app.targets.resolve("top 9", p, None) == 2
    assert app.targets.resolve(3, p, None) == 3
    with pytest.raises(ValueError, match=r"class=4 is not a class of the model; expected a class index in \[0, 4\)"):
        app.targets.resolve(4, p, None)


def test_describe_names_a_class_by_every_model_that_names_it(app):
    assert app.targets.describe("top 3") == "the 3rd-most-probable class"
    assert app.targets.describe("label") == "the ground-truth label"
    assert app.targets.describe(1, [("a", "b"), ("a", "b")]) == "b"
    assert app.targets.describe(1, [("a", "b"), ("x", "y", "z")]) == "class 1 (b / y)"
    assert app.targets.describe(2, [("a", "b"), ("x", "y", "z")]) == "z"
    assert app.targets.describe(5) == "class 5"
