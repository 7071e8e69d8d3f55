"""Every built-in format's sample (:attr:`ModelFormat.sample`) is that format's layout of one model:
loaded back, it gives the logits of the model it was written from (the writers invert the readers)."""

from __future__ import annotations

import pytest
import torch

from infsa_viz.formats import FORMATS, detect, load_model
from infsa_viz.formats._sample import sample_model
from infsa_viz.formats.official import to_torchvision_state_dict


@pytest.mark.parametrize("name", list(FORMATS))
def test_a_sample_loads_back_as_the_model_it_was_written_from(tmp_path, name):
    spec = FORMATS[name].sample(tmp_path)
    assert detect(spec.split("?")[0]) == name
    model = load_model(spec)
    written = sample_model(model.config.attention)
    x = torch.randn(3, 3, 16, 16)
    with torch.no_grad():
        torch.testing.assert_close(model(x), written(x), atol=1e-5, rtol=1e-5)  # official InfSA: ε' = D·ε


def test_a_sample_leaves_the_global_rng_alone():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    sample_model()
    torch.testing.assert_close(torch.rand(3), expected)


def test_weights_torchvision_has_no_place_for_are_refused():
    model = sample_model()
    model.register_buffer("extra", torch.zeros(1))
    with pytest.raises(ValueError, match="'extra' has no place in a torchvision ViT state dict"):
        to_torchvision_state_dict(model)
