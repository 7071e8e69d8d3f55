"""Cluttered digits: "name the largest digit" on a faint photo background.

Each image is a ``canvas_size`` x ``canvas_size`` grayscale canvas holding one large *target*
digit and ``num_distractors`` small digits, all real MNIST digits (:func:`load_mnist_digits`).
The label is the class of the target, the digit whose tight box has the longest side (target
sizes are validated to exceed distractor sizes, so "largest" is never ambiguous). Because the
target's position and ink are known exactly, attention and attribution maps can be scored
against ``target_boxes`` / ``target_masks``.

Rendering of one digit: crop the 28x28 MNIST digit to its ink bounding box, resize it with
``cv2.INTER_AREA`` so that its longer side is the sampled size (aspect ratio kept, shorter side
rounded, at least 1 px), trim the result again to its nonzero pixels, and composite it onto the
canvas with ``max()``.

Box convention (used across ``infsa_viz.data``): ``(x0, y0, x1, y1)`` in pixels, ``x1`` and
``y1`` exclusive, so a box covers ``image[y0:y1, x0:x1]``. Boxes here are tight: every nonzero
pixel of the rendered digit lies inside its box and each of the box's four border lines holds
at least one.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import operator
from typing import Literal, NamedTuple

import numpy as np

from .._checks import check_int, check_memory
from ..preprocess import CLUTTERED_DIGITS
from ._render import (
    CANDIDATES,
    PHOTO_COUNT,
    alternative_photo,
    photo_crop,
    place_all,
    place_one,
    render_digit,
)
from .mnist import Split, _check_split, load_mnist_digits
from .scenes import Scene

__all__ = [
    "PIXEL_MEAN",
    "PIXEL_STD",
    "ClutteredDigitsConfig",
    "ClutteredSample",
    "cluttered_epoch",
    "generate_cluttered",
    "generate_scenes",
]

# Mean and standard deviation of images / 255 for the default config (one definition, in the
# preprocessing contract): with these the normalised dataset mean is 0, the baseline the MoRF
# metric uses for "dataset mean"; tests/data/test_cluttered.py re-measures them to within 0.01.
PIXEL_MEAN = CLUTTERED_DIGITS.mean[0]
PIXEL_STD = CLUTTERED_DIGITS.std[0]

_SPLIT_CODE = {"train": 1, "test": 2}  # nonzero: SeedSequence ignores trailing zero words
#: Upper bounds of the generator's sizes: a canvas side (one 8192² canvas is 64 MiB) and distractors
#: per image (each is a digit of at least ``distractor_size[0]`` pixels placed without much overlap).
MAX_CANVAS = 8192
MAX_DISTRACTORS = 1024
_STREAM_SAMPLE, _STREAM_EPOCH = 1, 2


def _int_pair(name: str, value: object) -> tuple[int, int]:
    try:
        pair = tuple(operator.index(v) for v in value)  # type: ignore[union-attr]
    except TypeError:
        pair = ()
    if len(pair) != 2 or pair[0] < 1 or pair[0] > pair[1]:
        raise ValueError(f"{name}={value!r} is invalid; expected two integers 1 <= low <= high")
    return pair  # type: ignore[return-value]


@dataclasses.dataclass(frozen=True)
class ClutteredDigitsConfig:
    """Settings of the cluttered-digits generator.

    ``ClutteredDigitsConfig(**config.to_dict())`` rebuilds an equal config.

    Attributes:
        canvas_size: Side of the square grayscale canvas in pixels. Default 48.
        target_size: Inclusive range of the target digit's longer side in pixels. Default
            ``(18, 22)``.
        num_distractors: Number of distractor digits ``K``. Default 2.
        distractor_size: Inclusive range of a distractor's longer side; its upper end must be
            below ``target_size[0]``. Default ``(9, 12)``.
        max_overlap: Every pair of digit boxes overlaps by strictly less than this fraction of
            the smaller box's area. Default 0.10.
        background: ``"photo"`` (a random crop of scikit-learn's sample photos ``china.jpg`` /
            ``flower.jpg`` in gray, at one of four scales) or ``"none"`` (black). Default
            ``"photo"``.
        background_intensity: The photo is multiplied by this factor, so background pixels are
            at most ``floor(255 * background_intensity)``. Default 0.25.
        mask_threshold: ``target_masks`` marks rendered target pixels ``> mask_threshold``.
            Default 63, the brightest background pixel at the default intensity.
    """

    canvas_size: int = 48
    target_size: tuple[int, int] = (18, 22)
    num_distractors: int = 2
    distractor_size: tuple[int, int] = (9, 12)
    max_overlap: float = 0.10
    background: Literal["photo", "none"] = "photo"
    background_intensity: float = 0.25
    mask_threshold: int = 63

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        set_("target_size", _int_pair("target_size", self.target_size))
        set_("distractor_size", _int_pair("distractor_size", self.distractor_size))
        for name in ("canvas_size", "num_distractors", "mask_threshold"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{name}={value!r} is invalid; expected an integer")
            set_(name, int(value))
        for name, bound in (("canvas_size", MAX_CANVAS), ("num_distractors", MAX_DISTRACTORS)):
            if getattr(self, name) > bound:
                raise ValueError(f"{name}={getattr(self, name):,} is invalid; expected at most {bound:,}")
        if self.target_size[1] > MAX_CANVAS:
            raise ValueError(f"target_size={self.target_size} is invalid; expected sides of at most {MAX_CANVAS:,}")
        if self.canvas_size < self.target_size[1]:
            raise ValueError(
                f"canvas_size={self.canvas_size} is too small; "
                f"expected >= target_size[1]={self.target_size[1]}"
            )
        if self.distractor_size[1] >= self.target_size[0]:
            raise ValueError(
                f"distractor_size={self.distractor_size} is invalid; expected its upper end below "
                f"target_size[0]={self.target_size[0]} so that the target is the largest digit"
            )
        if self.num_distractors < 0:
            raise ValueError(f"num_distractors={self.num_distractors} is invalid; expected >= 0")
        if not 0.0 < float(self.max_overlap) <= 1.0:
            raise ValueError(f"max_overlap={self.max_overlap!r} is invalid; expected 0 < max_overlap <= 1")
        if self.background not in ("photo", "none"):
            raise ValueError(f"background={self.background!r} is invalid; expected 'photo' or 'none'")
        if not 0.0 <= float(self.background_intensity) <= 1.0:
            raise ValueError(
                f"background_intensity={self.background_intensity!r} is invalid; expected a value in [0, 1]"
            )
        if not 0 <= self.mask_threshold <= 254:
            raise ValueError(f"mask_threshold={self.mask_threshold} is invalid; expected 0..254")
        set_("max_overlap", float(self.max_overlap))
        set_("background_intensity", float(self.background_intensity))

    def image_bytes(self) -> int:
        """Bytes one generated image holds while it is made: its canvas, target mask, the scene's two
        backgrounds, its rendered digits and its random draws (the bound of :func:`generate_cluttered`'s ``n``)."""
        digits = self.target_size[1] ** 2 + self.num_distractors * self.distractor_size[1] ** 2
        return 4 * self.canvas_size**2 + digits + (self.num_distractors + 1) * (CANDIDATES * 16 + 512) + 2048

    def to_dict(self) -> dict[str, object]:
        """Returns the settings as JSON-ready builtins (tuples become lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    def settings_hash(self) -> str:
        """Returns the first 16 hex digits of the sha256 of the canonical JSON of :meth:`to_dict`."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class ClutteredSample:
    """A generated set of ``n`` cluttered-digit images (all numpy arrays; boxes as in the module doc).

    Attributes:
        images: ``(n, S, S) uint8`` canvases.
        labels: ``(n,) int64`` class of the target (largest) digit.
        target_boxes: ``(n, 4) int64`` tight box of the target's ink.
        distractor_boxes: ``(n, K, 4) int64`` tight boxes of the distractors' ink.
        distractor_labels: ``(n, K) int64`` classes of the distractors (may equal the label).
        target_masks: ``(n, S, S) bool`` target pixels ``> config.mask_threshold``.
        target_indices: ``(n,) int64`` row of the target in ``load_mnist_digits(split)``.
        distractor_indices: ``(n, K) int64`` rows of the distractors in the same pool.
    """

    images: np.ndarray
    labels: np.ndarray
    target_boxes: np.ndarray
    distractor_boxes: np.ndarray
    distractor_labels: np.ndarray
    target_masks: np.ndarray
    target_indices: np.ndarray
    distractor_indices: np.ndarray

    def __len__(self) -> int:
        return int(self.labels.shape[0])


class _DigitPool(NamedTuple):
    images: np.ndarray  # (M, 28, 28) uint8
    labels: np.ndarray  # (M,) int64
    ink_boxes: np.ndarray  # (M, 4) int64, tight (x0, y0, x1, y1)


@functools.lru_cache(maxsize=2)
def _digit_pool(split: Split) -> _DigitPool:
    """The digits of one split with their ink boxes; the only place the generator reads digits."""
    images, labels = load_mnist_digits(split)
    rows, cols = images.any(axis=2), images.any(axis=1)  # (M, 28) each
    side = images.shape[1]
    ink = np.stack(
        [cols.argmax(1), rows.argmax(1), side - cols[:, ::-1].argmax(1), side - rows[:, ::-1].argmax(1)],
        axis=1,
    ).astype(np.int64)
    ink.setflags(write=False)
    return _DigitPool(images, labels, ink)


def _draw(rng: np.random.Generator, pool_size: int, cfg: ClutteredDigitsConfig) -> dict[str, np.ndarray]:
    """Every random choice of one image, from that image's own generator."""
    K = cfg.num_distractors
    return {
        "tgt_idx": rng.integers(0, pool_size),
        "dis_idx": rng.integers(0, pool_size, size=K),
        "tgt_size": rng.integers(cfg.target_size[0], cfg.target_size[1] + 1),
        "dis_size": rng.integers(cfg.distractor_size[0], cfg.distractor_size[1] + 1, size=K),
        "photo_pick": rng.integers(0, PHOTO_COUNT),
        "photo_u": rng.random(2),
        "pos_u": rng.random((K + 1, CANDIDATES, 2)),
    }


def _generate(
    indices: range, split: Split, entropy: list[int], cfg: ClutteredDigitsConfig
) -> tuple[ClutteredSample, list[Scene]]:
    """Images ``indices`` of the stream named by ``entropy``, with their scenes: image ``i`` is
    drawn from its own generator, seeded by ``entropy + [i]``, so it is the same whichever images
    are asked with it. Each image is its scene's :meth:`~infsa_viz.data.scenes.Scene.render`."""
    pool = _digit_pool(split)
    rngs = [np.random.default_rng(np.random.SeedSequence([*entropy, i])) for i in indices]
    draws = [_draw(rng, len(pool.labels), cfg) for rng in rngs]
    n, S, K = len(draws), cfg.canvas_size, cfg.num_distractors
    tgt_idx = np.array([d["tgt_idx"] for d in draws], dtype=np.int64).reshape(n)
    dis_idx = np.array([d["dis_idx"] for d in draws], dtype=np.int64).reshape(n, K)

    patches: list[list[np.ndarray]] = []
    for i, d in enumerate(draws):
        target = render_digit(pool.images[tgt_idx[i]], pool.ink_boxes[tgt_idx[i]], int(d["tgt_size"]))
        row = [target]
        for k in range(K):
            size, digit = int(d["dis_size"][k]), dis_idx[i, k]
            patch = render_digit(pool.images[digit], pool.ink_boxes[digit], size)
            while size > 1 and max(patch.shape) >= max(target.shape):  # target strictly the largest
                size -= 1
                patch = render_digit(pool.images[digit], pool.ink_boxes[digit], size)
            row.append(patch)
        patches.append(row)
    wh = np.array([[p.shape[::-1] for p in row] for row in patches], dtype=np.int64).reshape(n, K + 1, 2)
    pos_u = np.array([d["pos_u"] for d in draws]).reshape(n, K + 1, CANDIDATES, 2)
    boxes, placed = place_all(wh, pos_u, canvas_size=S, max_overlap=cfg.max_overlap)
    for i in np.flatnonzero(~placed):  # rare: fall back to rejection sampling, same image's generator
        layout = place_one(wh[i], rngs[i], canvas_size=S, max_overlap=cfg.max_overlap)
        if layout is None:
            raise ValueError(
                f"config={cfg!r} is too crowded: {K + 1} digits found no layout with "
                f"max_overlap={cfg.max_overlap}"
            )
        boxes[i] = layout

    digit_labels = np.concatenate([tgt_idx[:, None], dis_idx], axis=1)  # (n, K + 1) pool rows
    digit_labels = pool.labels[digit_labels].astype(np.int64)
    digit_labels.setflags(write=False)
    black = np.zeros((S, S), dtype=np.uint8)
    black.setflags(write=False)
    scenes = []
    for i, d in enumerate(draws):
        if cfg.background == "photo":
            background = photo_crop(cfg.background_intensity, int(d["photo_pick"]), d["photo_u"], S)
            alternative = photo_crop(cfg.background_intensity, alternative_photo(int(d["photo_pick"])),
                                     d["photo_u"], S)
        else:
            background = alternative = black
        box_rows = boxes[i].copy()
        for array in (box_rows, *patches[i]):
            array.setflags(write=False)
        scenes.append(Scene(background, alternative, tuple(patches[i]), box_rows, digit_labels[i]))

    images = np.stack([scene.render() for scene in scenes]) if n else np.zeros((0, S, S), np.uint8)
    masks = np.zeros((n, S, S), dtype=bool)
    for i in range(n):
        x0, y0, x1, y1 = boxes[i, 0]
        masks[i, y0:y1, x0:x1] = patches[i][0] > cfg.mask_threshold
    sample = ClutteredSample(
        images=images,
        labels=pool.labels[tgt_idx].astype(np.int64),
        target_boxes=boxes[:, 0].copy(),
        distractor_boxes=boxes[:, 1:].copy(),
        distractor_labels=pool.labels[dis_idx].astype(np.int64).reshape(n, K),
        target_masks=masks,
        target_indices=tgt_idx,
        distractor_indices=dis_idx,
    )
    return sample, scenes


def _sample_stream(n: int, split: Split, seed: int, start: int,
                   config: ClutteredDigitsConfig) -> tuple[range, Split, list[int]]:
    """Validated ``(indices, split, entropy)`` of images ``start … start + n − 1`` of ``(split, seed)``;
    ``n`` images of ``config`` must fit the memory available."""
    from ..estimate import available_memory

    n = check_int("n", n, minimum=0)
    check_memory("n", n, bytes_each=config.image_bytes(), budget=available_memory(),
                 what=f"{config.canvas_size}x{config.canvas_size} canvases, masks, scenes and draws")
    _check_split(split)
    seed = check_int("seed", seed, minimum=0)
    start = check_int("start", start, minimum=0)
    return range(start, start + n), split, [seed, _STREAM_SAMPLE, _SPLIT_CODE[split]]


def generate_cluttered(
    n: int, *, split: Split, seed: int, config: ClutteredDigitsConfig = ClutteredDigitsConfig(), start: int = 0
) -> ClutteredSample:
    """Generates images ``start, …, start + n − 1`` of the stream ``(split, seed, config)``.

    Image ``i`` depends only on ``(split, seed, config, i)``: it is drawn from its own generator
    ``np.random.default_rng(SeedSequence([seed, stream, split, i]))``, so asking for more or fewer
    images, or for a later window, never changes it. Deterministic: byte-identical arrays with the
    same numpy/OpenCV/scikit-learn builds. ``split="train"`` draws digits only from
    ``load_mnist_digits("train")`` (MNIST training images), ``"test"`` only from the test pool.

    Args:
        n: Number of images, ``>= 0``.
        split: ``"train"`` or ``"test"``.
        seed: Non-negative seed of the stream.
        config: Generator settings. Default ``ClutteredDigitsConfig()``.
        start: Index of the first image, ``>= 0``. Default 0.

    Returns:
        A :class:`ClutteredSample`.

    Raises:
        ValueError: If ``n``, ``split``, ``seed`` or ``start`` is invalid, or the config leaves no room.

    Example:
        >>> sample = generate_cluttered(4, split="test", seed=0)
        >>> sample.images.shape, sample.target_boxes.shape
        ((4, 48, 48), (4, 4))
    """
    return _generate(*_sample_stream(n, split, seed, start, config), config)[0]


def generate_scenes(
    n: int, *, split: Split, seed: int, config: ClutteredDigitsConfig = ClutteredDigitsConfig(), start: int = 0
) -> list[Scene]:
    """The scenes of images ``start, …, start + n − 1`` of :func:`generate_cluttered`'s stream.

    Scene ``i`` renders image ``i`` bit for bit (``scene.render()``), and re-renders it without any
    digits or with its background swapped (:class:`~infsa_viz.data.scenes.Scene`).

    Args:
        n, split, seed, config, start: as :func:`generate_cluttered`.

    Returns:
        ``n`` :class:`~infsa_viz.data.scenes.Scene` objects.

    Example:
        >>> scene = generate_scenes(1, split="test", seed=0)[0]
        >>> scene.object_names, scene.masks().shape
        (('target', 'distractor_1', 'distractor_2', 'background'), (4, 48, 48))
    """
    return _generate(*_sample_stream(n, split, seed, start, config), config)[1]


def cluttered_epoch(
    epoch: int, *, n: int, seed: int, config: ClutteredDigitsConfig = ClutteredDigitsConfig()
) -> ClutteredSample:
    """Generates a fresh training set for one epoch, determined by ``(seed, epoch)``.

    Different epochs give different images; every epoch draws only from the train digit pool, and
    image ``i`` of an epoch depends only on ``(seed, epoch, config, i)``.

    Args:
        epoch: Non-negative epoch number.
        n: Number of images.
        seed: Non-negative run seed.
        config: Generator settings. Default ``ClutteredDigitsConfig()``.

    Returns:
        A :class:`ClutteredSample`.
    """
    from ..estimate import available_memory

    epoch = check_int("epoch", epoch, minimum=0)
    n = check_int("n", n, minimum=0)
    check_memory("n", n, bytes_each=config.image_bytes(), budget=available_memory(),
                 what=f"{config.canvas_size}x{config.canvas_size} canvases, masks, scenes and draws")
    seed = check_int("seed", seed, minimum=0)
    return _generate(range(n), "train", [seed, _STREAM_EPOCH, _SPLIT_CODE["train"], epoch], config)[0]
