"""Cross-check against Quantus (0.6) on identical inputs; skipped when quantus is not installed.

Alignment:

* ``quantus.RegionPerturbation(patch_size=4, order=..., regions_evaluation=16,
  perturb_baseline=c, normalise=False, abs=False)`` removes one non-overlapping 4x4 patch per
  step, ranked by the per-patch sum of a pixel attribution, and returns ``p_0 - p_k`` for
  ``k = 1..16`` (softmax probability of ``y``). We give it our token map repeated over each
  patch (nearest upsampling, so the per-patch sums are ``16 * map``; continuous random maps, no
  ties) and run ours with ``steps = h * w = 16`` (one patch per step) and the same constant
  baseline. Both curves then agree to 1e-6 (float32 forward passes in different batches); our
  ``aopc`` equals ``sum(quantus_curve) / (R + 1)``.
* ``quantus.AUC(normalise=False, abs=False)`` on a pixel map and a binary box mask is sklearn's
  ``roc_curve`` + ``auc``; our ``box_auc`` on the same pixel map agrees to 1e-12.
* ``quantus.PointingGame`` (any maximal pixel on the mask, no tolerance) agrees with ours at
  ``tolerance=0, ties="any"`` on images with a box, and diverges on an empty mask: Quantus casts
  its ``nan`` into a boolean array and reports a hit (issues #75, #333); we return ``nan``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from infsa_viz.metrics import (
    UndefinedMetricWarning,
    aopc,
    box_auc,
    boxes_to_mask,
    perturbation_curves,
    pointing_game,
    upsample_map,
)

quantus = pytest.importorskip("quantus")

PATCH, SIZE = 4, 16


def _quiet(metric, **inputs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(metric(channel_first=True, **inputs), dtype=np.float64)


@pytest.mark.parametrize(("baseline", "value"), [("mean", 0.0), ("zero", -0.8128)])
def test_region_perturbation_curves_agree(vit, images, baseline, value):
    maps = np.random.default_rng(5).random((6, 4, 4))  # continuous: no ties
    targets = np.array([0, 1, 2, 0, 1, 2])
    ours = perturbation_curves(vit, images, maps, targets, patch_size=PATCH, order="both", steps=16,
                               baseline=baseline, **({"baseline_value": value} if baseline == "zero" else {}))
    attribution = upsample_map(maps, SIZE, mode="nearest")[:, None]  # (B, 1, H, W)
    for order in ("morf", "lerf"):
        metric = quantus.RegionPerturbation(
            patch_size=PATCH, order=order, regions_evaluation=16, perturb_baseline=value,
            normalise=False, abs=False, disable_warnings=True, display_progressbar=False,
        )
        theirs = _quiet(metric, model=vit, x_batch=images.numpy(), y_batch=targets, a_batch=attribution,
                        softmax=True, device="cpu", batch_size=6)  # (B, 16): p_0 - p_k
        curve = ours[order]
        np.testing.assert_allclose(curve.probs[:, :1] - curve.probs[:, 1:], theirs, rtol=0, atol=1e-6)
        np.testing.assert_allclose(aopc(curve, select="all").per_image, theirs.sum(axis=1) / 17, rtol=0, atol=1e-6)


def _masks(boxes):
    return np.stack([boxes_to_mask(b, SIZE) for b in boxes])[:, None].astype(np.float64)  # (B, 1, H, W)


def test_box_roc_auc_agrees_with_quantus_auc(images, boxes):
    pixel_maps = np.random.default_rng(6).random((6, SIZE, SIZE))
    metric = quantus.AUC(normalise=False, abs=False, disable_warnings=True, display_progressbar=False)
    theirs = _quiet(metric, model=None, x_batch=images.numpy(), y_batch=np.zeros(6, int),
                    a_batch=pixel_maps[:, None], s_batch=_masks(boxes))
    np.testing.assert_allclose(box_auc(pixel_maps, boxes, image_size=SIZE).roc_auc, theirs, rtol=0, atol=1e-12)


def test_pointing_game_agrees_on_boxes_and_diverges_on_empty_mask(images, boxes):
    pixel_maps = np.random.default_rng(7).random((6, SIZE, SIZE))
    pixel_maps[:3] = _masks(boxes)[:3, 0] * 2 + pixel_maps[:3]  # three maps peak inside their box
    boxes = [*boxes[:5], np.zeros((0, 4))]  # the last image has no target
    metric = quantus.PointingGame(normalise=False, abs=False, disable_warnings=True, display_progressbar=False)
    theirs = _quiet(metric, model=None, x_batch=images.numpy(), y_batch=np.zeros(6, int),
                    a_batch=pixel_maps[:, None], s_batch=_masks(boxes))
    with pytest.warns(UndefinedMetricWarning):
        ours = pointing_game(pixel_maps, boxes, image_size=SIZE, tolerance=0, ties="any").hits
    np.testing.assert_array_equal(ours[:5], theirs[:5])
    assert ours[:3].tolist() == [1.0, 1.0, 1.0]
    # Divergence, documented: Quantus scores the empty mask as a hit; ours is undefined.
    assert theirs[5] == 1.0 and np.isnan(ours[5])
