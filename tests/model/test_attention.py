"""Attention operators against naive reference formulas written out here."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from infsa_viz.model import (
    ATTENTION_REGISTRY,
    VARIANTS,
    LinearInfSAAttention,
    PureInfSAAttention,
    SoftmaxAttention,
    build_attention,
    infsa_affinity,
    linear_infsa_weights,
    softmax_matrix,
)


def naive_pure(q, k, v, rho, eps=1e-6):
    """Loop over (batch, head): Â = ReLU(QKᵀ)/(‖·‖_F + ε); out = ρ Â V."""
    B, H, N, D = q.shape
    out = torch.empty_like(v)
    for b in range(B):
        for h in range(H):
            s = torch.clamp(q[b, h] @ k[b, h].T, min=0)
            a_hat = s / (torch.sqrt((s**2).sum()) + eps)
            out[b, h] = rho[h] * a_hat @ v[b, h]
    return out


def naive_linear(q, k, v, rho, eps=1e-6):
    """Per (batch, head), in plain loops over tokens."""
    B, H, N, D = q.shape
    out = torch.empty_like(v)
    for b in range(B):
        for h in range(H):
            norms = torch.stack([q[b, h, i].norm() for i in range(N)])
            alpha = norms / (norms.sum() + eps)
            q_bar = sum(alpha[i] * q[b, h, i] for i in range(N))
            s = torch.stack([torch.clamp(q_bar @ k[b, h, j], min=0) for j in range(N)])
            a = s / (s.sum() + eps)
            ctx = sum(a[j] * v[b, h, j] for j in range(N))
            out[b, h] = rho[h] * ctx.expand(N, D)
    return out


def split_heads(module, x):
    B, N, C = x.shape
    qkv = module.qkv(x).reshape(B, N, 3, module.num_heads, module.head_dim)
    return qkv.permute(2, 0, 3, 1, 4).unbind(0)


def test_registry_is_the_single_variant_list():
    assert VARIANTS == ("softmax", "pure_infsa", "linear_infsa")
    assert set(ATTENTION_REGISTRY) == set(VARIANTS)
    for name, cls in ATTENTION_REGISTRY.items():
        assert cls.variant == name


@pytest.mark.parametrize("cls,naive", [(PureInfSAAttention, naive_pure), (LinearInfSAAttention, naive_linear)])
@pytest.mark.parametrize("per_head", [False, True])
def test_infsa_matches_naive_reference(cls, naive, per_head):
    torch.manual_seed(1)
    module = cls(24, 3, rho_init=0.3, rho_per_head=per_head).double()
    if per_head:
        with torch.no_grad():
            module.rho_logit.copy_(torch.tensor([-1.0, 0.0, 2.0]))
    x = torch.randn(2, 7, 24, dtype=torch.float64)
    q, k, v = split_heads(module, x)
    expected = naive(q, k, v, module.rho())
    expected = module.proj(expected.transpose(1, 2).reshape(2, 7, 24))
    assert_close(module(x), expected)


def test_softmax_fused_and_explicit_agree():
    fused = SoftmaxAttention(32, 4, fused=True)
    explicit = SoftmaxAttention(32, 4, fused=False)
    explicit.load_state_dict(fused.state_dict())
    x = torch.randn(3, 11, 32)
    assert_close(fused(x), explicit(x), atol=1e-5, rtol=1e-5)


def test_softmax_matches_naive_formula():
    module = SoftmaxAttention(8, 2, fused=False).double()
    x = torch.randn(1, 5, 8, dtype=torch.float64)
    q, k, v = split_heads(module, x)
    p = torch.exp(q @ k.transpose(-1, -2) / 2.0)  # √D = 2
    out = (p / p.sum(-1, keepdim=True)) @ v
    assert_close(module(x), module.proj(out.transpose(1, 2).reshape(1, 5, 8)))


@pytest.mark.parametrize("variant", ["pure_infsa", "linear_infsa"])
def test_rho_learns(variant):
    """The logit gets a gradient and ρ moves after one step (the official `.item()` bug)."""
    module = build_attention(variant, 16, 2, rho_init=0.5)
    opt = torch.optim.SGD(module.parameters(), lr=1.0)
    before = module.rho().detach().clone()
    x = torch.randn(2, 6, 16)
    loss = module(x).pow(2).sum()
    loss.backward()
    assert module.rho_logit.grad is not None
    assert module.rho_logit.grad.abs().sum() > 0
    opt.step()
    assert not torch.allclose(module.rho().detach(), before)


def test_rho_per_head_has_one_logit_per_head():
    assert build_attention("pure_infsa", 16, 4, rho_per_head=True).rho_logit.shape == (4,)
    assert build_attention("pure_infsa", 16, 4).rho_logit.shape == (1,)
    assert build_attention("linear_infsa", 16, 4).rho().shape == (4,)


@pytest.mark.parametrize("variant", VARIANTS)
def test_masks_and_causal_are_refused(variant):
    module = build_attention(variant, 8, 2)
    x = torch.randn(1, 4, 8)
    with pytest.raises(NotImplementedError):
        module(x, attn_mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(NotImplementedError):
        module(x, is_causal=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", ["zero", "anti_aligned"])
def test_zero_affinity_gives_finite_zero_output(dtype, case):
    """ReLU(QKᵀ) ≡ 0: no NaN/Inf, and the InfSA outputs are exactly zero."""
    B, H, N, D = 1, 2, 9, 4
    if case == "zero":
        q = torch.zeros(B, H, N, D, dtype=dtype)
        k = torch.randn(B, H, N, D).to(dtype)
    else:
        q = torch.ones(B, H, N, D, dtype=dtype)
        k = -torch.rand(B, H, N, D).to(dtype) - 0.1  # every q·k < 0
    v = torch.randn(B, H, N, D).to(dtype)
    a_hat = infsa_affinity(q, k)
    assert torch.isfinite(a_hat).all() and (a_hat == 0).all()
    alpha, q_bar, a = linear_infsa_weights(q, k)
    for t in (alpha, q_bar, a):
        assert torch.isfinite(t).all()
    assert (a == 0).all()
    for cls in (PureInfSAAttention, LinearInfSAAttention):
        module = cls(H * D, H)
        out = module.attend(q, k, v)
        assert out.dtype == dtype and torch.isfinite(out).all() and (out == 0).all()


@pytest.mark.parametrize("variant", VARIANTS)
def test_bfloat16_forward_is_finite(variant):
    module = build_attention(variant, 16, 2).to(torch.bfloat16)
    out = module(torch.randn(2, 50, 16, dtype=torch.bfloat16) * 10)
    assert out.dtype == torch.bfloat16 and torch.isfinite(out).all()


def test_float64_inputs_stay_float64_accurate():
    """infsa_affinity and linear_infsa_weights compute in the input's dtype: float64 in, float64-exact
    out (they used to round through float32: 1.6e-8 from this reference)."""
    torch.manual_seed(3)
    q, k = torch.randn(2, 3, 17, 8, dtype=torch.float64), torch.randn(2, 3, 17, 8, dtype=torch.float64)
    s = torch.clamp(torch.einsum("bhid,bhjd->bhij", q, k), min=0)
    reference = s / (torch.sqrt((s**2).sum((-2, -1), keepdim=True)) + 1e-6)
    a_hat = infsa_affinity(q, k)
    assert a_hat.dtype == torch.float64
    assert_close(a_hat, reference, atol=1e-12, rtol=1e-12)
    norms = q.norm(dim=-1)
    alpha = norms / (norms.sum(-1, keepdim=True) + 1e-6)
    q_bar = (alpha.unsqueeze(-1) * q).sum(-2)
    scores = torch.clamp((k * q_bar.unsqueeze(-2)).sum(-1), min=0)
    for got, expected in zip(linear_infsa_weights(q, k), (alpha, q_bar, scores / (scores.sum(-1, keepdim=True) + 1e-6))):
        assert got.dtype == torch.float64
        assert_close(got, expected, atol=1e-12, rtol=1e-12)


def test_half_precision_affinity_does_not_overflow_in_q_k():
    """q·kᵀ of large float16 activations exceeds 65504; the product is taken in float32."""
    q = torch.full((1, 4, 8), 40.0, dtype=torch.float16)  # q·k = 8 · 1600 = 12800 · ... per pair
    k = torch.full((1, 4, 8), 300.0, dtype=torch.float16)  # 8 · 40 · 300 = 96,000 > float16 max
    a_hat = infsa_affinity(q, k)
    assert a_hat.dtype == torch.float16 and torch.isfinite(a_hat).all()
    assert_close(a_hat.float(), torch.full((1, 4, 4), 0.25), atol=1e-3, rtol=0)


def test_affinity_is_nonnegative_with_unit_frobenius_norm():
    q, k = torch.randn(2, 3, 10, 4), torch.randn(2, 3, 10, 4)
    a_hat = infsa_affinity(q, k)
    assert (a_hat >= 0).all()
    assert_close(a_hat.flatten(-2).norm(dim=-1), torch.ones(2, 3), atol=1e-5, rtol=0)


def test_linear_infsa_at_200k_tokens_without_any_n_by_n_tensor():
    """N = 200,000: an N×N float32 tensor would need 160 GB; the linear path never builds one."""
    N, dim, heads = 200_000, 16, 2
    module = LinearInfSAAttention(dim, heads)
    largest = 0

    def track(t):
        nonlocal largest
        largest = max(largest, t.numel())

    # Observe every tensor produced on the path via the dispatcher.
    from torch.utils._python_dispatch import TorchDispatchMode

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor):
                    track(t)
            return out

    x = torch.randn(1, N, dim)
    with torch.no_grad(), Watch():
        out = module(x)
    assert out.shape == (1, N, dim) and torch.isfinite(out).all()
    assert largest <= 3 * N * dim  # the qkv projection is the biggest tensor: O(N·D)
    assert largest < N * N


def test_build_attention_rejects_unknown_variant():
    with pytest.raises(ValueError, match="variant='flash'"):
        build_attention("flash", 8, 2)


def test_bad_head_count_and_rho_init_are_rejected():
    with pytest.raises(ValueError, match="num_heads=3"):
        build_attention("softmax", 8, 3)
    with pytest.raises(ValueError, match="rho_init=1.0"):
        build_attention("pure_infsa", 8, 2, rho_init=1.0)


@pytest.mark.parametrize("fn", [infsa_affinity, softmax_matrix, linear_infsa_weights])
def test_mismatched_q_k_are_one_clear_error(fn):
    with pytest.raises(ValueError, match=r"q has shape \(2, 5, 8\) and k \(2, 5, 4\)"):
        fn(torch.randn(2, 5, 8), torch.randn(2, 5, 4))
    with pytest.raises(ValueError, match="k is a torch.int64 tensor"):
        fn(torch.randn(5, 4), torch.zeros(5, 4, dtype=torch.int64))
