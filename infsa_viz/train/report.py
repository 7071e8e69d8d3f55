"""Scoring trained models: :func:`predict`, :func:`accuracy`, the model card and the accuracy report.

Importable from :mod:`infsa_viz.train` as well.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ..io import read_json
from ..progress import progress
from .data import benchmark_data

__all__ = ["CARD_FILE", "accuracy", "finished_card", "load_card", "predict", "training_report"]

CARD_FILE = "card.json"


@torch.no_grad()
def predict(model: nn.Module, images: Tensor, *, batch_size: int = 256, desc: str | None = None) -> Tensor:
    """Class probabilities ``(B, classes)`` in evaluation mode, batched."""
    was_training = model.training
    model.eval()
    out = []
    for start in progress(range(0, len(images), batch_size), desc=desc, unit="batch"):
        out.append(torch.softmax(model(images[start : start + batch_size]).float(), dim=-1))
    model.train(was_training)
    return torch.cat(out)


def accuracy(model: nn.Module, images: Tensor, labels: Tensor, *, batch_size: int = 256) -> float:
    """Top-1 accuracy in [0, 1] as a Python float."""
    return float((predict(model, images, batch_size=batch_size).argmax(-1) == labels).float().mean())


def load_card(directory: str | Path) -> dict[str, Any]:
    """The ``card.json`` of a trained model directory (``ValueError`` if missing)."""
    return read_json(Path(directory) / CARD_FILE)


#: What a finished run's card must hold: field → its JSON types.
_FINISHED = {"variant": (str,), "seed": (int,), "test_accuracy": (int, float), "train_seconds": (int, float),
             "weights_sha256": (str,)}


def finished_card(directory: str | Path) -> dict[str, Any]:
    """The ``card.json`` of a finished training run, checked: a JSON object holding every field a
    finished run writes (variant, seed, test accuracy in [0, 1], training time, the weights' SHA-256).

    Raises:
        ValueError: the card is missing, not JSON, or lacks a field or holds a wrong one (named).
    """
    path = Path(directory) / CARD_FILE
    card = read_json(path)
    if not isinstance(card, dict):
        raise ValueError(f"{path}: expected a JSON object (a finished run's card), got {type(card).__name__}")
    for name, types in _FINISHED.items():
        value = card.get(name)
        if isinstance(value, bool) or not isinstance(value, types):
            raise ValueError(f"{path}: {name}={value!r} is invalid; a finished run's card holds "
                             f"{' or '.join(t.__name__ for t in types)} {name}")
    if not 0 <= card["test_accuracy"] <= 1 or card["train_seconds"] < 0 or len(card["weights_sha256"]) != 64:
        raise ValueError(f"{path}: test_accuracy={card['test_accuracy']!r}, train_seconds={card['train_seconds']!r} "
                         f"or weights_sha256 is out of range; not a finished run's card")
    return card


def training_report(model_dirs: list[str | Path], *, batch_size: int = 256) -> dict[str, Any]:
    """Re-evaluate trained models on their test split and collect their cards' figures.

    Each model is loaded from disk and scored on the cluttered-digits test split it was trained
    for (the card's ``test_size``), so the report checks the card rather than copying it.
    """
    from ..data import BENCHMARKS
    from ..formats import load_model

    rows = []
    test_cache: dict[tuple[str, int], tuple[Tensor, Tensor]] = {}
    for directory in model_dirs:
        model = load_model(directory)  # first: names a missing or damaged model before its card
        card = load_card(directory)
        benchmark = card.get("data", {}).get("name")
        if benchmark not in BENCHMARKS:
            raise ValueError(f"{directory}: training report supports registered benchmarks only "
                             f"({list(BENCHMARKS)}), not {benchmark!r}")
        size = int(card["test_size"])
        if (benchmark, size) not in test_cache:
            test_cache[benchmark, size] = benchmark_data(size, benchmark=benchmark).test
        images, labels = test_cache[benchmark, size]
        rows.append({
            "model": str(directory),
            "variant": card["variant"],
            "parameters": card["parameters"],
            "epochs": card["epochs"],
            "train_seconds": card["train_seconds"],
            "train_cpu_seconds": card.get("train_cpu_seconds"),
            "threads": card["threads"],
            "test_size": size,
            "test_accuracy": round(accuracy(model, images, labels, batch_size=batch_size), 5),
            "card_test_accuracy": card["test_accuracy"],
            "rho_init": card["rho_init"],
            "rho_final": model.rho_values(),
            "command": card.get("command"),
        })
    first = load_card(model_dirs[0]) if model_dirs else {}
    return {
        "protocol": {
            "metric": "top-1 accuracy on the cluttered-digits test split (largest digit's class)",
            "test_split": first.get("data", {}).get("test"),
            "data_settings_hash": first.get("data", {}).get("settings_hash"),
        },
        "results": rows,
    }
