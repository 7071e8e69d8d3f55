"""Plugins: modules that register map methods, metrics, reference maps or model formats.

``streamlit run app -- --plugins examples/toy_plugin.py mypkg.attributions`` (or
``INFSA_VIZ_PLUGINS``, ``os.pathsep``-separated) imports each once per server before the first
page; the app then lists what they register, since every page reads the library's registries.
A plugin that fails to import — whatever it raises, ``SystemExit`` included — is reported in one line
naming it, and the others still load.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path

__all__ = ["PLUGINS_ENV", "load_plugins", "plugin_specs"]

#: Environment variable naming plugins (files or module names, ``os.pathsep``-separated).
PLUGINS_ENV = "INFSA_VIZ_PLUGINS"


def plugin_specs(argv: list[str] | None = None, environ: dict[str, str] | None = None) -> list[str]:
    """Plugins the user named: ``-- --plugins FILE_OR_MODULE …`` and :data:`PLUGINS_ENV`."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--plugins", nargs="*", default=[])
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    env = (os.environ if environ is None else environ).get(PLUGINS_ENV, "")
    return [p.strip() for p in [*known.plugins, *env.split(os.pathsep)] if p.strip()]


def _module_name(spec: str) -> str:
    path = Path(spec).expanduser().resolve()
    return "infsa_viz_plugin_" + "".join(c if c.isalnum() else "_" for c in str(path))


def load_plugins(specs: list[str]) -> list[str]:
    """Import every plugin once (a ``.py`` file by path, otherwise a module name); one line per
    plugin that could not be imported."""
    problems = []
    for spec in specs:
        try:
            if spec.endswith(".py"):
                name = _module_name(spec)
                if name in sys.modules:
                    continue
                module_spec = importlib.util.spec_from_file_location(name, Path(spec).expanduser())
                if module_spec is None or module_spec.loader is None:
                    raise ImportError(f"{spec} is not an importable file")
                module = importlib.util.module_from_spec(module_spec)
                sys.modules[name] = module
                try:
                    module_spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[name]
                    raise
            else:
                importlib.import_module(spec)
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # noqa: BLE001 - a user's module may raise anything, even SystemExit
            problems.append(f"plugin {spec!r} did not load: {type(error).__name__}: {error}")
    return problems
