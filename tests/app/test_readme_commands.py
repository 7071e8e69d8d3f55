"""The README's ``python3 dev.py`` commands (the Quickstart's two and the sharing one) start what
they say, checked without installing or serving: the arguments reach ``pytest`` or ``streamlit run
app``, and the app's own parsers read the ``-- --models`` and ``--data`` options they give it."""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path

import pytest

from tests.test_readme import ROOT, _commands


def _dev():
    spec = importlib.util.spec_from_file_location("dev_readme", ROOT / "dev.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("command", [c for c in _commands() if c.startswith("python3 dev.py ")])
def test_each_dev_command_starts_what_it_says(command, monkeypatch, app):
    dev = _dev()
    calls = []
    monkeypatch.setattr(dev, "ensure_env", lambda: None)
    monkeypatch.setattr(dev.subprocess, "call", lambda argv, cwd: calls.append(argv) or 0)
    args = shlex.split(command)[2:]
    assert dev.main(args) == 0
    (argv,) = calls
    if args[0] == "test":
        assert argv[1:3] == ["-m", "pytest"] and argv[3:] == args[1:]
        return
    assert argv[0].endswith("streamlit") and argv[1:3] == ["run", "app"]
    assert "--server.address" in argv  # 127.0.0.1 unless the command names another
    script = argv[argv.index("--") + 1:] if "--" in argv else []
    folders = app.inputs.data_folders(script, {})
    roots = app.catalog.model_roots(script, {})
    for option in script:  # every option the command gives the app is one its parsers read
        if option.startswith("folder:"):
            name, _, path = option[len("folder:"):].partition("=")
            assert folders[name] == Path(path).resolve()
        elif not option.startswith("--"):
            assert Path(option) in roots or any(option.endswith(str(p)) for p in folders.values()), option
