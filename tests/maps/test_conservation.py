"""AttnLRP relevance conservation, per block: what docs/metrics.md claims, checked on random models.

Claims (docs/metrics.md, "AttnLRP relevance conservation"):
* in float64 every block conserves relevance to ≤ 1e-4 once the measured sinks are counted (biases;
  for softmax, AttnLRP's softmax rule), for softmax, pure InfSA and Linear-InfSA;
* the InfSA rules (ReLU + Frobenius normaliser, pooled query) lose nothing between the attention
  matrix and q, k: without biases their blocks conserve relevance with no sink counted;
* softmax's rule keeps the Taylor bias ``Σ_j R_j − Σ_j z_j (R_j − s_j Σ_k R_k)`` (checked here against
  that formula written out).
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from infsa_viz.maps import relevance_conservation
from infsa_viz.maps.relevance import _gradients
from infsa_viz.model import VisionTransformer, record_attention


def _model(make_config, variant, *, bias: float, depth: int = 3, dtype=torch.float32):
    """A random model; every bias set to ``bias``·N(0, 1) (0: no bias at all)."""
    torch.manual_seed(0)
    model = VisionTransformer(make_config(variant, depth=depth)).eval().to(dtype)
    with torch.no_grad():
        for module in model.modules():
            b = module._parameters.get("bias")
            if b is not None:
                b.copy_(torch.randn_like(b) * bias)
    return model


@pytest.mark.parametrize("variant", ["softmax", "pure_infsa", "linear_infsa"])
def test_every_block_conserves_relevance_in_float64_once_the_sinks_are_counted(make_config, variant):
    model = _model(make_config, variant, bias=0.1)
    x = torch.randn(3, 1, 16, 16)
    report = relevance_conservation(model, x, target=torch.tensor([0, 1, 2]))
    assert report.dtype == "float64" and [s.name for s in report.stages] == [
        "embedding", "block 0", "block 1", "block 2", "head"]
    assert report.max_error(accounted=True) <= 1e-4
    assert report.max_error(accounted=True, blocks_only=False) <= 1e-4  # embedding, head and overall too
    assert report.max_error(accounted=False) > 1e-2  # the biases do absorb relevance: the raw error shows it
    for block in report.blocks:
        assert float(block.bias.abs().min()) > 0
        assert block.attention_absorbs == (variant == "softmax")
    # the logit is what the model gives, and every image is measured on its own
    with torch.no_grad():
        assert_close(report.logit, model(x).double().gather(1, torch.tensor([[0], [1], [2]]))[:, 0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("variant", ["pure_infsa", "linear_infsa"])
def test_infsa_rules_conserve_relevance_with_no_sink_counted(make_config, variant):
    """ReLU + Frobenius normaliser (pure InfSA) and the pooled query (Linear-InfSA): R(A) = R(q) + R(k)."""
    biased = relevance_conservation(_model(make_config, variant, bias=0.1), torch.randn(2, 1, 16, 16))
    for block in biased.blocks:
        scale = (block.relevance_in.abs() + block.relevance_out.abs()).max()
        assert float(block.attention.abs().max()) <= 1e-12 * float(scale)
    bare = relevance_conservation(_model(make_config, variant, bias=0.0), torch.randn(2, 1, 16, 16))
    assert bare.max_error(accounted=False) <= 1e-4  # raw: nothing absorbs
    for stage in bare.stages[1:]:  # every block and the head
        assert float(stage.bias.abs().max()) == 0.0


def test_softmax_keeps_the_taylor_bias_of_attnlrps_rule(make_config):
    """R(A) − R(q) − R(k) of a softmax layer equals Σ_j R_j − Σ_j z_j (R_j − s_j Σ_k R_k), with R = A ⊙ ∂*y/∂A
    and z the softmax's logits q kᵀ/√D, summed over heads and rows."""
    model = _model(make_config, "softmax", bias=0.0, dtype=torch.float64)
    x = torch.randn(1, 1, 16, 16, dtype=torch.float64)
    target = torch.tensor([1])
    report = relevance_conservation(model, x, target=target)
    mats, grads, _ = _gradients(model, x, target, lrp=True)
    with torch.no_grad(), record_attention(model) as rec:
        model(x)
    for i, (A, g, layer) in enumerate(zip(mats, grads, rec.layers)):
        z = layer.q @ layer.k.transpose(-2, -1) / layer.q.shape[-1] ** 0.5
        R = A * g
        kept = (R - z * (R - A * R.sum(-1, keepdim=True))).sum()
        assert float(report.blocks[i].attention[0]) == pytest.approx(float(kept), rel=1e-9, abs=1e-15)
    assert report.max_error(accounted=False) > 1e-3  # and it is not small: softmax's rule absorbs relevance


def test_float32_is_reported_and_batched_equals_unbatched(make_config):
    model = _model(make_config, "linear_infsa", bias=0.1)
    x = torch.randn(2, 1, 16, 16)
    both = relevance_conservation(model, x, target=torch.tensor([2, 0]), dtype="float32")
    one = relevance_conservation(model, x[1:], target=torch.tensor([0]), dtype="float32")
    assert both.dtype == "float32" and next(model.parameters()).dtype == torch.float32
    assert_close(both.blocks[1].relevance_in[1:], one.blocks[1].relevance_in, rtol=1e-5, atol=1e-7)
    record = both.for_image(1)
    assert record["dtype"] == "float32" and record["target"] == 0 and len(record["stages"]) == 5
    assert set(record["stages"][1]) >= {"relevance_in", "relevance_out", "absorbed_by_biases", "attention_rule",
                                         "error", "error_accounted"}
    assert record["blocks_max_error_accounted"] <= 1e-3


def test_bad_input_is_refused(make_config):
    model = _model(make_config, "softmax", bias=0.0)
    with pytest.raises(ValueError, match="dtype='float16'"):
        relevance_conservation(model, torch.randn(1, 1, 16, 16), dtype="float16")
    with pytest.raises(ValueError, match="images has type NoneType"):
        relevance_conservation(model)
    with pytest.raises(ValueError, match="no blocks"):
        relevance_conservation(torch.nn.Sequential(model.patch_embed), torch.randn(1, 1, 16, 16), target=0)
