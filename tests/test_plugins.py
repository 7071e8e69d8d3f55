"""``infsa_viz/plugins.py``: whatever plugin code raises becomes one PluginError naming plugin and entry."""

from __future__ import annotations

import pytest
import torch

from infsa_viz.plugins import PluginError, load_plugins, plugin_call, plugin_of


@pytest.mark.parametrize("error,kind", [(SystemExit(0), "SystemExit: 0"), (KeyboardInterrupt(), "KeyboardInterrupt"),
                                        (IndexError("tuple index out of range"), "IndexError: tuple index")])
def test_anything_a_plugin_raises_is_one_plugin_error(error, kind):
    def entry():
        raise error

    with pytest.raises(PluginError, match=rf"^plugin 'mine' \(map method 'x'\) failed: {kind}"):
        plugin_call("mine", "map method 'x'", entry)
    assert plugin_call("mine", "x", lambda a, b=1: a + b, 1, b=2) == 3


def test_the_toolkit_is_not_a_plugin():
    from infsa_viz.maps import METHODS

    assert all(plugin_of(m) is None for m in METHODS.values() if type(m).__module__.startswith("infsa_viz."))
    assert plugin_of(test_the_toolkit_is_not_a_plugin) == __name__


def test_a_plugin_method_is_checked_and_bounded(tmp_path):
    from infsa_viz.maps import METHODS
    from infsa_viz.model import VisionTransformer, ViTConfig

    plugin = tmp_path / "odd_plugin.py"
    plugin.write_text(
        "import torch\nfrom infsa_viz.maps.base import MapMethod, register\n"
        "@register\nclass Odd(MapMethod):\n    name = 'odd_shape_test'\n    family = 'baseline'\n"
        "    description = 'x'\n    cost = 'none'\n"
        "    def _compute(self, forward, options):\n        return torch.ones(forward.inputs.shape[0], 2, 5), {}, None\n"
        "@register\nclass Quits(MapMethod):\n    name = 'quits_test'\n    family = 'baseline'\n"
        "    description = 'x'\n    cost = 'none'\n"
        "    def _compute(self, forward, options):\n        raise SystemExit(0)\n")
    assert load_plugins([str(plugin)]) == []
    try:
        torch.manual_seed(0)
        model = VisionTransformer(ViTConfig(img_size=32, in_chans=1, patch_size=8, embed_dim=16, depth=1, num_heads=2,
                                            num_classes=3)).eval()
        with pytest.raises(PluginError, match=r"plugin '.*odd_plugin.*' \(map method 'odd_shape_test' returned maps "
                                              r"of shape \(2, 2, 5\); expected \(2, 4, 4\)"):
            METHODS["odd_shape_test"].attribute(model, torch.zeros(2, 1, 32, 32))
        with pytest.raises(PluginError, match=r"\(map method 'quits_test'\) failed: SystemExit: 0"):
            METHODS["quits_test"].attribute(model, torch.zeros(2, 1, 32, 32))
    finally:
        METHODS.pop("odd_shape_test", None)
        METHODS.pop("quits_test", None)
