"""Counting a model's forward passes, and the clean ones (the tests of the forward record)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch
from torch import nn


class Forwards:
    """Counts a model's forward passes, and the clean ones: no gradient, an input equal to one of ``clean``."""

    def __init__(self, clean: list[torch.Tensor]) -> None:
        self.clean_inputs = clean
        self.total = 0
        self.clean = 0

    def __call__(self, _module: nn.Module, args: tuple) -> None:
        self.total += 1
        x = args[0]
        if not torch.is_grad_enabled() and any(x.shape == c.shape and torch.equal(x, c) for c in self.clean_inputs):
            self.clean += 1


@contextmanager
def counting(model: nn.Module, clean: list[torch.Tensor] | None = None) -> Iterator[Forwards]:
    counter = Forwards(clean or [])
    handle = model.register_forward_pre_hook(counter)
    try:
        yield counter
    finally:
        handle.remove()
