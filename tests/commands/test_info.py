"""``infsa-viz info``: the operator each attention layer computes, read from its behaviour."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infsa_viz.cli import main
from infsa_viz.model import VisionTransformer, ViTConfig, save_model

MODELS = Path(__file__).parents[2] / "models"


@pytest.mark.parametrize("directory,variant", [("softmax-vit4", "softmax"), ("pure-infsa-vit4", "pure_infsa"),
                                               ("linear-infsa-vit4", "linear_infsa")])
def test_info_names_the_operator_of_each_shipped_model(capsys, directory, variant):
    assert main(["info", str(MODELS / directory)]) == 0
    info = json.loads(capsys.readouterr().out)
    operator = info["operator"]
    assert operator["computes"] == variant and operator["graph_readouts"] is True
    assert [layer["computes"] for layer in operator["layers"]] == [variant] * 4
    assert all(layer["declared"] == variant and layer["residual"] < 1e-5 for layer in operator["layers"])
    if variant != "softmax":  # the fitted rho is the learned one
        fitted = [rho for layer in operator["layers"] for rho in layer["parameters"]["rho"]]
        assert fitted == pytest.approx([rho for layer in info["rho"] for rho in layer], rel=1e-4)


def test_info_shows_a_layer_whose_class_does_not_describe_it(capsys, tmp_path, monkeypatch):
    from infsa_viz.model import PureInfSAAttention, linear_infsa_weights

    class Blended(PureInfSAAttention):  # 0.7 pooled + 0.3 values, under the pure InfSA class
        def attend(self, q, k, v):
            self._record(q=q, k=k)
            a = linear_infsa_weights(q, k)[2]
            return 0.7 * (a.unsqueeze(-2) @ v) + 0.3 * v

    save_model(VisionTransformer(ViTConfig(attention="pure_infsa", embed_dim=16, depth=2, num_heads=2)), tmp_path)
    from infsa_viz import formats

    real = formats.load_model

    def load(spec, **kw):
        model = real(spec, **kw)
        model.blocks[1].attn.__class__ = Blended
        return model

    monkeypatch.setattr(formats, "load_model", load)
    assert main(["info", str(tmp_path)]) == 0
    operator = json.loads(capsys.readouterr().out)["operator"]
    assert operator["computes"] == "mixed: pure_infsa, blend" and operator["graph_readouts"] is False
    assert "declared pure_infsa but blends" in operator["layers"][1]["reason"]
