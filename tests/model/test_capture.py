"""Attention capture: what each layer computed, dense matrices on request only."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from infsa_viz.model import VisionTransformer, capture_attention, infsa_affinity, linear_infsa_weights, record_attention


def test_one_record_per_layer_with_q_k_rho_and_grid(tiny_model, variant):
    with record_attention(tiny_model) as rec:
        tiny_model(torch.randn(2, 1, 16, 16))
    assert len(rec.layers) == 2
    for i, r in enumerate(rec.layers):
        assert r.layer == i and r.variant == variant
        assert r.q.shape == r.k.shape == (2, 2, 17, 8)
        assert r.grid == (4, 4) and r.num_prefix_tokens == 1
        assert (r.rho is None) == (variant == "softmax")
        assert not r.q.requires_grad


def test_recorded_matrices_reproduce_the_layer_output(variant, make_config):
    """attention_matrix() is what the layer applies: ρ·M·v then proj equals the attention output."""
    model = VisionTransformer(make_config(variant)).eval()
    attn = model.blocks[0].attn
    x = torch.randn(2, 17, 16)
    with record_attention(model) as rec:
        expected = attn(x)
    r = rec.records[0]
    qkv = attn.qkv(x).reshape(2, 17, 3, 2, 8).permute(2, 0, 3, 1, 4)
    v = qkv[2]
    rho = 1.0 if r.rho is None else r.rho.view(1, 2, 1, 1)
    out = rho * (r.attention_matrix() @ v)
    assert_close(attn.proj(out.transpose(1, 2).reshape(2, 17, 16)), expected, atol=1e-5, rtol=1e-4)


def test_linear_record_carries_what_the_operator_computed(make_config):
    model = VisionTransformer(make_config("linear_infsa")).eval()
    _, records = capture_attention(model, torch.randn(1, 1, 16, 16))
    r = records[1]
    alpha, q_bar, a = linear_infsa_weights(r.q, r.k)
    assert_close(r.linear[0], alpha)
    assert_close(r.linear[1], q_bar)
    assert_close(r.linear_estimate(), a)
    assert_close(r.infsa_matrix(), infsa_affinity(r.q, r.k))


def test_fused_softmax_is_recomputed_from_q_k(make_config):
    model = VisionTransformer(make_config("softmax")).eval()
    assert model.blocks[0].attn.fused
    _, records = capture_attention(model, torch.randn(1, 1, 16, 16))
    p = records[0].attention_matrix()
    assert_close(p.sum(-1), torch.ones(1, 2, 17))


def test_recorder_is_removed_after_the_block(tiny_model):
    with record_attention(tiny_model):
        pass
    assert all(block.attn.recorder is None for block in tiny_model.blocks)


def test_nothing_captured_and_no_attention_raise(make_config):
    model = VisionTransformer(make_config("softmax"))
    with record_attention(model) as rec:
        pass
    with pytest.raises(RuntimeError, match="no attention was captured"):
        rec.layers
    with pytest.raises(RuntimeError, match="no recordable attention"):
        with record_attention(nn.Linear(2, 2)):
            pass


def test_capture_at_large_n_stays_linear(make_config):
    """64k tokens through a Linear-InfSA model: records hold q, k only (O(N·D))."""
    model = VisionTransformer(make_config("linear_infsa", img_size=16, patch_size=1, depth=1)).eval()
    x = torch.randn(1, 1, 256, 256)  # 65,536 patch tokens
    _, records = capture_attention(model, x)
    r = records[0]
    assert r.grid == (256, 256) and r.num_tokens == 65_537
    assert r.linear_estimate().shape == (1, 2, 65_537)


def test_a_foreign_model_is_refused_with_one_clear_error_never_an_empty_capture():
    transformers = pytest.importorskip("transformers")
    config = transformers.ViTConfig(image_size=16, patch_size=8, hidden_size=16, num_hidden_layers=1,
                                    num_attention_heads=2, intermediate_size=16)
    foreign = transformers.ViTForImageClassification(config).eval()
    with pytest.raises(RuntimeError, match="ViTForImageClassification has no recordable attention.*load_model"):
        capture_attention(foreign, torch.zeros(1, 3, 16, 16))
    with pytest.raises(TypeError, match="torch.nn.Module"):
        capture_attention(lambda x: x, torch.zeros(1))


def test_a_pass_that_misses_layers_is_not_mixed_with_an_earlier_one(make_config):
    model = VisionTransformer(make_config("softmax")).eval()
    x = torch.zeros(1, 1, 16, 16)
    with record_attention(model) as rec:
        model(x)
        tokens = torch.zeros(1, 17, 16)
        model.blocks[1](tokens)  # a partial pass: only layer 1
    with pytest.raises(RuntimeError, match="incomplete attention capture"):
        rec.layers
