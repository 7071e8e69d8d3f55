"""Helpers shared by the patch-removal metrics (MoRF/LeRF, deletion/insertion, positive/negative
perturbation, ROAD, the greedy deletion oracle): one home for their input checks, the device rule
and the trapezoid rule, public inside :mod:`infsa_viz.metrics`."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from .._checks import check_int
from ._checks import check_images, check_maps

__all__ = ["check_removal_inputs", "check_targets", "resolve_device", "trapezoid"]


def trapezoid(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Trapezoid rule along the last axis: ``(B, K + 1), (K + 1,) -> (B,)``."""
    return ((y[:, 1:] + y[:, :-1]) / 2.0 * np.diff(x)).sum(axis=1)


def check_targets(targets: Any, batch: int) -> np.ndarray:
    """``(B,) int64`` class labels >= 0, or ``ValueError`` naming ``targets``."""
    if isinstance(targets, Tensor):
        targets = targets.detach().cpu().numpy()
    array = np.asarray(targets)
    if array.shape != (batch,) or not np.issubdtype(array.dtype, np.integer) or array.dtype == bool:
        raise ValueError(
            f"targets has shape {array.shape} and dtype {array.dtype}; expected ({batch},) integer labels"
        )
    if array.min() < 0:
        raise ValueError(f"targets has label {int(array.min())}; expected labels >= 0")
    return array.astype(np.int64)


def resolve_device(model: nn.Module, images: Tensor, device: str | torch.device | None) -> torch.device:
    """The given device, else the model's (its first parameter or buffer), else the images'."""
    if device is not None:
        try:
            return torch.device(device)
        except (RuntimeError, TypeError):
            raise ValueError(f"device={device!r} is invalid; expected a torch device such as 'cpu'") from None
    for tensor in (*model.parameters(), *model.buffers()):
        return tensor.device
    return images.device




def check_removal_inputs(model: nn.Module, images: Any, maps: Any, targets: Any,
                         patch_size: int) -> tuple[Tensor, np.ndarray, np.ndarray]:
    """``(images, maps, targets)`` checked: ``(B, C, H, W)`` images, maps on the ``patch_size`` grid,
    ``(B,)`` labels, and a model in eval mode."""
    images = check_images(images)
    B, _, H, W = images.shape
    patch_size = check_int("patch_size", patch_size, minimum=1)
    values = check_maps(maps, batch=B)
    if values.shape[1:] != (H // patch_size, W // patch_size):
        raise ValueError(f"maps has grid {values.shape[1:]}; expected {(H // patch_size, W // patch_size)}")
    if model.training:
        raise ValueError("model is in training mode; expected eval mode (call model.eval() first)")
    return images, values, check_targets(targets, B)
