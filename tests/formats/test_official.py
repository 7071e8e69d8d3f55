"""torchvision ViT state dicts, plain and converted by the official InfSA code, against naive forwards.

The state dicts are written here by hand in the official layout (``encoder.layers.encoder_layer_i.
self_attention.{q_proj,k_proj,v_proj,out_proj,rho_logit}``), and the reference forward is the
official code's formulas written out (Roffo & Palmer, arXiv 2603.00175), not our modules.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from torch.testing import assert_close

from infsa_viz import capture_attention, load_model
from infsa_viz.formats import describe_model, detect

DIM, HEADS, DEPTH, PATCH, SIDE, CLASSES, HIDDEN = 24, 3, 2, 8, 4, 6, 40


def official_state(*, infsa: bool = True, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)

    def r(*shape, scale=0.3):
        return torch.randn(*shape, generator=g) * scale

    state = {"conv_proj.weight": r(DIM, 3, PATCH, PATCH, scale=0.1), "conv_proj.bias": r(DIM),
             "class_token": r(1, 1, DIM), "encoder.pos_embedding": r(1, SIDE * SIDE + 1, DIM),
             "encoder.ln.weight": 1 + r(DIM), "encoder.ln.bias": r(DIM),
             "heads.head.weight": r(CLASSES, DIM), "heads.head.bias": r(CLASSES)}
    for i in range(DEPTH):
        p = f"encoder.layers.encoder_layer_{i}."
        state.update({p + "ln_1.weight": 1 + r(DIM), p + "ln_1.bias": r(DIM), p + "ln_2.weight": 1 + r(DIM),
                      p + "ln_2.bias": r(DIM), p + "mlp.0.weight": r(HIDDEN, DIM), p + "mlp.0.bias": r(HIDDEN),
                      p + "mlp.3.weight": r(DIM, HIDDEN), p + "mlp.3.bias": r(DIM),
                      p + "self_attention.out_proj.weight": r(DIM, DIM), p + "self_attention.out_proj.bias": r(DIM)})
        if infsa:
            for name in ("q_proj", "k_proj", "v_proj"):
                state[p + f"self_attention.{name}.weight"] = r(DIM, DIM)
                state[p + f"self_attention.{name}.bias"] = r(DIM)
            state[p + "self_attention.rho_logit"] = torch.tensor(0.4 + i)  # a scalar per layer
        else:
            state[p + "self_attention.in_proj_weight"] = r(3 * DIM, DIM)
            state[p + "self_attention.in_proj_bias"] = r(3 * DIM)
    return state


def official_attention(y, state, p, variant, eps=1e-6):
    """The official InfSAAttention forward, from its formulas (B, N, C) → (B, N, C)."""
    B, N, _ = y.shape
    D = DIM // HEADS

    def heads(name):
        return F.linear(y, state[p + name + ".weight"], state[p + name + ".bias"]).view(B, N, HEADS, D).transpose(1, 2)

    q, k, v = heads("q_proj") / math.sqrt(D), heads("k_proj") / math.sqrt(D), heads("v_proj")  # (B, H, N, D)
    rho = torch.sigmoid(state[p + "rho_logit"])
    if variant == "pure_infsa":
        a = torch.relu(q @ k.transpose(-2, -1))  # ReLU(q kᵀ / D)
        a = a / (a.flatten(-2).norm(dim=-1)[..., None, None] + eps)
        out = (rho * a) @ v
    else:
        energy = q.norm(dim=-1)  # (B, H, N)
        w = energy / (energy.sum(-1, keepdim=True) + eps)
        q_bar = torch.einsum("bhn,bhnd->bhd", w, q)
        a = torch.relu(torch.einsum("bhd,bhnd->bhn", q_bar, k))
        a = a / (a.sum(-1, keepdim=True) + eps)
        out = (rho * a[..., None] * v).sum(-2, keepdim=True).expand_as(v)
    out = out.transpose(1, 2).reshape(B, N, DIM)
    return F.linear(out, state[p + "out_proj.weight"], state[p + "out_proj.bias"])


def reference_forward(x, state, variant):
    """torchvision's ViT forward written out (LayerNorm ε 1e-6, exact GELU, CLS head)."""
    tokens = F.conv2d(x, state["conv_proj.weight"], state["conv_proj.bias"], stride=PATCH).flatten(2).transpose(1, 2)
    tokens = torch.cat([state["class_token"].expand(len(x), -1, -1), tokens], 1) + state["encoder.pos_embedding"]
    for i in range(DEPTH):
        p = f"encoder.layers.encoder_layer_{i}."
        y = F.layer_norm(tokens, (DIM,), state[p + "ln_1.weight"], state[p + "ln_1.bias"], eps=1e-6)
        if variant == "softmax":
            mha = torch.nn.MultiheadAttention(DIM, HEADS, batch_first=True)
            mha.load_state_dict({k[len(p) + 15:]: v for k, v in state.items() if k.startswith(p + "self_attention.")})
            attended = mha(y, y, y, need_weights=False)[0]
        else:
            attended = official_attention(y, state, p + "self_attention.", variant)
        tokens = tokens + attended
        y = F.layer_norm(tokens, (DIM,), state[p + "ln_2.weight"], state[p + "ln_2.bias"], eps=1e-6)
        y = F.linear(F.gelu(F.linear(y, state[p + "mlp.0.weight"], state[p + "mlp.0.bias"])),
                     state[p + "mlp.3.weight"], state[p + "mlp.3.bias"])
        tokens = tokens + y
    tokens = F.layer_norm(tokens, (DIM,), state["encoder.ln.weight"], state["encoder.ln.bias"], eps=1e-6)
    return F.linear(tokens[:, 0], state["heads.head.weight"], state["heads.head.bias"])


@pytest.mark.parametrize("variant", ["pure_infsa", "linear_infsa"])
def test_official_infsa_state_dict_matches_the_official_formulas(tmp_path, variant):
    state = official_state()
    save_file(state, tmp_path / "infsa.safetensors")
    assert detect(tmp_path / "infsa.safetensors") == "official-infsa"
    model = load_model(f"{tmp_path / 'infsa.safetensors'}?num_heads={HEADS}&variant={variant}")
    assert model.config.attention == variant and model.config.norm_eps == 1e-6
    expected_rho = [[round(float(torch.sigmoid(torch.tensor(0.4 + i))), 6)] * HEADS for i in range(DEPTH)]
    assert model.rho_values() == expected_rho
    x = torch.randn(2, 3, SIDE * PATCH, SIDE * PATCH)
    with torch.no_grad():
        assert_close(model(x), reference_forward(x, state, variant), atol=1e-5, rtol=1e-5)
    _, records = capture_attention(model, x)
    assert [r.variant for r in records] == [variant] * DEPTH
    assert describe_model(model)["format"] == "official-infsa"


def test_plain_torchvision_state_dict_matches_multihead_attention(tmp_path):
    state = official_state(infsa=False)
    save_file(state, tmp_path / "tv.safetensors")
    assert detect(tmp_path / "tv.safetensors") == "torchvision"
    model = load_model(tmp_path / "tv.safetensors", num_heads=HEADS)
    x = torch.randn(2, 3, SIDE * PATCH, SIDE * PATCH)
    with torch.no_grad():
        assert_close(model(x), reference_forward(x, state, "softmax"), atol=1e-5, rtol=1e-5)


def test_missing_options_are_asked_for(tmp_path):
    save_file(official_state(), tmp_path / "infsa.safetensors")
    with pytest.raises(ValueError, match="num_heads"):
        load_model(tmp_path / "infsa.safetensors", variant="pure_infsa")
    with pytest.raises(ValueError, match="variant='pure_infsa' or 'linear_infsa'"):
        load_model(tmp_path / "infsa.safetensors", num_heads=HEADS)
    bad = {**official_state(), "encoder.layers.encoder_layer_0.self_attention.extra": torch.zeros(1)}
    save_file(bad, tmp_path / "bad.safetensors")
    with pytest.raises(ValueError, match="self_attention.extra"):
        load_model(tmp_path / "bad.safetensors", num_heads=HEADS, variant="pure_infsa")
