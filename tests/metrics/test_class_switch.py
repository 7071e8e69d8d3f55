"""The class-switch test: analytic shifts and the choice of the distractor."""

from __future__ import annotations

import numpy as np
import pytest

from infsa_viz.metrics import class_switch, switch_classes


def test_switch_picks_the_first_distractor_of_another_class():
    index, classes = switch_classes([3, 5, 7], [np.array([3, 4]), np.array([5, 5]), np.array([1, 2])])
    assert index.tolist() == [1, -1, 0] and classes.tolist() == [4, -1, 1]


def test_mass_moving_from_target_to_distractor_is_a_shift_of_two():
    label = np.zeros((1, 4, 4))
    label[0, 0, 0] = 1.0  # all mass on the target patch
    switched = np.zeros((1, 4, 4))
    switched[0, 3, 3] = 1.0  # all mass on the distractor patch
    target, distractor = [np.array([[0, 0, 4, 4]])], [np.array([[12, 12, 16, 16]])]
    out = class_switch(label, switched, target, distractor, image_size=16)
    assert out["shift"][0] == pytest.approx(2.0)
    assert class_switch(label, label, target, distractor, image_size=16)["shift"][0] == pytest.approx(0.0)
