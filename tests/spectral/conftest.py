"""Spectral tests run on one torch thread: many tiny products, where thread hand-offs dominate."""

from __future__ import annotations

from typing import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread() -> Iterator[None]:
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
