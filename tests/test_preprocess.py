"""The preprocessing contract: one path from decoded images to model input, stored with the model."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
import torch
from torch.testing import assert_close

from infsa_viz import Preprocessing, ViTConfig, VisionTransformer, load_model, prepare, preprocess, save_model
from infsa_viz.preprocess import CLUTTERED_DIGITS


def _config(size: int = 12, channels: int = 3, **how) -> ViTConfig:
    return ViTConfig(img_size=size, in_chans=channels, patch_size=4, preprocessing=Preprocessing(**how))


def test_normalisation_is_per_channel_pixel_over_255_minus_mean_over_std():
    image = np.zeros((12, 12, 3), np.uint8)
    image[..., 0], image[..., 1], image[..., 2] = 255, 51, 0
    x = preprocess(_config(mean=(0.5, 0.2, 0.0), std=(0.25, 0.1, 2.0)), [image])
    assert x.shape == (1, 3, 12, 12) and x.dtype == torch.float32
    assert_close(x[0, :, 0, 0], torch.tensor([(1 - 0.5) / 0.25, (0.2 - 0.2) / 0.1, 0.0]))
    one = preprocess(_config(mean=0.5, std=0.5), [image])  # one value applies to every channel
    assert_close(one[0, :, 3, 3], torch.tensor([1.0, (0.2 - 0.5) / 0.5, -1.0]))


def test_channels_gray_to_rgb_rgb_to_gray_and_alpha_dropped():
    gray = np.full((12, 12), 128, np.uint8)
    assert_close(preprocess(_config(), [gray])[0], torch.full((3, 12, 12), 128 / 255))
    red = np.zeros((12, 12, 3), np.uint8)
    red[..., 0] = 255
    expected = cv2.cvtColor(np.array([[[255, 0, 0]]], np.uint8), cv2.COLOR_RGB2GRAY)[0, 0] / 255
    assert_close(preprocess(_config(channels=1), [red])[0], torch.full((1, 12, 12), float(expected)))
    rgba = np.zeros((12, 12, 4), np.uint8)
    rgba[..., 2], rgba[..., 3] = 200, 0  # fully transparent blue: alpha is dropped, not composited
    assert_close(preprocess(_config(), [rgba])[0, 2], torch.full((12, 12), 200 / 255))


def test_resize_stretch_and_center_crop_with_their_box_mapping():
    image = np.zeros((20, 40), np.uint8)
    image[:, 20:] = 255  # right half white
    stretched = prepare(_config(channels=1, resample="nearest"), [image])
    assert stretched.display[0].shape == (12, 12) and stretched.display[0][:, 6:].min() == 255
    np.testing.assert_array_equal(stretched.boxes(0, [[10, 0, 20, 10]]), [[3, 0, 6, 6]])  # x·0.3, y·0.6, outwards
    cropped = prepare(_config(channels=1, resize="center_crop", resample="nearest"), [image])
    # Shorter side 20 → 12 (scale 0.6): 24×12, then the centre 12 columns (offset 6).
    assert cropped.display[0].shape == (12, 12)
    np.testing.assert_array_equal(cropped.display[0][:, :6], 0)
    np.testing.assert_array_equal(cropped.display[0][:, 6:], 255)
    np.testing.assert_array_equal(cropped.boxes(0, [[20, 0, 40, 20], [0, 0, 5, 5]]), [[6, 0, 12, 12], [0, 0, 0, 3]])


def test_resize_pad_keeps_the_aspect_ratio_centres_the_image_on_the_mean_colour_and_maps_boxes():
    image = np.full((20, 40), 255, np.uint8)  # wide white image
    padded = prepare(_config(channels=1, resize="pad", resample="nearest", mean=0.5, std=0.5), [image])
    # Longer side 40 → 12 (scale 0.3): 12 × 6, centred: rows 3..8 white, 3 rows of mean colour above and below.
    shown = padded.display[0]
    assert shown.shape == (12, 12)
    np.testing.assert_array_equal(shown[3:9], 255)
    np.testing.assert_array_equal(shown[:3], round(255 * 0.5))
    np.testing.assert_array_equal(shown[9:], round(255 * 0.5))
    assert_close(padded.tensor[0, 0, 0], torch.full((12,), (128 / 255 - 0.5) / 0.5))  # margins normalise to ≈ 0
    np.testing.assert_array_equal(padded.scales[0], [0.3, 0.3, 0.0, -3.0])
    # (10, 0, 20, 20) → x·0.3, y·0.3 + 3, outwards: (3, 3, 6, 9); the whole image → its letterboxed rectangle.
    np.testing.assert_array_equal(padded.boxes(0, [[10, 0, 20, 20], [0, 0, 40, 20]]), [[3, 3, 6, 9], [0, 3, 12, 9]])
    tall = prepare(_config(channels=3, resize="pad", resample="nearest", mean=(1.0, 0.0, 0.2)),
                   [np.zeros((30, 10, 3), np.uint8)])
    # 30 × 10 → 12 × 4, odd margin 8 → 4 left, 4 right; RGB margin colour per channel.
    np.testing.assert_array_equal(tall.display[0][:, :4], np.broadcast_to([255, 0, 51], (12, 4, 3)))
    np.testing.assert_array_equal(tall.display[0][:, 4:8], 0)
    np.testing.assert_array_equal(tall.boxes(0, [[0, 0, 10, 30]]), [[4, 0, 8, 12]])
    odd = prepare(_config(channels=1, resize="pad", resample="nearest"), [np.zeros((10, 40), np.uint8)])
    assert odd.scales[0][3] == -4.0  # 12 × 3 image, margin 9 → 4 above, 5 below


def test_crop_fraction_resizes_beyond_the_model_side_then_cuts_the_centre_and_boxes_cut_by_it_are_clipped():
    image = np.zeros((20, 40), np.uint8)
    image[:, 20:] = 255
    # stretch, fraction 0.75: 40×20 → 16×16 (sx 0.4, sy 0.8), centre 12×12 at offset 2.
    stretched = prepare(_config(channels=1, resample="nearest", crop_fraction=0.75), [image])
    np.testing.assert_array_equal(stretched.scales[0], [0.4, 0.8, 2.0, 2.0])
    np.testing.assert_array_equal(stretched.display[0][:, :6], 0)
    np.testing.assert_array_equal(stretched.display[0][:, 6:], 255)
    # A box across the crop's left edge keeps only its inside part; a box wholly outside is empty.
    np.testing.assert_array_equal(stretched.boxes(0, [[0, 0, 10, 10], [0, 0, 4, 2]]), [[0, 0, 2, 6], [0, 0, 0, 0]])
    # center_crop, fraction 0.5: shorter side 20 → 24 (scale 1.2): 48×24, centre 12×12 at (18, 6).
    cropped = prepare(_config(channels=1, resize="center_crop", resample="nearest", crop_fraction=0.5), [image])
    np.testing.assert_array_equal(cropped.scales[0], [1.2, 1.2, 18.0, 6.0])
    np.testing.assert_array_equal(cropped.boxes(0, [[15, 5, 25, 15], [30, 0, 40, 20]]), [[0, 0, 12, 12], [12, 0, 12, 12]])  # the second lies right of the crop: empty


def test_a_square_image_is_the_same_under_every_resize_policy():
    image = np.random.default_rng(2).integers(0, 256, (24, 24, 3), dtype=np.uint8)
    outputs = [prepare(_config(resize=r), [image]) for r in ("stretch", "center_crop", "pad")]
    for out in outputs[1:]:
        assert_close(out.tensor, outputs[0].tensor)
        np.testing.assert_array_equal(out.scales, outputs[0].scales)


def test_auto_resample_uses_area_when_shrinking_and_linear_when_growing():
    rng = np.random.default_rng(0)
    big, small = rng.integers(0, 256, (48, 48), dtype=np.uint8), rng.integers(0, 256, (6, 6), dtype=np.uint8)
    how = _config(channels=1)
    np.testing.assert_array_equal(prepare(how, [big]).display[0], cv2.resize(big, (12, 12), interpolation=cv2.INTER_AREA))
    np.testing.assert_array_equal(prepare(how, [small]).display[0],
                                  cv2.resize(small, (12, 12), interpolation=cv2.INTER_LINEAR))


def test_the_batch_fast_path_equals_the_per_image_path():
    rng = np.random.default_rng(1)
    batch = rng.integers(0, 256, (5, 12, 12), dtype=np.uint8)
    config = _config(channels=1, mean=0.3, std=0.2)
    assert_close(preprocess(config, batch), preprocess(config, list(batch)))
    rgb = rng.integers(0, 256, (2, 12, 12, 3), dtype=np.uint8)
    assert_close(preprocess(_config(), rgb), preprocess(_config(), list(rgb)))


def test_preprocessing_is_stored_in_config_json_and_old_configs_load_with_todays_constants(tmp_path):
    how = Preprocessing(mean=(0.1, 0.2, 0.3), std=(0.5, 0.5, 0.5), resize="center_crop", resample="bicubic")
    model = VisionTransformer(ViTConfig(img_size=16, in_chans=3, patch_size=4, embed_dim=16, depth=1, num_heads=2,
                                        preprocessing=how))
    save_model(model, tmp_path / "m")
    stored = json.loads((tmp_path / "m" / "config.json").read_text())
    assert stored["preprocessing"] == {"mean": [0.1, 0.2, 0.3], "std": [0.5, 0.5, 0.5], "resize": "center_crop",
                                       "resample": "bicubic", "crop_fraction": 1.0}
    assert load_model(tmp_path / "m").config.preprocessing == how
    del stored["preprocessing"]  # a config written before the contract existed
    (tmp_path / "m" / "config.json").write_text(json.dumps(stored))
    assert load_model(tmp_path / "m").config.preprocessing == CLUTTERED_DIGITS
    assert CLUTTERED_DIGITS.mean == (0.1663,) and CLUTTERED_DIGITS.std == (0.2046,)


@pytest.mark.parametrize(("how", "match"), [
    ({"std": 0.0}, "std="), ({"mean": "a"}, "mean="), ({"mean": float("nan")}, "mean="),
    ({"resize": "letterbox"}, "resize="), ({"resample": "hamming"}, "resample="),
    ({"crop_fraction": 0.0}, "crop_fraction="), ({"resize": "pad", "crop_fraction": 0.5}, "crop_fraction="),
])
def test_bad_preprocessing_names_the_field(how, match):
    with pytest.raises(ValueError, match=match):
        Preprocessing(**how)


def test_mean_per_channel_must_match_the_model_channels_and_bad_config_keys_are_named(tmp_path):
    with pytest.raises(ValueError, match="in_chans=1"):
        ViTConfig(in_chans=1, preprocessing=Preprocessing(mean=(0.1, 0.2, 0.3)))
    model = VisionTransformer(ViTConfig(img_size=16, patch_size=4, embed_dim=16, depth=1, num_heads=2))
    save_model(model, tmp_path / "m")
    stored = json.loads((tmp_path / "m" / "config.json").read_text())
    stored["preprocessing"]["scale"] = 2
    (tmp_path / "m" / "config.json").write_text(json.dumps(stored))
    with pytest.raises(ValueError, match="preprocessing: unknown keys \\['scale'\\]"):
        load_model(tmp_path / "m")


@pytest.mark.parametrize(("images", "error", "match"), [
    ([np.zeros((4, 4), np.float32)], TypeError, "uint8"),
    ([np.zeros((4, 4, 2), np.uint8)], ValueError, "shape"),
    ([np.zeros((0, 4), np.uint8)], ValueError, "shape"),
    ([], ValueError, "empty"),
    (np.zeros((4, 4), np.uint8), ValueError, "batch"),
])
def test_bad_images_are_refused_with_the_reason(images, error, match):
    with pytest.raises(error, match=match):
        preprocess(_config(), images)


def test_masks_follow_the_images_resize_crop_and_pad():
    from infsa_viz.metrics import boxes_to_mask

    block = np.zeros((24, 24), bool)
    block[4:12, 8:16] = True
    lone = np.zeros((24, 24), bool)
    lone[0, 0] = True  # a quarter of one model pixel: not kept
    halved = prepare(_config(channels=1, resample="nearest"), [np.zeros((24, 24), np.uint8)])
    np.testing.assert_array_equal(halved.masks(0, np.stack([block, lone])),
                                  np.stack([boxes_to_mask([8 // 2, 4 // 2, 16 // 2, 12 // 2], 12), np.zeros((12, 12), bool)]))
    # Growing 6 → 12 doubles a mask exactly; the model's resample (nearest here) does not matter.
    small = np.zeros((6, 6), bool)
    small[1:3, 1:3] = True
    grown = prepare(_config(channels=1, resample="bicubic"), [np.zeros((6, 6), np.uint8)])
    np.testing.assert_array_equal(grown.masks(0, small)[0], boxes_to_mask([2, 2, 6, 6], 12))
    # pad: 12 × 24 → 6 × 12 centred on rows 3..8; a mask of a box lands on the mapped box.
    padded = prepare(_config(channels=1, resize="pad"), [np.zeros((12, 24), np.uint8)])
    box = [[4, 2, 20, 10]]
    source = boxes_to_mask(box, (12, 24))
    np.testing.assert_array_equal(padded.masks(0, source)[0], boxes_to_mask(padded.boxes(0, box), 12))
    assert not padded.masks(0, np.ones((12, 24), bool))[0, :3].any()  # margins belong to no mask
    # center_crop: 24 × 48 → 12 × 24, centre columns 6..17; the left half of the image → columns 0..5.
    cropped = prepare(_config(channels=1, resize="center_crop"), [np.zeros((24, 48), np.uint8)])
    left = boxes_to_mask([0, 0, 24, 24], (24, 48))
    np.testing.assert_array_equal(cropped.masks(0, left)[0], boxes_to_mask(cropped.boxes(0, [[0, 0, 24, 24]]), 12))
    same = prepare(_config(size=24, channels=1), np.zeros((1, 24, 24), np.uint8))  # the fast path
    np.testing.assert_array_equal(same.masks(0, block)[0], block)


def test_disjoint_masks_stay_disjoint_through_any_resize():
    labels = np.random.default_rng(0).integers(0, 4, (30, 50))
    partition = labels[None] == np.arange(4)[:, None, None]  # (4, 30, 50) disjoint, covering
    for how in ({}, {"resize": "center_crop"}, {"resize": "pad"}, {"crop_fraction": 0.8}):
        for size in (12, 64):
            prepared = prepare(_config(size=size, channels=1, **how), [np.zeros((30, 50), np.uint8)])
            assert prepared.masks(0, partition).sum(axis=0).max() <= 1
    with pytest.raises(ValueError, match="masks"):
        prepared.masks(0, np.zeros(5, bool))
