"""The naive dense formulas of the side-by-side give our layers' outputs."""

from __future__ import annotations

import pytest
import torch

from benchmarks.naive import NaiveAttention, naive_matrix
from infsa_viz.model import VARIANTS, build_attention


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
def test_naive_formulas_equal_our_layers(variant, dtype, tol):
    torch.manual_seed(0)
    layer = build_attention(variant, 32, 4, impl="blockwise", block_size=7, fused=True).to(dtype).eval()
    x = torch.randn(2, 37, 32, dtype=dtype)  # 37 tokens: not a multiple of the tile
    with torch.no_grad():
        ours, naive = layer(x), NaiveAttention(layer)(x)
    assert (ours - naive).abs().max() <= tol * ours.abs().max()


def test_naive_linear_matrix_is_rank_one_with_rows_summing_to_one():
    torch.manual_seed(1)
    q, k = torch.randn(2, 3, 9, 4, dtype=torch.float64), torch.randn(2, 3, 9, 4, dtype=torch.float64)
    a = naive_matrix("linear_infsa", q, k, 0.0)
    assert torch.linalg.matrix_rank(a[0, 0]) == 1 and torch.allclose(a.sum(-1), torch.ones(2, 3, 9, dtype=a.dtype))


def test_naive_refuses_an_unknown_variant():
    with pytest.raises(ValueError, match="variant='other'"):
        naive_matrix("other", torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 2, 2), 0.0)
