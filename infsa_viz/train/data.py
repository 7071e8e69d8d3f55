"""Data sources for :func:`infsa_viz.train.loop.train`, already in the model's input format.

A :class:`TrainData` holds one epoch's images as a pure function of ``(epoch, n, seed)`` and the
held-out test split; :func:`benchmark_data` and :func:`folder_data` build one (a
:class:`~infsa_viz.data.sources.DataSource`'s ``training`` picks which). Importable
from :mod:`infsa_viz.train` as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch
from torch import Tensor

from ..model.config import ViTConfig
from ..preprocess import Preprocessing, preprocess

if TYPE_CHECKING:
    from ..data.sources import DataSource

__all__ = ["TrainData", "benchmark_data", "cluttered_digits_data", "folder_data", "training_data"]


@dataclass
class TrainData:
    """A data source for :func:`train`, already in the model's input format.

    Attributes:
        epoch: ``epoch(index, n, seed) -> (images (n, C, S, S), labels (n,))``, the training
            images of one epoch (a pure function of its arguments).
        test: ``(images, labels)`` of the held-out split.
        description: JSON-able description stored in the card (name, settings, hash).
        in_chans, img_size, num_classes: what the model must accept.
        preprocessing: how the images were made model input; stored in the model's config so
            every entry point feeds the trained model the same way.
        epoch_size: the number of training images when they are a fixed set (a folder), or ``None``
            (fresh images every epoch, as many as the recipe asks).
    """

    epoch: Callable[[int, int, int], tuple[Tensor, Tensor]]
    test: tuple[Tensor, Tensor]
    description: dict[str, Any]
    in_chans: int
    img_size: int
    num_classes: int
    preprocessing: Preprocessing
    epoch_size: int | None = None


def benchmark_data(test_size: int, *, benchmark: str = "cluttered-digits",
                   model_input: ViTConfig | None = None) -> TrainData:
    """A generated benchmark (:data:`~infsa_viz.data.BENCHMARKS`), of any registered kind: fresh images every
    epoch, the benchmark's fixed test split.

    Args:
        test_size: images in the held-out split.
        benchmark: a key of :data:`~infsa_viz.data.BENCHMARKS`.
        model_input: the config of a model to fine-tune: images become its input (size,
            channels, preprocessing) through :func:`~infsa_viz.preprocess.prepare`. Default: the
            benchmark's own input (the side and channels of its test images) with its normalisation.
    """
    from ..data import check_benchmark, test_split

    spec = check_benchmark(benchmark)
    config = spec.config
    test = test_split(test_size, benchmark=benchmark)
    if model_input is None:
        side, channels = test.images[0].shape[0], 1 if test.images[0].ndim == 2 else test.images[0].shape[2]
        model_input = ViTConfig(img_size=side, in_chans=channels, preprocessing=spec.preprocessing)

    def epoch(index: int, n: int, seed: int) -> tuple[Tensor, Tensor]:
        images, labels = spec.training_images(index, n=n, seed=seed)
        return preprocess(model_input, images), torch.as_tensor(labels, dtype=torch.int64)

    return TrainData(
        epoch=epoch,
        test=(preprocess(model_input, test.images), torch.as_tensor(test.labels, dtype=torch.int64)),
        description={
            "name": benchmark,
            "settings": config.to_dict(),
            "settings_hash": config.settings_hash(),
            "train": f"fresh images each epoch from {spec.generator.drawn_from or spec.generator.name}; image i of "
                     "epoch e depends only on (seed, e, i)",
            "test": f"test_split({test_size}): the first {test_size} images of the test split, seed "
                    f"{test.description['seed']}",
        },
        in_chans=model_input.in_chans,
        img_size=model_input.img_size,
        num_classes=len(spec.classes),
        preprocessing=model_input.preprocessing,
    )


#: The former name of :func:`benchmark_data` (saved scripts call it).
cluttered_digits_data = benchmark_data


def folder_data(root: Path, *, image_size: int, channels: int = 3, model_input: ViTConfig | None = None) -> TrainData:
    """An ImageNet-style folder ``root`` with ``train/`` and ``test/`` class sub-folders.

    Images are resized to ``image_size`` (stretched, ``resample="auto"``) and normalised by the
    per-channel mean and standard deviation of ``pixel / 255`` measured on the resized training
    images; that preprocessing is stored with the model. With ``model_input`` (the config of a
    model to fine-tune) the images become that model's input instead, its own preprocessing
    unchanged (``image_size`` and ``channels`` are then the model's).
    """
    from ..data import FolderDataset

    splits = {}
    for split in ("train", "test"):
        if not (root / split).is_dir():
            raise ValueError(f"--data folder:{root} must contain a {split}/ folder of class sub-folders")
        splits[split] = FolderDataset(root / split).labelled()  # decode each image once
    if model_input is None:
        raw = ViTConfig(img_size=image_size, in_chans=channels, preprocessing=Preprocessing())
        pixels = preprocess(raw, splits["train"].images)  # (n, C, S, S) = pixel / 255
        mean = pixels.mean(dim=(0, 2, 3)).double()
        std = pixels.std(dim=(0, 2, 3)).double().clamp_min(1e-3)  # a constant channel is not divided by 0
        preprocessing = Preprocessing(mean=tuple(round(float(m), 6) for m in mean),
                                      std=tuple(round(float(s), 6) for s in std))
        model_input = raw.replace(preprocessing=preprocessing)
    image_size, channels, preprocessing = model_input.img_size, model_input.in_chans, model_input.preprocessing
    train_images = preprocess(model_input, splits["train"].images)
    train_labels = torch.as_tensor(splits["train"].labels, dtype=torch.int64)
    test_images = preprocess(model_input, splits["test"].images)
    classes = list(splits["train"].description["classes"])

    def epoch(index: int, n: int, seed: int) -> tuple[Tensor, Tensor]:
        return train_images, train_labels

    return TrainData(
        epoch=epoch,
        test=(test_images, torch.as_tensor(splits["test"].labels, dtype=torch.int64)),
        description={"name": "folder", "root": str(root), "classes": classes, "image_size": image_size,
                     "train_images": len(train_labels), "test_images": len(test_images),
                     "preprocessing": preprocessing.to_dict()},
        in_chans=channels,
        img_size=image_size,
        num_classes=max(len(classes), int(train_labels.max()) + 1),
        preprocessing=preprocessing,
        epoch_size=len(train_labels),
    )


def training_data(source: "DataSource", test_size: int, *, model_input: ViTConfig | None = None,
                  image_size: int | None = None, channels: int | None = None) -> TrainData:
    """What ``infsa-viz train --data`` reads from a resolved data source (:func:`~infsa_viz.data.data_source`):
    a generated benchmark's fresh epochs (:func:`benchmark_data`) or a folder's ``train/`` and ``test/``
    (:func:`folder_data`).

    Args:
        source: the data source; it must declare a ``"train"`` split.
        test_size: images of a generated benchmark's held-out split (a folder holds out its ``test/``).
        model_input: the config of a model to fine-tune (its input format), or ``None``.
        image_size, channels: a new model's input on folder data (default 224 and 3); a generated
            benchmark fixes its own.

    Raises:
        ValueError: no ``"train"`` split, or an option the source cannot use.
    """
    if "train" not in source.splits:
        raise ValueError(f"--data={source.spec!r} has no training split (its splits: {list(source.splits)})")
    if source.root is not None:
        return folder_data(source.root, image_size=image_size or 224, channels=channels or 3, model_input=model_input)
    for option, value in (("--image-size", image_size), ("--channels", channels)):
        if value is not None:
            raise ValueError(f"{option}={value} applies to folder data only; {source.name} fixes its own images")
    return benchmark_data(test_size, benchmark=source.name, model_input=model_input)
