"""The matched training recipe: :class:`TrainConfig` (architecture, schedule, seeds, data sizes).

Only ``model.attention`` differs between the shipped models. Importable from
:mod:`infsa_viz.train` as well.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .._checks import check_memory
from ..estimate import Workload, available_memory
from ..model.config import ViTConfig

__all__ = ["MAX_EPOCHS", "TrainConfig"]

#: The most epochs a recipe may ask for (each is a pass over ``images_per_epoch`` fresh images).
MAX_EPOCHS = 100_000


@dataclass(frozen=True)
class TrainConfig:
    """The matched recipe. Only ``model.attention`` differs between the shipped models.

    Args:
        model: the architecture (attention variant included).
        epochs: passes, each over ``images_per_epoch`` freshly generated images.
        images_per_epoch: training images per epoch.
        batch_size: images per optimiser step.
        lr: peak AdamW learning rate (linear warm-up over ``warmup_epochs``, then cosine to 0).
        weight_decay: AdamW decay on weight matrices (not on biases, norms, embeddings, ρ).
        warmup_epochs: warm-up length in epochs (may be fractional).
        seed: seeds the initial weights and the shuffling (and the data stream unless
            ``data_seed`` is set).
        test_size: images in the held-out test split.
        label_smoothing: cross-entropy label smoothing.
        data_seed: seeds the stream of training images; ``None`` (default) uses ``seed``. Training
            seeds of one variant with a fixed ``data_seed`` differ in initial weights and data
            order only (``scripts/train_seeds.py`` does that).
    """

    model: ViTConfig = field(default_factory=ViTConfig)
    epochs: int = 20
    images_per_epoch: int = 20_000
    batch_size: int = 128
    lr: float = 2e-3
    weight_decay: float = 0.05
    warmup_epochs: float = 1.0
    seed: int = 0
    test_size: int = 2_000
    label_smoothing: float = 0.0
    data_seed: int | None = None

    def __post_init__(self) -> None:
        for name in ("epochs", "images_per_epoch", "batch_size", "test_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer")
        if self.epochs > MAX_EPOCHS:
            raise ValueError(f"epochs={self.epochs:,} is invalid; expected an integer >= 1 and <= {MAX_EPOCHS:,}")
        model = self.model
        for name in ("images_per_epoch", "test_size"):  # held at once: uint8 pixels + float32 model input
            check_memory(name, getattr(self, name), bytes_each=5 * model.img_size**2 * model.in_chans,
                         what=f"{model.img_size}x{model.img_size}x{model.in_chans} images as uint8 and float32")
        step = Workload.for_config(model)  # what one more image adds to a training step: its kept activations
        per_image = step.with_batch(2).forward(grad=True) - step.forward(grad=True)
        check_memory("batch_size", self.batch_size, bytes_each=per_image,
                     what=f"one training step's activations at {step.tokens:,} tokens per image",
                     budget=available_memory())
        if not self.lr > 0:
            raise ValueError(f"lr={self.lr!r} must be positive")
        for name in ("seed", "data_seed"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name}={value!r} must be a non-negative integer")

    @property
    def stream_seed(self) -> int:
        """The seed of the training-image stream: ``data_seed``, or ``seed`` when that is ``None``."""
        return self.seed if self.data_seed is None else self.data_seed

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        data = dict(data)
        return cls(model=ViTConfig.from_dict(data.pop("model")), **data)
