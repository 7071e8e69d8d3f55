"""Plugins: modules that register map methods, metrics, reference maps or model formats.

``streamlit run app -- --plugins examples/toy_plugin.py mypkg.attributions`` (or
``INFSA_VIZ_PLUGINS``, ``os.pathsep``-separated) imports each once per server before the first
page; the app then lists what they register, since every page reads the library's registries.
A plugin that fails to import — whatever it raises, ``SystemExit`` included — is reported in one line
naming it, and the others still load (:mod:`infsa_viz.plugins`).
"""

from __future__ import annotations

import argparse
import os
import sys

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


def load_plugins(specs: list[str]) -> list[str]:
    """Import every plugin once, inside the library's plugin boundary (:func:`infsa_viz.plugins.load_plugins`):
    one line per plugin that did not load, ``KeyboardInterrupt`` and ``SystemExit`` included."""
    from infsa_viz.plugins import load_plugins as load

    return load(specs)
