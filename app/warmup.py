"""Imports the first figures need, started in the background before anything else is imported.

The charts (Curves & reports, Spectral) read pandas through plotly: about half as long to import
as torch. The first screen does not need it (its box AUCs and curves are
:mod:`infsa_viz.metrics.auc`, NumPy only, no scikit-learn), so a daemon thread imports it while the
main thread imports torch and the library and draws the first overlays, once per server. This
module imports nothing heavy itself, so the thread starts first.
"""

from __future__ import annotations

import importlib
import threading

#: What the thread imports, in order (pandas first: see :func:`settled`).
MODULES = ("pandas",)
_lock = threading.Lock()
_thread: threading.Thread | None = None


def start() -> None:
    """Start the import thread, once per server."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=lambda: [importlib.import_module(m) for m in MODULES], daemon=True,
                                       name="infsa-viz-warm-imports")
            _thread.start()


def settled() -> None:
    """Wait for the import thread to finish. Call before plotly builds a figure: it reads
    ``sys.modules["pandas"]`` without importing it, and would see a module the thread is still
    importing. (An ``import`` statement waits by itself.)"""
    if _thread is not None:
        _thread.join()
