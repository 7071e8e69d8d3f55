"""One data source for both kinds: a registered benchmark or a folder, behind one small interface.

A *data spec* is what ``--data`` and the app's image sets name: a registered benchmark
(:data:`~infsa_viz.data.splits.BENCHMARKS`: generated scenes) or ``folder:PATH`` (a folder in a
registered layout, :data:`~infsa_viz.data.layouts.LAYOUTS`). :func:`data_source` resolves a spec to one
:class:`DataSource` that declares what the source offers (classes, preprocessing, splits, objects,
interventions) and opens its images, so the benchmark-or-folder branch is written here once; the CLI,
the evaluation, the scripts and the app read these declarations (the training reads them in
:func:`~infsa_viz.train.data.training_data`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..preprocess import Preprocessing
from .layouts import FOLDER_PREFIX, LAYOUTS, ImageFolder, find_layout, folder_root
from .splits import BENCHMARKS, TEST_SIZE, Benchmark, LabelledImages, test_split

__all__ = ["INTERVENTIONS", "OBJECTS", "DataSource", "data_source", "data_specs_help"]

#: What a source's images carry beyond their label: ``"scenes"`` (named objects with pixel masks,
#: re-renderable without any of them: :class:`~infsa_viz.data.scenes.Scene`), ``"boxes"`` (target boxes
#: only), or ``None`` (labels only).
OBJECTS = ("scenes", "boxes")
#: The interventions an image can take: ``"objects"`` (any set of a scene's objects removed or swapped,
#: :meth:`~infsa_viz.data.scenes.Scene.intervene`) and ``"occlude"`` (a box filled; any image).
INTERVENTIONS = ("objects", "occlude")
Classes = Sequence[str] | Mapping[str, int]


@dataclass(frozen=True)
class DataSource:
    """A resolved data spec: what it offers, and its images.

    Attributes:
        spec: the data spec it was resolved from (``"cluttered-digits"``, ``"folder:/data/voc"``).
        name: the benchmark's name, or the folder's layout (``"voc"``).
        description: one line for people.
        preprocessing: the input normalisation a model trained on it stores, or ``None`` when the
            model's own preprocessing applies (folders).
        splits: the splits it has: ``"test"`` (images to explain and score), ``"train"`` (it can train
            a model: :func:`~infsa_viz.train.data.training_data`, ``infsa-viz train --data``).
        objects: ``"scenes"``, ``"boxes"`` or ``None`` (:data:`OBJECTS`).
        interventions: what its images can be changed by (:data:`INTERVENTIONS`).
        model_labels: its images are labelled by the model's class names (a folder of class names),
            not by classes of its own (a benchmark, whose :attr:`classes` are fixed).
        root: the folder it reads, or ``None`` (generated images).
        size: how many images its test split holds, or ``None`` (a folder: as many as it has).
    """

    spec: str
    name: str
    description: str
    preprocessing: Preprocessing | None
    splits: tuple[str, ...]
    objects: Literal["scenes", "boxes"] | None
    interventions: tuple[str, ...]
    model_labels: bool
    root: Path | None
    size: int | None
    _open: Callable[..., ImageFolder] = field(repr=False, compare=False)

    def open(self, *, classes: Classes | None = None, boxes_dir: str | os.PathLike[str] | None = None,
             num_classes: int | None = None) -> ImageFolder:
        """Its images as an :class:`~infsa_viz.data.layouts.ImageFolder` (``classes``, ``labelled(n)``).

        Args:
            classes: the model's class names in output order (or ``{name: index}``); folders only.
            boxes_dir: Pascal-VOC boxes for class folders (the CLI's ``--boxes``). Default ``None``.
            num_classes: the model's class count; folders only. Default ``None``.

        Raises:
            ValueError: an option the source cannot use (a benchmark carries its own labels and boxes),
                or a folder that cannot be opened.
        """
        return self._open(classes=classes, boxes_dir=boxes_dir, num_classes=num_classes)

    @property
    def classes(self) -> tuple[str, ...]:
        """The name of each label, in label order (a folder's as it reads without a model's classes)."""
        return tuple(self.open().classes)

    def labelled(self, n: int | None = None, **options: Any) -> LabelledImages:
        """Its first ``n`` test images (default all), labelled; ``options`` as :meth:`open` takes them."""
        return self.open(**options).labelled(n)


class _Generated:
    """A benchmark's test split as an :class:`~infsa_viz.data.layouts.ImageFolder`."""

    def __init__(self, benchmark: Benchmark) -> None:
        self.benchmark = benchmark
        self.classes = benchmark.classes

    def labelled(self, n: int | None = None) -> LabelledImages:
        return test_split(n, benchmark=self.benchmark.name)


def _benchmark_source(benchmark: Benchmark) -> DataSource:
    def open_generated(*, classes: Classes | None = None, boxes_dir: Any = None,
                       num_classes: int | None = None) -> ImageFolder:
        for option, value in (("--boxes", boxes_dir), ("--classes", classes)):
            if value is not None:
                raise ValueError(f"{option} applies to folder data only; a generated benchmark carries exact boxes "
                                 "and labels")
        if num_classes is not None:
            raise ValueError(f"num_classes={num_classes} applies to folder data only; {benchmark.name} has "
                             f"{len(benchmark.classes)} classes of its own")
        return _Generated(benchmark)

    return DataSource(benchmark.name, benchmark.name, benchmark.description, benchmark.preprocessing,
                      ("train", "test"), "scenes", INTERVENTIONS, False, None, TEST_SIZE, open_generated)


def _folder_source(spec: str, root: Path) -> DataSource:
    layout = find_layout(root)

    def open_folder(*, classes: Classes | None = None, boxes_dir: Any = None,
                    num_classes: int | None = None) -> ImageFolder:
        return layout.open(root, classes=classes, boxes_dir=boxes_dir, num_classes=num_classes)

    return DataSource(spec, layout.name, layout.description, layout.preprocessing, layout.splits, layout.objects,
                      layout.interventions, True, root, None, open_folder)


def data_source(spec: str) -> DataSource:
    """The :class:`DataSource` a data spec names: a key of :data:`~infsa_viz.data.splits.BENCHMARKS`, or
    ``folder:PATH`` (its layout found by :func:`~infsa_viz.data.layouts.find_layout`).

    Raises:
        ValueError: neither a registered benchmark nor ``folder:PATH``; a folder no layout recognises.

    Example:
        >>> source = data_source("cluttered-digits")
        >>> source.classes[3], source.objects, source.labelled(2).names
        ('digit 3', 'scenes', ['test:0', 'test:1'])
    """
    if not isinstance(spec, str):
        raise TypeError(f"spec has type {type(spec).__name__}; expected a str")
    if spec in BENCHMARKS:
        return _benchmark_source(BENCHMARKS[spec])
    root = folder_root(spec)
    if root is None:
        raise ValueError(f"--data={spec!r} must be one of {list(BENCHMARKS)} or '{FOLDER_PREFIX}PATH'")
    return _folder_source(spec, root)


def data_specs_help() -> str:
    """What ``--data`` accepts, in one paragraph: the registered benchmarks and folder layouts."""
    from .splits import DEFAULT_BENCHMARK

    layouts = sorted(LAYOUTS.values(), key=lambda layout: layout.fallback)
    return (f"a registered benchmark's test split ({', '.join(BENCHMARKS)}; default {DEFAULT_BENCHMARK}) or a "
            f"folder in a registered layout: " + "; ".join(layout.description for layout in layouts))
