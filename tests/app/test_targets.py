"""``app/targets.py``: the class a map explains as the sidebar offers and the URL holds it; it is
parsed by the library's Target and resolved by the image's forward record (``compute.class_index``)."""

from __future__ import annotations

import pytest


def test_choices_offer_the_label_only_for_labelled_images(app):
    assert app.targets.choices(3, labelled=True) == ["predicted", "label", "top 2", "top 3", 0, 1, 2]
    assert app.targets.choices(2, labelled=False) == ["predicted", "top 2", 0, 1]
    assert app.targets.choices(4, labelled=False, fewest=2) == ["predicted", "top 2", 0, 1, 2, 3]  # ranks every model has


def test_parse_reads_every_word_and_refuses_the_rest(app):
    assert [app.targets.parse(t) for t in ("predicted", "label", "top 2", "7")] == ["predicted", "label", "top 2", 7]
    for bad in ("top", "top 0", "-1", "cat"):
        with pytest.raises(ValueError, match="class="):
            app.targets.parse(bad)


def test_the_forward_record_resolves_the_apps_targets(app):
    """The app's targets resolve as the library's record resolves them, one rule for an unknown label."""
    import torch

    from infsa_viz.forward import ForwardRecord

    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(1, 4))
    logits = torch.log(torch.tensor([[0.1, 0.6, 0.05, 0.25]]))

    def resolve(target, label):
        return int(ForwardRecord(model, torch.zeros(1, 1, 1, 1), labels=[-1 if label is None else label],
                                 target=app.targets.parse(str(target)), logits=logits, name="class").explained[0])

    assert resolve("predicted", 2) == 1 and resolve("label", 2) == 2
    assert resolve("label", None) == 1  # no label for this model: its prediction
    assert resolve("top 2", None) == 3 and resolve(3, None) == 3
    with pytest.raises(ValueError, match=r"class=top 9 is invalid for the model, which has 4 classes"):
        resolve("top 9", None)


def test_describe_names_a_class_by_every_model_that_names_it(app):
    assert app.targets.describe("top 3") == "the 3rd-most-probable class"
    assert app.targets.describe("label") == "the ground-truth label"
    assert app.targets.describe(1, [("a", "b"), ("a", "b")]) == "b"
    assert app.targets.describe(1, [("a", "b"), ("x", "y", "z")]) == "class 1 (b / y)"
    assert app.targets.describe(2, [("a", "b"), ("x", "y", "z")]) == "z"
    assert app.targets.describe(5) == "class 5"
