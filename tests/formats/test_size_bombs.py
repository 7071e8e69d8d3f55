"""Every reader checks every size before it builds a module (issue 30).

The files are small and honest safetensors files whose names and shapes declare a huge model: a
(65536, 1, 1, 1) patch embedding, one block index far beyond the others, 100,000 zero-size blocks,
a config asking for 100,000 layers. Building is made to fail here except on the meta device (where
the readers compute the shapes a config implies), so a reader that built first fails the test;
``tests/bad_inputs`` runs the same files through the CLI under a 3 GiB address-space limit.
"""

from __future__ import annotations

import pytest
import torch

from infsa_viz import load_model
from infsa_viz.model import VisionTransformer
from tests.bad_inputs.fixtures import build
from tests.bad_inputs.sweep2 import BOMBS, READER_CASES


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    return build(tmp_path_factory.mktemp("bombs"))


@pytest.fixture
def meta_only(monkeypatch):
    real = VisionTransformer.__init__

    def only_on_meta(self, config):
        if torch.empty(0).device.type != "meta":
            raise AssertionError(f"built a real model (depth {config.depth}, width {config.embed_dim}) before checking")
        real(self, config)

    monkeypatch.setattr(VisionTransformer, "__init__", only_on_meta)


@pytest.mark.parametrize("name", BOMBS)
def test_a_declared_size_bomb_is_refused_before_building(paths, meta_only, name):
    suffix, match = READER_CASES[name]
    with pytest.raises(ValueError, match=match):
        load_model(str(paths[name]) + suffix)


def test_the_good_files_of_each_reader_still_load(paths):
    for name, suffix in (("model", ""), ("hf_good", ""), ("timm_gray", "?num_heads=2")):
        assert load_model(str(paths[name]) + suffix).config.depth == 2
