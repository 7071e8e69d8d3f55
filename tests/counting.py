"""Counting a model's forward passes, and the clean ones (the tests of the forward record)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch
from torch import nn


class Forwards:
    """Counts a model's forward passes, and the clean ones: no gradient, and every image of the input one
    of the images of ``clean`` (the whole batch, or any subset of its images: a metric that runs the
    model again on some of the chunk's clean images counts)."""

    def __init__(self, clean: list[torch.Tensor]) -> None:
        self.clean_inputs = clean
        self._rows = {row.detach().cpu().numpy().tobytes() for c in clean for row in c}
        self.total = 0
        self.clean = 0

    def __call__(self, _module: nn.Module, args: tuple) -> None:
        self.total += 1
        x = args[0]
        if torch.is_grad_enabled() or not isinstance(x, torch.Tensor) or not len(x) or not self._rows:
            return
        if all(row.detach().cpu().numpy().tobytes() in self._rows for row in x):
            self.clean += 1


@contextmanager
def counting(model: nn.Module, clean: list[torch.Tensor] | None = None) -> Iterator[Forwards]:
    """Count the forwards of ``model`` itself (copies of it, e.g. randomised ones, are not counted)."""
    counter = Forwards(clean or [])
    handle = model.register_forward_pre_hook(lambda module, args: counter(module, args) if module is model else None)
    try:
        yield counter
    finally:
        handle.remove()
