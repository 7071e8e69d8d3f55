"""Labelled image sets and the one cluttered-digits test split every entry point reads.

:class:`LabelledImages` is what evaluation, the CLI and the app consume: decoded ``uint8``
images in their source pixels (the model's preprocessing resizes and normalises them), labels,
target boxes and optional negative boxes, and a name per image. :func:`test_split` makes the
fixed test split of a cluttered-digits benchmark; image ``i`` of it is the same image whether
1, 1,000 or 2,000 images are asked for (see :func:`~infsa_viz.data.cluttered.generate_cluttered`).
:data:`BENCHMARKS` names the benchmark configurations (generator settings, test seed and size,
and the input normalisation a model trained on them stores).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..preprocess import CLUTTERED_DIGITS, Preprocessing
from .cluttered import ClutteredDigitsConfig, _generate, _sample_stream, cluttered_epoch
from .cued import CuedDigitsConfig, cued_epoch, generate_cued
from .scenes import Scene

__all__ = ["BENCHMARKS", "DEFAULT_BENCHMARK", "DIGITS", "GENERATORS", "TEST_SEED", "TEST_SIZE", "Benchmark",
           "Generator", "LabelledImages", "check_benchmark", "register_benchmark", "test_split"]

#: The cluttered-digits test split: seed and size, fixed for every model and training seed.
TEST_SEED = 20_260_301
TEST_SIZE = 2_000


#: The classes of the digit benchmarks, in label order.
DIGITS: tuple[str, ...] = tuple(f"digit {i}" for i in range(10))


@dataclass(frozen=True)
class Generator:
    """A kind of generated benchmark: how its settings draw test scenes and training epochs.

    A generator's settings object (the ``config`` of a :class:`Benchmark`) has ``to_dict()`` (JSON-able)
    and ``settings_hash()``; image ``i`` of a split must depend only on ``(split, seed, i)``.

    Attributes:
        name: the function named in a split's description (``generate_cluttered``).
        test: ``test(config, n, seed) -> (images (n, S, S) uint8, labels (n,) int64, scenes)``: the first ``n``
            images of the test stream ``seed``, each a :class:`~infsa_viz.data.scenes.Scene` whose part 0 is
            the target (its box the positive box) and whose other present parts are the negative boxes.
        epoch: ``epoch(config, epoch, n, seed) -> (images, labels)``: a training epoch of run seed ``seed``.
        boxes: what the positive and negative boxes are, in words.
        negative_labels: what each negative box's class is, in words.
        drawn_from: what its training images are drawn from, in words (stored in a trained model's card);
            default: the generator's name.
    """

    name: str
    test: Callable[[Any, int, int], tuple[np.ndarray, np.ndarray, Sequence[Scene]]]
    epoch: Callable[[Any, int, int, int], tuple[np.ndarray, np.ndarray]]
    boxes: str
    negative_labels: str
    drawn_from: str = ""


def _cluttered_test(config: ClutteredDigitsConfig, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[Scene]]:
    sample, scenes = _generate(*_sample_stream(n, "test", seed, 0, config), config)
    return sample.images, sample.labels, scenes


def _cluttered_epoch(config: ClutteredDigitsConfig, epoch: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    sample = cluttered_epoch(epoch, n=n, seed=seed, config=config)
    return sample.images, sample.labels


#: The generators of the shipped benchmarks, by name.
GENERATORS: dict[str, Generator] = {g.name: g for g in (
    Generator("generate_cluttered", _cluttered_test, _cluttered_epoch,
              "target digit (positive); distractor digits are the negative boxes", "each distractor digit's class",
              "MNIST train digits"),
    Generator("generate_cued", lambda config, n, seed: generate_cued(n, split="test", seed=seed, config=config),
              lambda config, epoch, n, seed: cued_epoch(epoch, n=n, seed=seed, config=config),
              "target digit (positive); distractor digits and the cue glyph are the negative boxes",
              "each distractor digit's class and the class the cue encodes", "MNIST train digits"),
)}


@dataclass(frozen=True)
class Benchmark:
    """A named generated benchmark: its generator and settings, classes, test split and normalisation.

    Attributes:
        name: the registry key (also the ``--data`` value of ``train`` and ``evaluate``).
        config: the generator's settings of the training images (and of the test images unless
            ``test_config`` is given).
        test_seed: seed of the fixed test split.
        preprocessing: mean and standard deviation of ``pixel / 255`` of its training images,
            stored in the config of every model trained on it.
        description: one line: what makes it this benchmark.
        test_config: the test split's settings where they differ from training's (the cued
            benchmarks train at one cue agreement and share one test split), else ``None``.
        generator: the kind of benchmark (:class:`Generator`) that draws its images from ``config``.
        classes: the name of each label, in label order (default the ten digits).
    """

    name: str
    config: Any
    test_seed: int
    preprocessing: Preprocessing
    description: str
    test_config: Any = None
    generator: Generator = GENERATORS["generate_cluttered"]
    classes: tuple[str, ...] = DIGITS

    @property
    def evaluation_config(self) -> Any:
        """The settings of the test split."""
        return self.config if self.test_config is None else self.test_config

    def training_images(self, epoch: int, *, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """``(images (n, S, S) uint8, labels (n,) int64)``: epoch ``epoch``'s training images of run seed ``seed``."""
        return self.generator.epoch(self.config, epoch, n, seed)


#: The benchmarks, by name. ``cluttered-digits`` is the published one (48 px, 36 tokens at patch 8);
#: ``cluttered-digits-hard`` leaves maps room below a box oracle: 96 px (144 tokens at patch 8), six
#: distractors of 12-20 px against 36-44 px targets, a photo background twice as bright. (A first
#: setting with eight 16-26 px distractors against 30-38 px targets was not learnable: the largest
#: digit was too close in size to the others, and a softmax ViT stayed at chance for 5 epochs.) Its
#: normalisation was measured on 20,000 training images (seed 0) and is re-measured in tests/data.
#: ``cued-digits-p10`` and ``cued-digits-p100`` (:mod:`~infsa_viz.data.cued`): scenes of 0-3 distractors
#: and, on 80 % of training images, a cue glyph that encodes the label with probability 0.1 (independent
#: of it: useless) or 1.0 (a shortcut); one shared test split shows the cue on every image, agreeing
#: with the label on about half (``cued-digits`` names it for evaluation). One normalisation for all,
#: measured on 20,000 training images of p10.
_CUED_TEST = CuedDigitsConfig(cue_agreement=0.5, cue_presence=1.0)
_CUED_NORMALISATION = Preprocessing(mean=(0.1677,), std=(0.2113,))
_CUED = GENERATORS["generate_cued"]
#: The generated data sources, by name: filled by :func:`register_benchmark`. The CLI's ``--data``, the
#: evaluation, the training, the scripts and the app read it.
BENCHMARKS: dict[str, Benchmark] = {}
_SHIPPED = (
    Benchmark("cluttered-digits", ClutteredDigitsConfig(), TEST_SEED, CLUTTERED_DIGITS,
              "48 px canvas, target 18-22 px, 2 distractors 9-12 px, faint photo background"),
    Benchmark("cluttered-digits-hard",
              ClutteredDigitsConfig(canvas_size=96, target_size=(36, 44), num_distractors=6,
                                    distractor_size=(12, 20), background_intensity=0.5, mask_threshold=127),
              20_260_303, Preprocessing(mean=(0.2847,), std=(0.2328,)),
              "96 px canvas, target 36-44 px, 6 distractors 12-20 px, photo background at half intensity"),
    Benchmark("cued-digits", _CUED_TEST, 20_260_305, _CUED_NORMALISATION,
              "the cued benchmarks' shared test split (48 px, 0-3 distractors, a class cue on every image agreeing "
              "with the label with p = 0.5); models are trained on cued-digits-p10 or -p100", generator=_CUED),
    *(Benchmark(f"cued-digits-p{round(100 * p)}", CuedDigitsConfig(cue_agreement=p, cue_presence=0.8),
                20_260_305, _CUED_NORMALISATION,
                f"48 px, 0-3 distractors, a class cue on 80 % of training images agreeing with the label with "
                f"p = {p}; test: cue on every image, p = 0.5", test_config=_CUED_TEST, generator=_CUED)
      for p in (0.1, 1.0)),
)
DEFAULT_BENCHMARK = "cluttered-digits"


def register_benchmark(benchmark: Benchmark) -> Benchmark:
    """Add ``benchmark`` to :data:`BENCHMARKS` (a new kind brings its own :class:`Generator`): the CLI's
    ``--data``, ``evaluate``, ``train`` and the app offer it with no other edit.

    Raises:
        ValueError: a name already registered, or a benchmark without a generator or classes.
    """
    if not isinstance(benchmark, Benchmark):
        raise TypeError(f"benchmark has type {type(benchmark).__name__}; expected a Benchmark")
    if benchmark.name in BENCHMARKS:
        raise ValueError(f"benchmark {benchmark.name!r} is registered twice")
    if not isinstance(benchmark.generator, Generator) or not benchmark.classes:
        raise ValueError(f"benchmark {benchmark.name!r} needs a Generator and at least one class name")
    BENCHMARKS[benchmark.name] = benchmark
    return benchmark


for _benchmark in _SHIPPED:
    register_benchmark(_benchmark)


def check_benchmark(name: str) -> Benchmark:
    """The :class:`Benchmark` called ``name`` (``ValueError`` listing the known names otherwise)."""
    if not isinstance(name, str) or name not in BENCHMARKS:
        raise ValueError(f"benchmark={name!r} is invalid; expected one of {list(BENCHMARKS)}")
    return BENCHMARKS[name]


@dataclass(frozen=True, eq=False)
class LabelledImages:
    """Images with labels and boxes, in source pixels.

    Attributes:
        images: ``n`` uint8 images ``(H, W)`` or ``(H, W, 3)`` (RGB), or one uint8 batch array.
        labels: ``(n,) int64`` class per image.
        boxes: ``n`` arrays ``(K_i, 4)``: target boxes ``(x0, y0, x1, y1)``, x1/y1 exclusive
            (``K_i = 0`` when an image has none).
        negative_boxes: ``n`` arrays of boxes that are not the target (e.g. distractor digits),
            or ``None``.
        names: ``n`` names, e.g. ``"test:17"`` or a file path.
        description: JSON-able record of where the images come from.
        negative_labels: ``n`` arrays ``(K_i,)``: the class of each negative box (e.g. each
            distractor digit's class), or ``None`` where unknown. Needs ``negative_boxes``.
        scenes: ``n`` :class:`~infsa_viz.data.scenes.Scene` objects (each image as named objects
            with pixel masks, re-renderable without any of them), or ``None`` (images that are
            not generated scenes: files, uploads).
    """

    images: np.ndarray | Sequence[np.ndarray]
    labels: np.ndarray
    boxes: Sequence[np.ndarray]
    negative_boxes: Sequence[np.ndarray] | None = None
    names: Sequence[str] = ()
    description: dict[str, Any] = field(default_factory=dict)
    negative_labels: Sequence[np.ndarray] | None = None
    scenes: Sequence[Scene] | None = None

    def __post_init__(self) -> None:
        n = len(self.labels)
        lengths = {"images": len(self.images), "boxes": len(self.boxes)}
        if self.negative_boxes is not None:
            lengths["negative_boxes"] = len(self.negative_boxes)
        if self.negative_labels is not None:
            if self.negative_boxes is None:
                raise ValueError("negative_labels is given without negative_boxes; expected both or neither")
            lengths["negative_labels"] = len(self.negative_labels)
            wrong = [i for i, (b, c) in enumerate(zip(self.negative_boxes, self.negative_labels, strict=False))
                     if len(np.asarray(b).reshape(-1, 4)) != len(c)]
            if wrong:
                raise ValueError(f"negative_labels[{wrong[0]}] has {len(self.negative_labels[wrong[0]])} classes for "
                                 f"{len(np.asarray(self.negative_boxes[wrong[0]]).reshape(-1, 4))} negative boxes; "
                                 "expected one class per box")
        if self.names:
            lengths["names"] = len(self.names)
        if self.scenes is not None:
            lengths["scenes"] = len(self.scenes)
        bad = {k: v for k, v in lengths.items() if v != n}
        if bad:
            raise ValueError(f"labels has {n} entries but {bad}; expected one entry per image")

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, indices: Sequence[int]) -> "LabelledImages":
        """The images at ``indices`` (in that order), with their labels, boxes and names."""
        picked = [int(i) for i in indices]
        for i in picked:
            if not 0 <= i < len(self):
                raise ValueError(f"index {i} is out of range for {len(self)} images")
        images = self.images[picked] if isinstance(self.images, np.ndarray) else [self.images[i] for i in picked]
        return LabelledImages(
            images=images,
            labels=self.labels[picked],
            boxes=[self.boxes[i] for i in picked],
            negative_boxes=None if self.negative_boxes is None else [self.negative_boxes[i] for i in picked],
            names=[self.names[i] for i in picked] if self.names else (),
            description={**self.description, "indices": picked if len(picked) <= 16 else
                         f"{len(picked)} indices from {picked[0]} to {picked[-1]}"},
            negative_labels=None if self.negative_labels is None else [self.negative_labels[i] for i in picked],
            scenes=None if self.scenes is None else [self.scenes[i] for i in picked],
        )


@functools.lru_cache(maxsize=4)
def _full_test_split(benchmark: str) -> LabelledImages:
    spec = BENCHMARKS[benchmark]
    config, seed, generator = spec.evaluation_config, spec.test_seed, spec.generator
    images, labels, scenes = generator.test(config, TEST_SIZE, seed)
    images, labels, scenes = np.asarray(images), np.asarray(labels, dtype=np.int64), list(scenes)
    others = [np.flatnonzero(scene.present[1:-1]) + 1 for scene in scenes]  # present non-target parts
    negative_boxes = [scene.boxes[k] for scene, k in zip(scenes, others, strict=True)]
    negative_labels = [scene.labels[k] for scene, k in zip(scenes, others, strict=True)]
    for array in (images, labels, *negative_boxes, *negative_labels):
        array.setflags(write=False)
    return LabelledImages(
        images=images,
        labels=labels,
        boxes=[scene.boxes[:1] for scene in scenes],
        negative_boxes=negative_boxes,
        negative_labels=negative_labels,
        names=[f"test:{i}" for i in range(TEST_SIZE)],
        scenes=tuple(scenes),
        description={
            "name": benchmark,
            "split": "test",
            "seed": seed,
            "size": TEST_SIZE,
            "settings": config.to_dict(),
            "settings_hash": config.settings_hash(),
            "images": f"{generator.name}(split='test', seed={seed}): image i depends only on (split, seed, i)",
            "boxes": generator.boxes,
            "negative_labels": generator.negative_labels,
        },
    )


def test_split(n: int | None = None, *, benchmark: str = DEFAULT_BENCHMARK) -> LabelledImages:
    """The cluttered-digits test split, or its first ``n`` images (read-only arrays, cached).

    Args:
        n: how many images, from image 0 (default all :data:`TEST_SIZE`).
        benchmark: a key of :data:`BENCHMARKS` (default the published ``"cluttered-digits"``).

    Raises:
        ValueError: ``n`` outside ``[1, TEST_SIZE]`` or an unknown ``benchmark``.

    Example:
        >>> test = test_split(100)
        >>> test.images.shape, test.names[7]
        ((100, 48, 48), 'test:7')
    """
    full = _full_test_split(check_benchmark(benchmark).name)
    if n is None:
        return full
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= TEST_SIZE:
        raise ValueError(f"n={n!r} is invalid; the test split holds {TEST_SIZE} images, expected 1..{TEST_SIZE}")
    part = full.subset(range(int(n)))
    return LabelledImages(part.images, part.labels, part.boxes, part.negative_boxes, part.names,
                          {**full.description, "n_images": int(n)}, part.negative_labels, part.scenes)


test_split.__test__ = False  # type: ignore[attr-defined]  # a data function, not a pytest test
