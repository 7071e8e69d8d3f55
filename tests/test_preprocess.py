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
                                       "resample": "bicubic"}
    assert load_model(tmp_path / "m").config.preprocessing == how
    del stored["preprocessing"]  # a config written before the contract existed
    (tmp_path / "m" / "config.json").write_text(json.dumps(stored))
    assert load_model(tmp_path / "m").config.preprocessing == CLUTTERED_DIGITS
    assert CLUTTERED_DIGITS.mean == (0.1663,) and CLUTTERED_DIGITS.std == (0.2046,)


@pytest.mark.parametrize(("how", "match"), [
    ({"std": 0.0}, "std="), ({"mean": "a"}, "mean="), ({"mean": float("nan")}, "mean="),
    ({"resize": "letterbox"}, "resize="), ({"resample": "lanczos"}, "resample="),
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
