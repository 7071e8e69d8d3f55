"""The published images stay bit-identical: sha256 of every array of both benchmarks' test splits
and of one training epoch, pinned from the generator as it was before scenes were added (47e6ab1).

These digests are regression pins, not figures: they change only if an image, label, box or mask
of a published split changes (or with other numpy / OpenCV / scikit-learn builds, which the
generator's docstring already names as the condition of byte-identical output).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from infsa_viz.data import BENCHMARKS, TEST_SIZE, cluttered_epoch, generate_cluttered, test_split

# Pinned at 47e6ab1 (before the scene refactor). Keys: benchmark → array → sha256 of its bytes.
TEST_SPLIT_DIGESTS = {
    "cluttered-digits": {
        "images": "39752f72321aadb7bafa57e8e21bae927906979929de152c683f2682b5ed8603",
        "labels": "abf2df91e9f8db4acb3c31e48cd66c670bdadbd966cf5a3a97ac417f41a08349",
        "target_boxes": "6db5193e747d057ccbae58c62c1dbb18c9e6a49ba680c8c1fdd769f60819afa8",
        "distractor_boxes": "851b64d81ae7602db0380e05ad621217aa8344a3833be1da94f57d0ee78f7bd2",
        "distractor_labels": "3affdbf233b79ffb56505bbc5a95297e7ef72e478c206a2f2628b47c1ad21ccf",
        "target_masks": "737dfd9f323c8b6319f2e2565bef7f9c460a2eb6f42b444fa3fa344666701a93",
        "target_indices": "dda3f906b5f55c5f268eab321aea2572d7a17f25438a7b50c1354511e62a7ace",
        "distractor_indices": "4ebfc763ba877707b62787331952db2093ee7d9112b37f6f003e0a223b1e1e6e",
    },
    "cluttered-digits-hard": {
        "images": "e01d1ac0dbcfb54d788f7c9b950a976fce0ff59223aa6df3dbae17755ef3e32d",
        "labels": "f9415b5c3e95861e2a72b8fbbfabbd1d7343740964e6909ec4ee068499c7fdb2",
        "target_boxes": "1bf6104f349e6e7c668f768371f120483cadc486188e2acc68b4b14ecba6f72d",
        "distractor_boxes": "8cf848c2590787c64484ecba49bbab4aee5929fe4ed168bc1ccc7cb2ae81745e",
        "distractor_labels": "167798720808104f0aeb11b6a5b9e447d0912540770e637196c7775873fe9c1b",
        "target_masks": "df35950afab9944abe43e883c1bdfe00d4073ca0e93e918ec468e688a30b1151",
        "target_indices": "b8313005b14827bbe51e5a2e3d24efb087ce18cc34c6718bca9455a170ff9c21",
        "distractor_indices": "3c63a65b1dd995a66fc587992c51e315c70fccb48eaf663a8c58b823fd93996c",
    },
}

# cluttered_epoch(3, n=300, seed=5, config=<benchmark's config>): the training stream.
EPOCH_DIGESTS = {
    "cluttered-digits": {
        "images": "ed37ca29a86ea56a77f9a956f3aeb046ea50ecb41f8b3cd010789032f0179c88",
        "target_boxes": "f26a9f462128efcef7b1b2e18d4928cd7ca4a535627a676964ce1f181cc84f9f",
        "distractor_boxes": "ce54eb4ea00eb7e34cda64604fd45f5cc71fc95f8456b32c420e6049373f95bb",
        "target_masks": "e06906e53360d67602d05a00a3d80fb0f0ef26b7e17749b55abcd6dbb7cf9afa",
    },
    "cluttered-digits-hard": {
        "images": "8119cbf3d7bcdb3310ccedd5b34de6d8b0217f0a5a75398dd976ef2d7f1c94f3",
        "target_boxes": "5627069bd21990c71ad4727975bb1eb4aacfc789d64e121e5ce82ecc0c415564",
        "distractor_boxes": "e81967beee6a6fcbcd3684f427375d704c680727a22bec010551117318491a5c",
        "target_masks": "a8595623db02cd43a0e660b7d21955417b6eec3278230b32daf15deefa9b26d3",
    },
}


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


@pytest.mark.parametrize("benchmark", sorted(TEST_SPLIT_DIGESTS))
def test_test_split_arrays_keep_their_checksums(benchmark):
    spec = BENCHMARKS[benchmark]
    sample = generate_cluttered(TEST_SIZE, split="test", seed=spec.test_seed, config=spec.config)
    found = {name: _digest(getattr(sample, name)) for name in TEST_SPLIT_DIGESTS[benchmark]}
    assert found == TEST_SPLIT_DIGESTS[benchmark]


@pytest.mark.parametrize("benchmark", sorted(TEST_SPLIT_DIGESTS))
def test_published_split_reads_the_pinned_arrays(benchmark):
    split = test_split(benchmark=benchmark)
    pinned = TEST_SPLIT_DIGESTS[benchmark]
    assert _digest(split.images) == pinned["images"]
    assert _digest(split.labels) == pinned["labels"]
    assert _digest(np.stack([b[0] for b in split.boxes])) == pinned["target_boxes"]
    assert _digest(np.stack(split.negative_boxes)) == pinned["distractor_boxes"]
    assert _digest(np.stack(split.negative_labels)) == pinned["distractor_labels"]


@pytest.mark.parametrize("benchmark", sorted(EPOCH_DIGESTS))
def test_training_epochs_keep_their_checksums(benchmark):
    sample = cluttered_epoch(3, n=300, seed=5, config=BENCHMARKS[benchmark].config)
    found = {name: _digest(getattr(sample, name)) for name in EPOCH_DIGESTS[benchmark]}
    assert found == EPOCH_DIGESTS[benchmark]


# The cued benchmarks, pinned when their models were trained: the shared test split (every scene's
# part boxes and classes concatenated) and epoch 3 of run seed 5 of each training setting.
CUED_TEST_DIGESTS = {
    "images": "c9d5010807372f5d0f270ed7268cfa93957cf6e03d127516959c53f73da9b955",
    "labels": "4d2ec97eea994a70eed248313d2369d89a0366926a6df332b2c99014db3d9c38",
    "part_boxes": "73d2dcbe58eac8a4816abaa7dca9d162ea608a4bdf17f3dc5e5fbb294fb3882c",
    "part_labels": "fd7403ea3c0d32504a729bcd914cbf845bc3ecee70341c7e79cd15205adcbb29",
}
CUED_EPOCH_DIGESTS = {  # (images, labels) of cued_epoch(3, n=300, seed=5, config=<setting's config>)
    "cued-digits-p10": ("60e1e05d0015d6ed440eb80a61520d2dec62a6c8da4ad834f9261085ba3c6a9c",
                        "38a16d6b78c781c73e235c6d3895d1b387a9df443ef161a7600b74890781d1e0"),
    "cued-digits-p100": ("bb0acd89340e14e941514dca81e33d11c445401d3bfb49d350b3de360b098adf",
                         "38a16d6b78c781c73e235c6d3895d1b387a9df443ef161a7600b74890781d1e0"),
}


@pytest.mark.parametrize("benchmark", sorted(CUED_EPOCH_DIGESTS))
def test_cued_splits_keep_their_checksums(benchmark):
    split = test_split(benchmark=benchmark)
    found = {"images": _digest(split.images), "labels": _digest(split.labels),
             "part_boxes": _digest(np.concatenate([np.asarray(s.boxes) for s in split.scenes])),
             "part_labels": _digest(np.concatenate([s.labels for s in split.scenes]))}
    assert found == CUED_TEST_DIGESTS
    images, labels = BENCHMARKS[benchmark].training_images(3, n=300, seed=5)
    assert (_digest(images), _digest(labels)) == CUED_EPOCH_DIGESTS[benchmark]
