"""Attention rollout by hand (Abnar & Zuidema 2020): residual, head fusion, row renormalisation."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from infsa_viz.maps import fuse_heads, rollout

F64 = torch.float64


def _4d(rows: list[list[float]]) -> torch.Tensor:
    return torch.tensor(rows, dtype=F64).view(1, 1, len(rows), len(rows))


def test_rollout_of_two_layers_by_hand():
    A1 = _4d([[1.0, 0.0], [0.5, 0.5]])
    A2 = _4d([[0.0, 1.0], [1.0, 0.0]])
    # Residual: A1' = [[1, 0], [.25, .75]], A2' = [[.5, .5], [.5, .5]]; R = A2' A1'.
    assert_close(rollout([A1, A2]), torch.tensor([[[0.625, 0.375], [0.625, 0.375]]], dtype=F64))
    # Without residual the rows are already stochastic: R = A2 A1.
    assert_close(rollout([A1, A2], add_residual=False), torch.tensor([[[0.5, 0.5], [1.0, 0.0]]], dtype=F64))


def test_rollout_discard_ratio_zeroes_the_smallest_entries_but_the_first():
    A = _4d([[0.1, 0.6, 0.3], [0.2, 0.2, 0.6], [0.5, 0.4, 0.1]])
    # int(9 · 0.34) = 3 smallest: 0.1 at (0, 0) (kept, vit-explain's rule), 0.1 at (2, 2), then the
    # first 0.2 by position, (1, 0); rows renormalised, no residual.
    kept = torch.tensor([[[0.1, 0.6, 0.3], [0.0, 0.2, 0.6], [0.5, 0.4, 0.0]]], dtype=F64)
    assert_close(rollout([A], add_residual=False, discard_ratio=0.34), kept / kept.sum(-1, keepdim=True))
    assert_close(rollout([A], discard_ratio=0.0), rollout([A]))
    with pytest.raises(ValueError, match="discard_ratio"):
        rollout([A], discard_ratio=1.0)


def test_rollout_fuses_heads_and_renormalises_rows():
    head0, head1 = [[2.0, 0.0], [0.0, 0.0]], [[0.0, 4.0], [0.0, 0.0]]
    heads = torch.tensor([[head0, head1]], dtype=F64)  # (B, H, N, N) = (1, 2, 2, 2)
    assert_close(fuse_heads(heads, "max"), torch.tensor([[[2.0, 4.0], [0.0, 0.0]]], dtype=F64))
    # Mean [[1, 2], [0, 0]] → rows renormalised; the all-zero row stays zero.
    assert_close(rollout([heads], add_residual=False), torch.tensor([[[1 / 3, 2 / 3], [0.0, 0.0]]], dtype=F64))
    with pytest.raises(ValueError, match="head="):
        rollout([heads], head_fusion="median")
