"""``app/plugins.py``: a plugin that fails to load, whatever it raises, is one line naming it; the others load."""

from __future__ import annotations

import sys

import pytest


@pytest.mark.parametrize("body,kind", [("raise SystemExit(3)", "SystemExit"),
                                       ("class Stop(BaseException): pass\nraise Stop('halt')", "Stop"),
                                       ("raise RuntimeError('broken')", "RuntimeError"),
                                       ("import no_such_module_here", "ModuleNotFoundError")])
def test_a_failing_plugin_is_named_in_one_line_and_the_others_load(app, tmp_path, body, kind):
    bad, good = tmp_path / "bad_plugin.py", tmp_path / "good_plugin.py"
    bad.write_text(body + "\n")
    good.write_text("LOADED = True\n")
    problems = app.plugins.load_plugins([str(bad), str(good)])
    assert len(problems) == 1 and str(bad) in problems[0] and kind in problems[0] and "\n" not in problems[0]
    assert sys.modules[app.plugins._module_name(str(good))].LOADED
    assert app.plugins._module_name(str(bad)) not in sys.modules  # a failed plugin is not half-registered


def test_ctrl_c_while_loading_a_plugin_still_stops_the_app(app, tmp_path):
    plugin = tmp_path / "interrupted.py"
    plugin.write_text("raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        app.plugins.load_plugins([str(plugin)])
