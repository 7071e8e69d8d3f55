"""Operator fingerprint: operators written here from their descriptions, classified from behaviour.

Each test operator is an attention module whose ``attend`` is written out from a one-line
description (the paper's formulas, the third-party re-implementations named in issue 43, and
look-alikes that must come out "unknown"); none reuses the package's formulas. The classifier is
judged on all of them: 100 % correct, in float32 and float64, at three head widths.
"""

from __future__ import annotations

import math

import pytest
import torch

from infsa_viz.maps import attribute_images
from infsa_viz.model import (
    Attention,
    LinearInfSAAttention,
    PureInfSAAttention,
    SoftmaxAttention,
    VisionTransformer,
)
from infsa_viz.model.fingerprint import OPERATORS, fingerprint, fingerprint_layer, require_graph
from infsa_viz.spectral.eigencheck import eigencheck


def _frobenius(q, k, eps=1e-6):
    """Â = ReLU(q kᵀ) / ‖ReLU(q kᵀ)‖_F per (batch, head)."""
    S = torch.relu(q @ k.transpose(-2, -1))
    return S / (S.pow(2).sum((-2, -1), keepdim=True).sqrt() + eps)


def _pooled(q, k, v, eps=1e-6):
    """Linear-InfSA's context: α_i ∝ ‖q_i‖, q̄ = Σ α_i q_i, a_j ∝ ReLU(q̄·k_j), Σ_j a_j v_j (B, H, 1, D)."""
    norms = q.norm(dim=-1)
    alpha = norms / (norms.sum(-1, keepdim=True) + eps)
    q_bar = (alpha.unsqueeze(-1) * q).sum(-2)
    scores = torch.relu((k * q_bar.unsqueeze(-2)).sum(-1))
    a = scores / (scores.sum(-1, keepdim=True) + eps)
    return (a.unsqueeze(-1) * v).sum(-2, keepdim=True)


def _logits(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


class _Written(Attention):
    """An attention module whose operator is the function ``op``; it claims ``variant``."""

    variant = "pure_infsa"

    def attend(self, q, k, v):
        self._record(q=q, k=k)
        return self.op(q, k, v)


def _module(claims, op):
    return type(op.__name__, (_Written,), {"variant": claims, "op": staticmethod(op)})


def softmax(q, k, v):
    """softmax(q kᵀ/√D) v."""
    return torch.softmax(_logits(q, k), -1) @ v


def pure_infsa(q, k, v):
    """ρ·Â v with ρ = 0.8."""
    return 0.8 * _frobenius(q, k) @ v


def linear_infsa(q, k, v):
    """ρ·Σ_j a_j v_j broadcast to every token, ρ = 0.6."""
    return 0.6 * _pooled(q, k, v)


def neumann_3(q, k, v):
    """A 3-term Neumann series inside one layer: Σ_{t=1}^{3} γᵗ Âᵗ v, γ = 0.5."""
    A, term, out = _frobenius(q, k), v, 0
    for t in range(1, 4):
        term = A @ term
        out = out + 0.5**t * term
    return out


def neumann_from_identity(q, k, v):
    """The series with its t = 0 term: v + γ Â v + γ² Â² v, γ = 0.9."""
    A = _frobenius(q, k)
    return v + 0.9 * A @ v + 0.81 * A @ (A @ v)


def blend_values(q, k, v):
    """0.7·pooled + 0.3·per-token values."""
    return 0.7 * _pooled(q, k, v) + 0.3 * v


def blend_affinity(q, k, v):
    """0.5·pooled + 0.5·Â v (pooled and per-token InfSA)."""
    return 0.5 * _pooled(q, k, v) + 0.5 * _frobenius(q, k) @ v


def sigmoid_attention(q, k, v):
    """sigmoid(q kᵀ/√D) v: no normalisation."""
    return torch.sigmoid(_logits(q, k)) @ v


def temperature_softmax(q, k, v):
    """softmax(q kᵀ/(τ√D)) v, τ = 2."""
    return torch.softmax(_logits(q, k) / 2, -1) @ v


def top_k_softmax(q, k, v):
    """softmax over the 4 largest logits of each row, the rest masked."""
    z = _logits(q, k)
    kth = z.topk(4, dim=-1).values[..., -1:]
    return torch.softmax(z.masked_fill(z < kth, float("-inf")), -1) @ v


def row_normalised_relu(q, k, v):
    """ReLU(q kᵀ) normalised per row (not Frobenius), times v."""
    S = torch.relu(q @ k.transpose(-2, -1))
    return S / (S.sum(-1, keepdim=True) + 1e-6) @ v


def heads_disagree(q, k, v):
    """Head 0 softmax, the other heads pure InfSA."""
    out = 0.8 * _frobenius(q, k) @ v
    out[:, 0] = softmax(q[:, :1], k[:, :1], v[:, :1])[:, 0]
    return out


def squared_values(q, k, v):
    """Â (v ⊙ v): not linear in the values."""
    return _frobenius(q, k) @ (v * v)


class LyingPureInfSA(PureInfSAAttention):
    """A module whose class is pure InfSA but which computes 0.7·pooled + 0.3·values."""

    def attend(self, q, k, v):
        self._record(q=q, k=k)
        return blend_values(q, k, v)


WRITTEN = [  # (module class, what it computes)
    (_module("softmax", softmax), "softmax"),
    (_module("pure_infsa", pure_infsa), "pure_infsa"),
    (_module("linear_infsa", linear_infsa), "linear_infsa"),
    (_module("pure_infsa", neumann_3), "neumann"),
    (_module("pure_infsa", neumann_from_identity), "neumann"),
    (_module("linear_infsa", blend_values), "blend"),
    (_module("linear_infsa", blend_affinity), "blend"),
    (_module("softmax", sigmoid_attention), "unknown"),
    (_module("softmax", temperature_softmax), "unknown"),
    (_module("softmax", top_k_softmax), "unknown"),
    (_module("pure_infsa", row_normalised_relu), "unknown"),
    (_module("pure_infsa", heads_disagree), "unknown"),
    (_module("pure_infsa", squared_values), "unknown"),
    (LyingPureInfSA, "blend"),
]
OURS = [(SoftmaxAttention, "softmax"), (PureInfSAAttention, "pure_infsa"), (LinearInfSAAttention, "linear_infsa")]
SHAPES = [(16, 2), (8, 4), (64, 4)]  # (width, heads): head widths 8, 2 (fewer than the tokens), 16


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_every_written_operator_is_classified_correctly(dtype):
    """The confusion table over 14 written and 3 package operators × 3 head shapes is diagonal."""
    confusion: dict[tuple[str, str], int] = {}
    for cls, expected in WRITTEN + OURS:
        for width, heads in SHAPES:
            torch.manual_seed(0)
            found = fingerprint_layer(cls(width, heads).to(dtype)).operator
            confusion[(expected, found)] = confusion.get((expected, found), 0) + 1
    wrong = {pair: n for pair, n in confusion.items() if pair[0] != pair[1]}
    assert not wrong, f"misclassified (expected, found): {wrong}"
    assert {e for e, _ in confusion} == set(OPERATORS)  # every operator the fingerprint names is tried


def test_the_fitted_constants_are_the_operators_own():
    torch.manual_seed(0)
    assert fingerprint_layer(_module("p", pure_infsa)(16, 2)).parameters["rho"] == pytest.approx([0.8, 0.8])
    series = fingerprint_layer(_module("p", neumann_3)(16, 2)).parameters
    assert series["powers"] == [1, 2, 3] and series["gamma"] == pytest.approx([0.5, 0.5], abs=1e-5)
    assert series["scale"] == pytest.approx([1.0, 1.0], abs=1e-5)
    blend = fingerprint_layer(LyingPureInfSA(16, 2)).parameters
    assert blend["per_token"] == "values"
    assert blend["pooled"] == pytest.approx([0.7, 0.7]) and blend["per_token_weight"] == pytest.approx([0.3, 0.3])
    layer = LinearInfSAAttention(16, 2, rho_init=0.3, rho_per_head=True)
    with torch.no_grad():
        layer.rho_logit[1] = 2.0
    assert fingerprint_layer(layer).parameters["rho"] == pytest.approx(layer.rho().tolist(), rel=1e-5)


def test_a_lying_class_is_caught_and_graph_readouts_are_refused():
    found = fingerprint_layer(LyingPureInfSA(16, 2), layer=3)
    assert (found.declared, found.operator, found.graph_defined) == ("pure_infsa", "blend", False)
    assert "declared pure_infsa" in found.reason and "pooled" in found.reason
    assert found.to_dict()["computes"] == "blend" and found.to_dict()["graph_readouts"] is False


def _model_with(make_config, module_class, layer=1):
    torch.manual_seed(0)
    model = VisionTransformer(make_config("pure_infsa")).eval()
    old = model.blocks[layer].attn
    new = module_class(16, 2)
    new.load_state_dict(old.state_dict(), strict=False)
    model.blocks[layer].attn = new
    return model


@pytest.mark.parametrize("method", ["visits", "perron", "neumann", "linear_estimate", "attention", "rollout",
                                    "attn_lrp", "chefer2021", "tam", "attention_flow"])
def test_readouts_of_a_layer_that_computes_something_else_are_refused(make_config, method):
    model = _model_with(make_config, _module("pure_infsa", neumann_3))
    x = torch.randn(2, 1, 16, 16)
    with pytest.raises(ValueError, match="attention layer 1 .*truncated Neumann series"):
        attribute_images(model, x, method)


def test_per_layer_readouts_of_other_layers_and_non_graph_maps_still_run(make_config):
    model = _model_with(make_config, _module("pure_infsa", sigmoid_attention))
    x = torch.randn(2, 1, 16, 16)
    assert attribute_images(model, x, "visits", layer=0).maps.shape == (2, 4, 4)
    assert attribute_images(model, x, "saliency").maps.shape == (2, 4, 4)
    with pytest.raises(ValueError, match="attention layer 1 computes no known operator"):
        attribute_images(model, x, "visits", layer=-1)
    with pytest.raises(ValueError, match="eigencheck refused: attention layer 1"):
        eigencheck(model, x, baseline_samples=0)
    eigencheck(model, x, layers=[0], baseline_samples=0)
    with pytest.raises(ValueError, match="layer 1"):
        require_graph(model)


def test_shipped_style_models_pass_every_gate(tiny_model, variant):
    prints = fingerprint(tiny_model)
    assert [f.operator for f in prints] == [variant] * len(tiny_model.blocks)
    assert all(f.graph_defined and f.residual < 1e-5 and f.linearity < 1e-5 for f in prints)
    require_graph(tiny_model)


def test_the_probe_is_deterministic_cached_and_leaves_the_module_as_it_was(make_config):
    model = VisionTransformer(make_config("linear_infsa")).eval()
    x = torch.randn(2, 1, 16, 16)
    before = model(x)
    first = fingerprint(model)
    assert fingerprint(model) is first  # cached
    again = fingerprint_layer(model.blocks[0].attn)  # deterministic: seeded, no global RNG
    assert (again.operator, again.parameters) == (first[0].operator, first[0].parameters)
    attn = model.blocks[0].attn
    assert "attend" not in attn.__dict__ and attn.recorder is None
    assert not attn.qkv._forward_hooks and not attn.proj._forward_pre_hooks
    torch.testing.assert_close(model(x), before)
    with torch.no_grad():
        attn.rho_logit.fill_(1.0)  # a parameter written in place: recomputed
    again = fingerprint(model)
    assert again is not first and again[0].parameters["rho"] == pytest.approx([torch.sigmoid(torch.tensor(1.0)).item()] * 2)
    model.blocks[1].attn = LyingPureInfSA(16, 2)  # a module swapped: recomputed
    assert fingerprint(model)[1].operator == "blend"


def test_the_probe_runs_inside_a_capture_without_adding_records(make_config):
    from infsa_viz.model import record_attention

    model = VisionTransformer(make_config("softmax")).eval()
    with record_attention(model) as rec:
        model(torch.randn(1, 1, 16, 16))
        fingerprint(model)
    assert len(rec.records) == len(model.blocks)


def test_a_module_the_probe_cannot_drive_is_unknown():
    class Opaque(torch.nn.Module):
        num_heads, head_dim = 2, 8

        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.zeros(1))

    found = fingerprint_layer(Opaque())
    assert found.operator == "unknown" and "cannot be probed" in found.reason and not found.graph_defined


def test_a_module_that_fails_on_the_probe_is_unknown_with_the_reason():
    def broken(q, k, v):
        raise RuntimeError("no kernel for this shape")

    found = fingerprint_layer(_module("softmax", broken)(16, 2))
    assert found.operator == "unknown" and "RuntimeError: no kernel for this shape" in found.reason


def test_other_paths_of_the_package_classes_compute_their_variant():
    assert fingerprint_layer(PureInfSAAttention(16, 2, impl="blockwise")).operator == "pure_infsa"
    assert fingerprint_layer(SoftmaxAttention(16, 2, fused=False)).operator == "softmax"
    for dtype in (torch.bfloat16, torch.float16):
        assert [fingerprint_layer(cls(16, 2).to(dtype)).operator for cls, _ in OURS] == [v for _, v in OURS]


def test_a_model_built_under_inference_mode_is_fingerprinted(make_config):
    with torch.inference_mode():
        model = VisionTransformer(make_config("pure_infsa")).eval()
        assert [f.operator for f in fingerprint(model)] == ["pure_infsa", "pure_infsa"]
    assert fingerprint(model)[0].graph_defined
