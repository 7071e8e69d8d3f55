"""Training: the loop, the matched recipe, the data sources, the checkpoint and the report.

* :mod:`.loop`: :func:`train`, epoch-resumable matched training of the three variants.
* :mod:`.recipe`: :class:`TrainConfig`, the matched recipe.
* :mod:`.data`: :class:`TrainData`, :func:`benchmark_data`, :func:`folder_data`, :func:`training_data`.
* :mod:`.checkpoint`: the epoch checkpoint behind ``--resume``.
* :mod:`.report`: :func:`predict`, :func:`accuracy`, model cards and the accuracy report.
"""

from .checkpoint import CHECKPOINT_DIR, load_checkpoint, save_checkpoint
from .data import TrainData, benchmark_data, cluttered_digits_data, folder_data, training_data
from .loop import train
from .recipe import TrainConfig
from .report import CARD_FILE, accuracy, load_card, predict, training_report

__all__ = [
    "CARD_FILE",
    "CHECKPOINT_DIR",
    "TrainConfig",
    "TrainData",
    "accuracy",
    "benchmark_data",
    "cluttered_digits_data",
    "folder_data",
    "training_data",
    "load_card",
    "load_checkpoint",
    "predict",
    "save_checkpoint",
    "train",
    "training_report",
]
