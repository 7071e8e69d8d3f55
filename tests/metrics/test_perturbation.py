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
    curves = perturbation_curves(vit, images, tied_maps, targets, patch_size=PATCH, explained="predicted", steps=2)
    with torch.no_grad():
        probs = torch.softmax(vit(images).double(), -1).numpy()
    np.testing.assert_array_equal(curves.explained, probs.argmax(1))
    np.testing.assert_allclose(curves.probs[:, 0], probs.max(1), atol=1e-7)
    np.testing.assert_array_equal(curves.correct, probs.argmax(1) == 0)


def test_baseline_mean_and_zero_fill_constants(images):
    mean = PerturbationProtocol(patch_size=4, grid=(4, 4), order="morf", steps=2, baseline="mean", baseline_value=0.0,
                                blur_sigma=None, explained="target", seed=0, batch_size=8, device="cpu")
    assert (baseline_images(images, mean) == 0).all()
    zero = PerturbationProtocol(**{**mean.__dict__, "baseline": "zero", "baseline_value": -0.8128})
    assert (baseline_images(images, zero) == -0.8128).all()


def test_baseline_blur_is_cv2_gaussian(images):
    protocol = PerturbationProtocol(patch_size=4, grid=(4, 4), order="morf", steps=2, baseline="blur",
                                    baseline_value=None, blur_sigma=1.5, explained="target", seed=0, batch_size=8,
                                    device="cpu")
    expected = cv2.GaussianBlur(images[2, 0].numpy(), (0, 0), 1.5, borderType=cv2.BORDER_REFLECT_101)
    np.testing.assert_allclose(baseline_images(images, protocol)[2, 0].numpy(), expected, atol=1e-6)


def test_baseline_uniform_is_seeded_and_within_image_range(images):
    protocol = PerturbationProtocol(patch_size=4, grid=(4, 4), order="morf", steps=2, baseline="uniform",
                                    baseline_value=None, blur_sigma=None, explained="target", seed=5, batch_size=8,
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
        ({"explained": "label"}, "explained='label'"),
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


# --- step grids, shared copies (issue 43: real-size cost) ------------------------------------------------


class KeptShareModel(torch.nn.Module):
    """Logit of class 1 = ``scale`` × the share of pixels still at 1.0 (the images are all ones, the fill 0):
    the probability after ``n`` of ``N`` patches are removed is ``sigmoid(scale · (1 − n/N))``, whatever the map."""

    patch_size = PATCH

    def __init__(self, scale: float = 4.0) -> None:
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kept = x.flatten(1).mean(1)  # (B,)
        return torch.stack([torch.zeros_like(kept), self.scale * kept], dim=1)


def test_cosine_grid_rule_written_out():
    N, K = 196, 10
    expected = [int(np.floor(N * (1 - np.cos(np.pi * k / K)) / 2 + 0.5)) for k in range(K + 1)]
    np.testing.assert_array_equal(removed_counts(K, N, "cosine"), expected)
    assert expected[:3] == [0, 5, 19] and expected[-1] == N  # denser at both ends than uniform's 0, 20, 39
    np.testing.assert_array_equal(removed_counts(K, N), removed_counts(K, N, "uniform"))
    with pytest.raises(ValueError, match="grid='log'"):
        removed_counts(K, N, "log")


@pytest.mark.parametrize("grid", ["uniform", "cosine"])
def test_aoc_on_a_grid_equals_the_analytic_value(grid):
    """MoRF-AOC of the kept-share model is ``100 · trapz(1 − σ(s(1 − f_k))/σ(s), f_k)`` on the grid's own
    fractions ``f_k = n_k / N``, for any map (every patch counts the same)."""
    from infsa_viz.metrics import morf_aoc

    model = KeptShareModel().eval()
    x = torch.ones(2, 1, 32, 32)  # 8 x 8 = 64 patches
    maps = np.random.default_rng(0).random((2, 8, 8))
    curves = perturbation_curves(model, x, maps, [1, 1], patch_size=PATCH, steps=10, step_grid=grid,
                                 baseline="zero", baseline_value=0.0, batch_size=7)
    K, N = 10, 64
    share = (np.arange(K + 1) / K) if grid == "uniform" else (1 - np.cos(np.pi * np.arange(K + 1) / K)) / 2
    f = np.floor(N * share + 0.5) / N
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    p = sigmoid(4.0 * (1 - f))
    np.testing.assert_allclose(curves.fractions, f)
    np.testing.assert_allclose(curves.probs, np.tile(p, (2, 1)), rtol=0, atol=1e-12)
    ratio = 1 - p / p[0]
    expected = 100 * np.sum((ratio[1:] + ratio[:-1]) / 2 * np.diff(f))
    np.testing.assert_allclose(morf_aoc(curves, select="all").per_image, [expected, expected], rtol=0, atol=1e-9)
    assert curves.protocol["step_grid"] == grid and ("cos" in curves.protocol["removed_patches"]) == (grid == "cosine")


@pytest.mark.parametrize("grid", ["uniform", "cosine"])
def test_batched_equals_unbatched_and_one_copy_runs_once(vit, images, tied_maps, grid):
    """Batch size 1 and 1000 give the same curves to 1e-6; a memo shared by a second map with the same order
    makes no forward at all, and its curves are the first's."""
    targets = np.array([0, 1, 2, 0, 1, 2])
    one = perturbation_curves(vit, images, tied_maps, targets, patch_size=PATCH, order="both", steps=6,
                              step_grid=grid, batch_size=1)
    memo: dict = {}
    logits = vit(images).detach()
    many = perturbation_curves(vit, images, tied_maps, targets, patch_size=PATCH, order="both", steps=6,
                               step_grid=grid, batch_size=1000, memo=memo, logits=logits)
    for name in ("morf", "lerf"):
        np.testing.assert_allclose(one[name].probs, many[name].probs, rtol=0, atol=1e-6)
    seen: list[int] = []
    handle = vit.register_forward_pre_hook(lambda _m, args: seen.append(int(args[0].shape[0])))
    try:
        again = perturbation_curves(vit, images, 2 * tied_maps + 1, targets, patch_size=PATCH, order="both",
                                    steps=6, step_grid=grid, batch_size=1000, memo=memo, logits=logits)
    finally:
        handle.remove()
    assert sum(seen) == 1  # only the fill (a constant: one forward), every partial copy read back
    for name in ("morf", "lerf"):
        np.testing.assert_array_equal(again[name].probs, many[name].probs)


def test_memo_keys_keep_fills_and_classes_apart(vit, images, tied_maps):
    """A memo shared across fills or scored classes never mixes them: each call equals a fresh one."""
    memo: dict = {}
    for baseline, targets in (("mean", np.zeros(6, int)), ("blur", np.zeros(6, int)), ("mean", np.ones(6, int))):
        shared = perturbation_curves(vit, images, tied_maps, targets, patch_size=PATCH, steps=4, baseline=baseline,
                                     memo=memo)
        fresh = perturbation_curves(vit, images, tied_maps, targets, patch_size=PATCH, steps=4, baseline=baseline)
        np.testing.assert_array_equal(shared.probs, fresh.probs)


def test_auto_step_grid_keeps_small_grids_uniform():
    from infsa_viz.metrics.perturbation import perturbed_forwards, resolve_step_grid

    assert resolve_step_grid("auto", 20, 36)[:2] == ("uniform", 20)  # the shipped 37-token models
    assert resolve_step_grid("auto", 20, 100)[:2] == ("uniform", 20)
    assert resolve_step_grid("auto", 20, 196)[:2] == ("cosine", 10)  # ViT-B/16 at 224
    assert resolve_step_grid("auto", 5, 1369)[:2] == ("cosine", 5)
    assert resolve_step_grid("uniform", 20, 196)[:2] == ("uniform", 20)
    assert perturbed_forwards(20, 196) == 2 * 19 + 1 and perturbed_forwards(10, 196, "cosine") == 2 * 9 + 1
    with pytest.raises(ValueError, match="step_grid='dense'"):
        resolve_step_grid("dense", 20, 196)
