"""Chefer et al. 2021, AttnLRP and Grad-CAM against naive references, conservation and analytic cases."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from infsa_viz.maps import attribute_images
from infsa_viz.maps._explicit import explicit_attention
from infsa_viz.maps.relevance import _gradients
from infsa_viz.model import VisionTransformer


@pytest.mark.parametrize("lrp", [False, True])
def test_explicit_attention_keeps_the_logits_and_restores_the_model(tiny_model, lrp):
    x = torch.randn(3, 1, 16, 16)
    with torch.no_grad():
        reference = tiny_model(x)
        with explicit_attention(tiny_model, lrp=lrp) as store:
            patched = tiny_model(x)
    assert_close(patched, reference, atol=1e-5, rtol=1e-5)
    assert len(store) == len(tiny_model.blocks) and store[0].shape == (3, 2, 17, 17)
    assert all("attend" not in b.attn.__dict__ and "forward" not in b.norm1.__dict__ for b in tiny_model.blocks)


def test_chefer_matches_the_paper_written_out(tiny_model, naive_vit):
    """R = I; R += mean_h[(∇A ⊙ A)⁺] R per layer; map = R[CLS, patches] (naive loops)."""
    x = torch.randn(2, 1, 16, 16)
    target = torch.tensor([1, 2])
    logits, mats = naive_vit(tiny_model, x)
    grads = torch.autograd.grad(logits[0, 1] + logits[1, 2], mats)
    expected = torch.zeros(2, 16)
    for b in range(2):
        R = torch.eye(17, dtype=torch.float64)
        for A, g in zip(mats, grads):
            heads = [(g[b, h] * A[b, h]).clamp(min=0).double() for h in range(A.shape[1])]
            R = R + (sum(heads) / len(heads)) @ R
        expected[b] = R[0, 1:].float()
    result = attribute_images(tiny_model, x, "chefer2021", target=target)
    assert_close(result.maps.reshape(2, 16), expected, atol=1e-5, rtol=1e-4)


def _zero_biases(model):
    with torch.no_grad():
        for module in model.modules():
            if getattr(module, "bias", None) is not None:
                module.bias.zero_()
    return model


@pytest.mark.parametrize("variant", ["pure_infsa", "linear_infsa"])
def test_attn_lrp_conserves_the_logit_without_biases_and_softmax(make_config, variant):
    """Every AttnLRP rule here is conservative: pixels + position embedding + CLS token = logit."""
    model = _zero_biases(VisionTransformer(make_config(variant)).double().eval())
    x = torch.randn(2, 1, 16, 16, dtype=torch.float64).requires_grad_(True)
    target = torch.tensor([0, 2])
    _, _, (gx, gpos, gcls) = _gradients(model, x, target, lrp=True, inputs=[x, model.pos_embed, model.cls_token])
    with torch.no_grad():
        logit = model(x).gather(1, target.view(-1, 1))[:, 0]
    # the shared parameters' relevance is summed over the batch: compare the batch totals
    assert_close(((x * gx).sum() + (model.pos_embed * gpos).sum() + (model.cls_token * gcls).sum()).detach(),
                 logit.sum(), atol=1e-9, rtol=1e-7)
    maps = attribute_images(model, x.detach(), "attn_lrp", target=target).maps
    assert_close(maps.sum((1, 2)).double(), (x * gx).sum((1, 2, 3)).detach().to(maps.dtype).double(),
                 atol=1e-5, rtol=1e-5)


def test_attn_lrp_softmax_rule_is_the_deep_taylor_rule():
    """AttnLRP Prop. 3.1: R_in_i = x_i (R_out_i − s_i Σ_j R_out_j), with R_out = s ⊙ g."""
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    g = torch.randn(5, dtype=torch.float64)
    s = torch.softmax(x, 0)
    (grad,) = torch.autograd.grad((s * g).sum(), x)
    R_out = s.detach() * g
    assert_close(x.detach() * grad, x.detach() * (R_out - s.detach() * R_out.sum()))


def test_attn_lrp_uniform_rule_halves_a_product():
    """For z = a·b the uniform rule gives R_a = R_b = z/2 (input × gradient with half_gradient)."""
    from infsa_viz.model import half_gradient as _half

    a = torch.tensor(3.0, requires_grad=True)
    b = torch.tensor(-2.0, requires_grad=True)
    ga, gb = torch.autograd.grad(_half(a * b), [a, b])
    assert float(a.detach() * ga) == pytest.approx(-3.0) and float(b.detach() * gb) == pytest.approx(-3.0)


def test_grad_cam_matches_a_naive_reference(make_config):
    model = VisionTransformer(make_config("softmax", depth=3)).eval()
    x = torch.randn(2, 1, 16, 16)
    seen = []
    handle = model.blocks[1].norm1.register_forward_hook(lambda m, i, o: seen.append(o))
    logits = model(x)
    handle.remove()
    (grad,) = torch.autograd.grad(logits[0, 2] + logits[1, 0], seen)
    expected = torch.zeros(2, 16)
    for b in range(2):
        weights = grad[b, 1:].mean(0)  # (C,)
        expected[b] = torch.relu(seen[0][b, 1:] @ weights)
    maps = attribute_images(model, x, "grad_cam", target=torch.tensor([2, 0]), layer=1).maps
    assert_close(maps.reshape(2, 16), expected.detach(), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("method", ["chefer2021", "attn_lrp", "grad_cam", "tam"])
def test_batched_equals_unbatched(tiny_model, method):
    x = torch.randn(3, 1, 16, 16)
    target = torch.tensor([0, 1, 2])
    options = {"steps": 4} if method == "tam" else {}
    batched = attribute_images(tiny_model, x, method, target=target, **options).maps
    single = torch.cat([attribute_images(tiny_model, x[i:i + 1], method, target=target[i:i + 1], **options).maps
                        for i in range(3)])
    assert_close(batched, single, atol=1e-5, rtol=1e-4)


def test_each_variant_owns_its_lrp_rule_with_the_applied_value():
    """The LRP matrix of every variant has the value of its applied matrix (only gradients differ)."""
    from infsa_viz.model import ATTENTION_REGISTRY

    q, k = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 5, 4)
    for cls in ATTENTION_REGISTRY.values():
        torch.testing.assert_close(cls.lrp_matrix(q, k), cls.applied_matrix(q, k), atol=1e-6, rtol=1e-5)
