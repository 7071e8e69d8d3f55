"""Tests of the packaged MNIST digits (infsa_viz/data/mnist.py and mnist_subset.npz)."""

from importlib import resources

import numpy as np
import pytest

from infsa_viz.data import load_mnist_digits


@pytest.mark.parametrize(("split", "per_class"), [("train", 800), ("test", 200)])
def test_shapes_dtypes_and_class_balance(split, per_class):
    images, labels = load_mnist_digits(split)
    assert images.shape == (10 * per_class, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (10 * per_class,) and labels.dtype == np.int64
    np.testing.assert_array_equal(np.bincount(labels, minlength=10), np.full(10, per_class))
    # Real MNIST: every digit has ink, and the pixel mean is MNIST's well-known 0.13.
    assert images.reshape(len(images), -1).max(axis=1).min() > 100
    assert abs(images.mean() / 255 - 0.1307) < 0.005


def test_cached_and_read_only():
    first, second = load_mnist_digits("test"), load_mnist_digits("test")
    assert first[0] is second[0] and first[1] is second[1]
    with pytest.raises(ValueError):
        first[0][0, 0, 0] = 1


def test_train_and_test_pools_share_no_digit():
    train = {d.tobytes() for d in load_mnist_digits("train")[0]}
    assert not any(d.tobytes() in train for d in load_mnist_digits("test")[0])


def test_npz_provenance_keys():
    resource = resources.files("infsa_viz.data").joinpath("mnist_subset.npz")
    with resources.as_file(resource) as path, np.load(path, allow_pickle=False) as npz:
        assert sorted(npz.files) == sorted(
            f"{s}_{k}" for s in ("train", "test") for k in ("images", "labels", "source_indices")
        )
        for split, total in (("train", 60000), ("test", 10000)):
            idx = npz[f"{split}_source_indices"]
            assert np.all(np.diff(idx) > 0) and idx[0] >= 0 and idx[-1] < total
            assert npz[f"{split}_labels"].dtype == np.uint8


def test_invalid_split():
    with pytest.raises(ValueError, match="split='val'"):
        load_mnist_digits("val")
