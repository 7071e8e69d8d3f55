"""Per layer and head of one image: spectra, absorption check, Linear-vs-Perron cosine."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from infsa_viz.model import capture_attention
from infsa_viz.spectral import absorption_check, eigenvalue_spectrum, layer_graph, layer_spectra
from infsa_viz.spectral.graph import UNLEARNED_GAMMA


@pytest.mark.parametrize("matrix", ["native", "infsa"])
def test_every_layer_and_head_of_the_chosen_image(tiny_model, matrix):
    records = capture_attention(tiny_model, torch.randn(2, 1, 16, 16))[1]
    out = layer_spectra(records, matrix=matrix, image=1)
    config = tiny_model.config
    assert [(s.layer, str(s.head)) for s in out] == [
        (layer, str(h)) for layer in range(config.depth) for h in ["mean", *range(config.num_heads)]]
    for s in out:
        assert s.eigenvalues.shape == (17,)
        assert np.all(np.diff(np.abs(s.eigenvalues)) <= 1e-12)  # by decreasing modulus
        assert s.spectral_radius == pytest.approx(np.abs(s.eigenvalues[0]))
        assert -1 - 1e-9 <= s.cosine_left <= 1 + 1e-9
        assert set(s.row()) >= {"layer", "head", "gamma_x_radius", "absorption_valid_share", "cosine_left"}
    # The head-mean row of the last layer is the graph of image 1 (not 0), checked against the numerics.
    last = records[-1]
    op, discount = layer_graph(last, head="mean", matrix=matrix)
    g = UNLEARNED_GAMMA if last.rho is None else float(last.rho.mean())  # the rule, written out
    assert discount.as_float() == pytest.approx(g)
    mine = next(s for s in out if s.layer == last.layer and s.head == "mean")
    np.testing.assert_allclose(mine.eigenvalues, eigenvalue_spectrum(op)[1].numpy(), atol=1e-5)
    assert mine.absorption_valid_share == pytest.approx(float(absorption_check(op, g).valid_share[1]))
    assert mine.gamma == pytest.approx(g)


def test_resolve_discount_is_the_one_rule():
    from infsa_viz.spectral.graph import resolve_discount

    rho = torch.tensor([0.2, 0.4])
    assert resolve_discount(rho, 0.5).value == 0.5 and resolve_discount(rho, 0.5).source == "given"
    mean = resolve_discount(rho)
    assert mean.learned and mean.as_float() == pytest.approx(0.3)
    assert resolve_discount(rho, head=1).as_float() == pytest.approx(0.4)
    none = resolve_discount(None)
    assert none.value == UNLEARNED_GAMMA and not none.learned and "learns no rho" in none.source
    with pytest.raises(ValueError, match="gamma="):
        resolve_discount(rho, "0.5")
