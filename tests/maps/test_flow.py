"""Attention flow against a brute-force minimum cut; TAM against its steps written out."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from infsa_viz.maps import attribute_images
from infsa_viz.maps.flow import attention_flow, residual_attention


def test_one_layer_flow_is_the_edge_capacity():
    A = np.random.default_rng(0).random((4, 4))
    assert np.allclose(attention_flow([A], sink=0), A[0], atol=1e-8)


def _min_cut(layers, source, sink):
    """Brute force over every partition of the layered graph's nodes (max-flow = min-cut)."""
    N, L = layers[0].shape[0], len(layers)
    nodes = [(l, i) for l in range(L + 1) for i in range(N) if (l, i) not in (source, sink)]
    best = np.inf
    for side in itertools.product([0, 1], repeat=len(nodes)):
        S = {source} | {n for n, s in zip(nodes, side) if s}
        cut = sum(layers[l][i, j] for l in range(L) for i in range(N) for j in range(N)
                  if (l, j) in S and (l + 1, i) not in S)
        best = min(best, cut)
    return best


def test_flow_equals_the_brute_force_min_cut():
    rng = np.random.default_rng(1)
    layers = [rng.random((3, 3)) * (rng.random((3, 3)) > 0.3) for _ in range(2)]
    flows = attention_flow(layers, sink=0)
    expected = [_min_cut(layers, (0, j), (2, 0)) for j in range(3)]
    assert np.allclose(flows, expected, atol=1e-8)


def test_attention_flow_map_reads_the_models_residual_attention(tiny_model):
    x = torch.randn(1, 1, 16, 16)
    from infsa_viz.model import capture_attention

    _, records = capture_attention(tiny_model, x)
    mats = [residual_attention(r.attention_matrix().mean(1).double())[0].numpy() for r in records]
    expected = attention_flow(mats)[1:]
    result = attribute_images(tiny_model, x, "attention_flow").maps
    assert np.allclose(result.reshape(-1).numpy(), expected, atol=1e-6)


def test_tam_matches_its_steps_written_out(tiny_model, naive_vit):
    x = torch.randn(2, 1, 16, 16)
    target = torch.tensor([2, 1])
    steps = 3
    _, mats = naive_vit(tiny_model, x)
    mean = [A.detach().mean(1).double() for A in mats]
    expected = torch.zeros(2, 16, dtype=torch.float64)
    for b in range(2):
        state = mean[-1][b, 0]
        for A in reversed(mean[:-1]):
            state = state + state @ A[b]
        total = torch.zeros_like(mats[-1][b], dtype=torch.float64)
        for alpha in np.linspace(0, 1, steps):
            logits, scaled = naive_vit(tiny_model, x[b:b + 1], scale=float(alpha))
            (g,) = torch.autograd.grad(logits[0, target[b]], [scaled[-1]])
            total += g[0].double()
        weight = (total / steps).clamp(min=0).mean(0)[0]
        expected[b] = (state * weight)[1:]
    result = attribute_images(tiny_model, x, "tam", target=target, steps=steps).maps
    assert_close(result.reshape(2, 16).double(), expected, atol=1e-6, rtol=1e-4)


def test_tam_checks_its_options(tiny_model):
    x = torch.randn(1, 1, 16, 16)
    for bad in ({"steps": 0}, {"start_layer": 5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            attribute_images(tiny_model, x, "tam", **bad)
