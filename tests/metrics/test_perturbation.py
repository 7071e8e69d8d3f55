"""Tests of infsa_viz/metrics/perturbation.py: removal order, steps, baselines, batching."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
import torch

from infsa_viz.metrics import PerturbationProtocol, perturbation_curves, removal_order
from infsa_viz.metrics.perturbation import baseline_images, removed_counts

PATCH = 4


def naive_curves(model, images, maps, targets, *, order, steps, fill, seed=0):
    """Reference written out with loops: one image, one step, one patch at a time."""
    B, _, H, W = images.shape
    h, w = H // PATCH, W // PATCH
    N = h * w
    tie_rank = np.argsort(np.random.default_rng([seed, 0]).permutation(N))  # position in the permutation
    out = np.zeros((B, steps + 1))
    for b in range(B):
        values = maps[b].ravel()
        sign = -1 if order == "morf" else 1
        ranking = sorted(range(N), key=lambda j: (sign * values[j], tie_rank[j]))
        for k in range(steps + 1):
            n = int(np.floor(k * N / steps + 0.5))
            x = images[b].clone()
            for j in ranking[:n]:
                r, c = divmod(j, w)
                x[:, r * PATCH:(r + 1) * PATCH, c * PATCH:(c + 1) * PATCH] = fill
            with torch.no_grad():
                out[b, k] = torch.softmax(model(x[None]).double(), -1)[0, targets[b]].item()
    return out


@pytest.mark.parametrize("order", ["morf", "lerf"])
def test_matches_naive_reference(vit, images, tied_maps, order):
    targets = np.array([0, 1, 2, 0, 1, 2])
    curves = perturbation_curves(vit, images, tied_maps, targets, patch_size=PATCH, order=order, steps=7,
                                 baseline="zero", baseline_value=-0.5, batch_size=5)
    expected = naive_curves(vit, images, tied_maps, targets, order=order, steps=7, fill=-0.5)
    np.testing.assert_allclose(curves.probs, expected, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(curves.removed, [int(np.floor(k * 16 / 7 + 0.5)) for k in range(8)])
    np.testing.assert_allclose(curves.fractions, curves.removed / 16)


def test_removed_counts_rule():
    np.testing.assert_array_equal(removed_counts(20, 36)[:4], [0, 2, 4, 5])  # 1.8, 3.6, 5.4 -> 2, 4, 5
    np.testing.assert_array_equal(removed_counts(4, 6), [0, 2, 3, 5, 6])  # 1.5 -> 2, 4.5 -> 5 (half up)
    counts = removed_counts(20, 16)
    assert counts[0] == 0 and counts[-1] == 16 and len(counts) == 21 and (np.diff(counts) >= 0).all()


def test_default_steps_give_21_points_from_0_to_1(one_patch_model):
    x = torch.zeros(2, 1, 16, 16)
    curves = perturbation_curves(one_patch_model, x, np.random.default_rng(0).random((2, 4, 4)), [1, 1], patch_size=PATCH)
    assert curves.fractions.shape == (21,) and curves.probs.shape == (2, 21)
    assert curves.fractions[0] == 0.0 and curves.fractions[-1] == 1.0
    json.dumps(curves.protocol)  # serialisable as saved next to results


def test_removal_order_descending_ascending_and_ties():
    maps = np.array([[[0.1, 0.9], [0.5, 0.3]]])
    assert removal_order(maps, order="morf").tolist() == [[1, 2, 3, 0]]
    assert removal_order(maps, order="lerf").tolist() == [[0, 3, 2, 1]]
    flat = np.zeros((1, 4, 4))
    perm = np.random.default_rng([7, 0]).permutation(16)
    np.testing.assert_array_equal(removal_order(flat, order="morf", seed=7)[0], perm)
    np.testing.assert_array_equal(removal_order(flat, order="lerf", seed=7)[0], perm)


def test_tie_break_same_for_every_image_position():
    maps = np.zeros((3, 4, 4))
    order = removal_order(maps, seed=3)
    assert (order == order[0]).all()


def test_order_both_equals_separate_calls(vit, images, tied_maps):
    targets = np.zeros(6, dtype=int)
    both = perturbation_curves(vit, images, tied_maps, targets, patch_size=PATCH, order="both", steps=5)
    for name in ("morf", "lerf"):
        single = perturbation_curves(vit, images, tied_maps, targets, patch_size=PATCH, order=name, steps=5)
        np.testing.assert_allclose(both[name].probs, single.probs, rtol=0, atol=1e-7)
        assert both[name].protocol["order"] == name


def test_many_steps_repeat_values(one_patch_model):
    x = torch.ones(1, 1, 16, 16)
    maps = np.random.default_rng(0).random((1, 4, 4))
    curves = perturbation_curves(one_patch_model, x, maps, [1], patch_size=PATCH, steps=40)
    same = curves.removed[1:] == curves.removed[:-1]
    np.testing.assert_array_equal(curves.probs[0, 1:][same], curves.probs[0, :-1][same])


def test_score_predicted_tracks_clean_argmax(vit, images, tied_maps):
    targets = np.array([0, 0, 0, 0, 0, 0])
    curves = perturbation_curves(vit, images, tied_maps, targets, patch_size=PATCH, score="predicted", steps=2)
    with torch.no_grad():
        probs = torch.softmax(vit(images).double(), -1).numpy()
    np.testing.assert_array_equal(curves.scored_class, probs.argmax(1))
    np.testing.assert_allclose(curves.probs[:, 0], probs.max(1), atol=1e-7)
    np.testing.assert_array_equal(curves.correct, probs.argmax(1) == 0)


def test_baseline_mean_and_zero_fill_constants(images):
    mean = PerturbationProtocol(patch_size=4, grid=(4, 4), order="morf", steps=2, baseline="mean", baseline_value=0.0,
                                blur_sigma=None, score="target", seed=0, batch_size=8, device="cpu")
    assert (baseline_images(images, mean) == 0).all()
    zero = PerturbationProtocol(**{**mean.__dict__, "baseline": "zero", "baseline_value": -0.8128})
    assert (baseline_images(images, zero) == -0.8128).all()


def test_baseline_blur_is_cv2_gaussian(images):
    protocol = PerturbationProtocol(patch_size=4, grid=(4, 4), order="morf", steps=2, baseline="blur",
                                    baseline_value=None, blur_sigma=1.5, score="target", seed=0, batch_size=8,
                                    device="cpu")
    expected = cv2.GaussianBlur(images[2, 0].numpy(), (0, 0), 1.5, borderType=cv2.BORDER_REFLECT_101)
    np.testing.assert_allclose(baseline_images(images, protocol)[2, 0].numpy(), expected, atol=1e-6)


def test_baseline_uniform_is_seeded_and_within_image_range(images):
    protocol = PerturbationProtocol(patch_size=4, grid=(4, 4), order="morf", steps=2, baseline="uniform",
                                    baseline_value=None, blur_sigma=None, score="target", seed=5, batch_size=8,
                                    device="cpu")
    fill = baseline_images(images, protocol)
    lo = images.amin(dim=(1, 2, 3)).double()
    hi = images.amax(dim=(1, 2, 3)).double()
    assert (fill.amin(dim=(1, 2, 3)) >= lo).all() and (fill.amax(dim=(1, 2, 3)) <= hi).all()
    torch.testing.assert_close(fill, baseline_images(images, protocol))
    other = PerturbationProtocol(**{**protocol.__dict__, "seed": 6})
    assert not torch.equal(fill, baseline_images(images, other))


def test_blur_sigma_default_is_half_patch(vit, images, tied_maps):
    curves = perturbation_curves(vit, images, tied_maps, np.zeros(6, int), patch_size=PATCH, baseline="blur", steps=1)
    assert curves.protocol["blur_sigma"] == 2.0


def test_device_argument_and_protocol(vit, images, tied_maps):
    curves = perturbation_curves(vit, images, tied_maps, np.zeros(6, int), patch_size=PATCH, steps=1, device="cpu")
    assert curves.protocol["device"] == "cpu"


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"patch_size": 5}, "patch_size=5"),
        ({"patch_size": 0}, "patch_size=0"),
        ({"maps": np.zeros((6, 2, 2))}, "grid"),
        ({"maps": np.zeros((5, 4, 4))}, "one per image"),
        ({"maps": np.full((6, 4, 4), np.nan)}, "nan"),
        ({"targets": np.zeros(5, int)}, "targets"),
        ({"targets": np.zeros(6)}, "targets"),
        ({"targets": np.full(6, 7)}, "classes in"),
        ({"order": "random"}, "order='random'"),
        ({"steps": 0}, "steps=0"),
        ({"steps": True}, "steps=True"),
        ({"baseline": "black"}, "baseline='black'"),
        ({"baseline": "zero"}, "baseline_value=None"),
        ({"baseline_value": 0.5}, "only used with baseline='zero'"),
        ({"baseline": "blur", "baseline_value": 0.5}, "only used with baseline='zero'"),
        ({"blur_sigma": 1.0}, "only used with baseline='blur'"),
        ({"baseline": "blur", "blur_sigma": 0.0}, "blur_sigma=0.0"),
        ({"score": "label"}, "score='label'"),
        ({"seed": -1}, "seed=-1"),
        ({"batch_size": 0}, "batch_size=0"),
    ],
)
def test_invalid_inputs_raise_value_error(vit, images, tied_maps, changes, match):
    kwargs = {"maps": tied_maps, "targets": np.zeros(6, int), "patch_size": PATCH, **changes}
    maps, targets = kwargs.pop("maps"), kwargs.pop("targets")
    with pytest.raises(ValueError, match=match):
        perturbation_curves(vit, images, maps, targets, **kwargs)


def test_type_errors_and_training_mode(vit, images, tied_maps):
    with pytest.raises(TypeError, match="images"):
        perturbation_curves(vit, images.numpy(), tied_maps, np.zeros(6, int), patch_size=PATCH)
    with pytest.raises(TypeError, match="model"):
        perturbation_curves(lambda x: x, images, tied_maps, np.zeros(6, int), patch_size=PATCH)
    with pytest.raises(TypeError, match="logits tensor"):
        perturbation_curves(torch.nn.Identity().eval(), images, tied_maps, np.zeros(6, int), patch_size=PATCH)
    with pytest.raises(ValueError, match="training mode"):
        perturbation_curves(vit.train(), images, tied_maps, np.zeros(6, int), patch_size=PATCH)


@pytest.mark.parametrize("baseline, last", [("mean", 1), ("blur", 6)])
def test_the_fully_removed_image_is_scored_once_for_both_orders(vit, images, tied_maps, baseline, last):
    """Both orders end on the fill itself: (steps - 1) partial steps per order and image, then one forward of
    the fill per image (one for all images when it is a constant), with the naive curve's values."""
    seen: list[int] = []
    handle = vit.register_forward_pre_hook(lambda _m, args: seen.append(int(args[0].shape[0])))
    try:
        curves = perturbation_curves(vit, images, tied_maps, np.zeros(6, dtype=np.int64), patch_size=PATCH,
                                     order="both", steps=4, baseline=baseline, batch_size=1000)
    finally:
        handle.remove()
    B = images.shape[0]
    assert sum(seen) == B + 2 * B * 3 + last  # the clean images, 3 partial steps per order, the fill
    if baseline == "mean":
        expected = naive_curves(vit, images, tied_maps, np.zeros(6, dtype=np.int64), order="lerf", steps=4, fill=0.0)
        np.testing.assert_allclose(curves["lerf"].probs, expected, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(curves["morf"].probs[:, -1], curves["lerf"].probs[:, -1])
