"""Blockwise pure InfSA (infsa_viz/model/blockwise.py) against the dense formula written out here."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from infsa_viz.model import (
    BLOCKWISE_MIN_TOKENS,
    PureInfSAAttention,
    VisionTransformer,
    ViTConfig,
    blockwise_infsa,
    build_attention,
    set_infsa_impl,
    tile_sizes,
)


def dense_reference(q, k, v):
    """U = ReLU(q kᵀ) v and ‖ReLU(q kᵀ)‖_F, the N×N matrix formed."""
    s = torch.clamp(q @ k.transpose(-2, -1), min=0)
    return s @ v, torch.sqrt((s * s).sum(dim=(-2, -1)))


# (batch shape, N, D, query rows, key cols): N not divisible by the tiles, one-row and one-column
# tiles, tiles larger than N, default tiles.
SHAPES = [((2, 3), 37, 5, 8, 10), ((1,), 50, 4, 1, 7), ((3,), 23, 6, 64, 64), ((2, 2), 41, 3, None, None),
          ((), 19, 2, 5, 1)]


@pytest.mark.parametrize("dtype,rtol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("batch,n,d,rows,cols", SHAPES)
def test_forward_and_backward_equal_dense(dtype, rtol, batch, n, d, rows, cols):
    gen = torch.Generator().manual_seed(n * 7 + d)
    q, k, v = (torch.randn(*batch, n, d, generator=gen, dtype=dtype, requires_grad=True) for _ in range(3))
    g_u = torch.randn(*batch, n, d, generator=gen, dtype=dtype)
    g_n = torch.randn(batch, generator=gen, dtype=dtype)
    outputs = []
    for fn in (dense_reference, lambda *t: blockwise_infsa(*t, block_size=rows, key_block_size=cols)):
        u, norm = fn(q, k, v)
        loss = (u * g_u).sum() + (norm * g_n).sum()
        outputs.append((u, norm, *torch.autograd.grad(loss, (q, k, v))))
    for expected, got in zip(*outputs):
        assert_close(got, expected, rtol=rtol, atol=rtol * float(expected.abs().max()))


def test_no_grad_path_equals_autograd_path():
    q, k, v = torch.randn(3, 2, 30, 4).unbind(0)
    with torch.no_grad():
        u0, n0 = blockwise_infsa(q, k, v, block_size=7, key_block_size=9)
    u1, n1 = blockwise_infsa(q.requires_grad_(), k, v, block_size=7, key_block_size=9)
    assert u1.requires_grad
    assert_close(u0, u1.detach())
    assert_close(n0, n1.detach())


def test_all_zero_affinity_has_finite_gradients():
    """‖S‖_F = 0 (every q·k ≤ 0): no 0/0 in the norm's gradient."""
    q = torch.ones(1, 6, 2, requires_grad=True)
    k = torch.full((1, 6, 2), -1.0, requires_grad=True)
    v = torch.randn(1, 6, 2, requires_grad=True)
    u, norm = blockwise_infsa(q, k, v, block_size=4, key_block_size=4)
    (u.sum() + norm.sum()).backward()
    assert float(norm) == 0.0
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()


@pytest.mark.parametrize("dtype,rtol", [(torch.float32, 1e-5), (torch.float64, 1e-12)])
@pytest.mark.parametrize("per_head", [False, True])
def test_layer_paths_agree_and_rho_learns(dtype, rtol, per_head):
    torch.manual_seed(3)
    layer = PureInfSAAttention(24, 3, rho_per_head=per_head, block_size=6, key_block_size=11).to(dtype)
    x = torch.randn(2, 29, 24, dtype=dtype)
    results = []
    for impl in ("dense", "blockwise"):
        layer.impl = impl
        y = layer(x)
        grads = torch.autograd.grad(y.pow(2).sum(), [layer.rho_logit, layer.qkv.weight, layer.qkv.bias])
        results.append((y, *grads))
    for expected, got in zip(*results):
        assert_close(got, expected, rtol=rtol, atol=rtol * float(expected.abs().max()))
    assert results[1][1].abs().sum() > 0  # ρ's logit gets a gradient on the blockwise path


def test_auto_switches_above_the_threshold_and_options_are_checked():
    layer = build_attention("pure_infsa", 8, 2)
    assert layer.impl == "auto"
    assert not layer.uses_blockwise(BLOCKWISE_MIN_TOKENS)
    assert layer.uses_blockwise(BLOCKWISE_MIN_TOKENS + 1)
    layer.impl = "dense"
    assert not layer.uses_blockwise(10**6)
    assert build_attention("pure_infsa", 8, 2, impl="blockwise").uses_blockwise(2)
    # Options of one variant are dropped for the others.
    build_attention("softmax", 8, 2, impl="blockwise", block_size=4)
    build_attention("linear_infsa", 8, 2, impl="blockwise")
    with pytest.raises(ValueError, match="impl='sparse'"):
        build_attention("pure_infsa", 8, 2, impl="sparse")
    with pytest.raises(ValueError, match="block_size=0"):
        build_attention("pure_infsa", 8, 2, block_size=0)
    assert tile_sizes(4, 100, block_size=1000) == (100, 100)


def test_training_steps_match_dense_step_for_step():
    """A few AdamW steps of a small pure-InfSA ViT at 224² (patch 32, 50 tokens), float64."""
    config = ViTConfig(img_size=224, in_chans=1, patch_size=32, embed_dim=16, depth=2, num_heads=2,
                       attention="pure_infsa", num_classes=3)
    gen = torch.Generator().manual_seed(0)
    images = torch.rand(4, 1, 224, 224, generator=gen, dtype=torch.float64)
    labels = torch.tensor([0, 1, 2, 1])
    losses = {}
    for impl in ("dense", "blockwise"):
        torch.manual_seed(0)
        model = VisionTransformer(config).double()
        assert set_infsa_impl(model, impl, block_size=7, key_block_size=13) == 2
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        losses[impl] = []
        for _ in range(3):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[impl].append(float(loss))
        rho = torch.sigmoid(torch.stack([b.attn.rho_logit for b in model.blocks])).detach()
        assert not torch.allclose(rho, torch.full_like(rho, 0.5))  # ρ moved
    assert losses["dense"] == pytest.approx(losses["blockwise"], rel=1e-10)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mode", ["inference", "no_grad", "grad"])
def test_tiles_equal_dense_in_every_autograd_mode(mode, threads):
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)  # 2: query blocks shared among 2 Python threads
    try:
        gen = torch.Generator().manual_seed(5)
        q, k, v = (torch.randn(2, 3, 50, 4, generator=gen, dtype=torch.float64) for _ in range(3))
        s = (q @ k.transpose(-2, -1)).clamp_min(0)  # naive S = ReLU(q kᵀ)
        context = {"inference": torch.inference_mode(), "no_grad": torch.no_grad(),
                   "grad": torch.enable_grad()}[mode]
        with context:
            out, norm = blockwise_infsa(q, k, v, block_size=7, key_block_size=9)
            out = out.clone()
        assert_close(out, s @ v)
        assert_close(norm, s.square().sum((-2, -1)).sqrt())
    finally:
        torch.set_num_threads(previous)
