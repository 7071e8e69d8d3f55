"""The plugin boundary: code a user registers (map methods, metrics, model formats) runs inside it.

A plugin is any module outside this package that registers something (``examples/toy_plugin.py``,
a user's ``mypkg.attributions``). Whatever its code raises while it is imported or called —
``SystemExit``, ``KeyboardInterrupt`` and any exception included — becomes one
:class:`PluginError` naming the plugin and the entry (``map method 'centre_bias'``), so a plugin
can neither end a command with exit 0 and no report nor stop the app; the CLI turns it into one
line on stderr and a non-zero exit, the app into a notice. What a plugin returns is checked by its
caller (a map's shape and finiteness: :meth:`infsa_viz.maps.base.MapMethod.attribute`).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any, Callable, TypeVar

__all__ = ["PluginError", "load_plugins", "plugin_call", "plugin_of"]

T = TypeVar("T")

#: The package whose own code is trusted (not a plugin).
_PACKAGE = __name__.split(".")[0]


class PluginError(ValueError):
    """A plugin's code failed (raised anything, ``SystemExit`` and ``KeyboardInterrupt`` included), or
    returned what its entry may not; the message names the plugin and the entry. A ``ValueError``:
    the CLI reports it in one line with exit code 2, as for any input it cannot use."""


def plugin_of(obj: Any) -> str | None:
    """The module that defines ``obj`` (a class or function) or ``obj``'s class (an instance) when it is
    not this package's: the plugin it comes from; ``None`` for the toolkit's own code."""
    module = obj.__module__ if inspect.isclass(obj) or inspect.isroutine(obj) else type(obj).__module__
    if not module or module.split(".")[0] == _PACKAGE:
        return None
    return module


def plugin_call(plugin: str, entry: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` inside the boundary: anything it raises becomes a :class:`PluginError`.

    Args:
        plugin: the plugin's name (its module, or the file it was loaded from).
        entry: what was called (``"map method 'centre_bias'"``), for the message.

    Raises:
        PluginError: ``plugin {plugin!r} ({entry}) failed: {type}: {message}``.
    """
    try:
        return fn(*args, **kwargs)
    except PluginError:
        raise
    except BaseException as error:  # noqa: BLE001 - a plugin may raise anything, SystemExit and Ctrl-C's included
        text = " ".join(str(error).split())[:300]
        raise PluginError(f"plugin {plugin!r} ({entry}) failed: {type(error).__name__}"
                          f"{': ' + text if text else ''}") from None


def _module_name(spec: str) -> str:
    path = Path(spec).expanduser().resolve()
    return "infsa_viz_plugin_" + "".join(c if c.isalnum() else "_" for c in str(path))


def _import(spec: str) -> None:
    if not spec.endswith(".py"):
        importlib.import_module(spec)
        return
    name = _module_name(spec)
    if name in sys.modules:
        return
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


def load_plugins(specs: list[str]) -> list[str]:
    """Import every plugin once (a ``.py`` file by path, otherwise a module name) inside the boundary;
    one line per plugin that did not load (the others still do)."""
    problems = []
    for spec in specs:
        try:
            plugin_call(spec, "import", _import, spec)
        except PluginError as error:
            problems.append(f"plugin {spec!r} did not load: {str(error).split(' failed: ', 1)[-1]}")
    return problems
