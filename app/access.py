"""What a link or the "Another model" box may load: only what the server was started with.

A model path from outside — a link's ``models`` parameter, the sidebar's path box — is loaded only
when it lies under a *declared root*: the shipped ``models/`` folder, a folder given with
``streamlit run app -- --models DIR`` (or :data:`catalog.MODELS_ENV`), or one given with
``-- --model-root DIR`` (or :data:`ROOTS_ENV`) whose models are not listed but may be typed in.
Any other path is refused with the same words whether or not it exists, so nothing about the
server's disk is told. Free paths (any path ``load_model`` reads) are a local-use option:
``-- --allow-any-path`` (or :data:`ANY_PATH_ENV` ``=1``), honoured only while the server listens on
a loopback address.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import catalog

__all__ = ["ANY_PATH_ENV", "ROOTS_ENV", "Access", "access", "loopback"]

#: Environment variable naming more declared roots (``os.pathsep``-separated), like ``--model-root``.
ROOTS_ENV = "INFSA_VIZ_MODEL_ROOTS"
#: Environment variable that allows any model path (``1``), like ``--allow-any-path``.
ANY_PATH_ENV = "INFSA_VIZ_ALLOW_ANY_PATH"


def loopback(address: str | None) -> bool:
    """Whether a server address (``server.address``) is reachable from this machine only."""
    if not address or address == "localhost":
        return bool(address)
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _server_address() -> str | None:
    import streamlit as st

    return st.get_option("server.address")


@dataclass(frozen=True)
class Access:
    """The declared roots (resolved) and whether any path may be loaded."""

    roots: tuple[Path, ...]
    any_path: bool

    def check(self, spec: str) -> str:
        """The model spec (``PATH`` or ``PATH?key=value…``) with its path resolved, when it may be
        loaded; ``ValueError`` otherwise, in words that do not depend on what is on the disk."""
        text = spec.split("?", 1)[0].strip()
        if not text:
            raise ValueError("an empty model path")
        path = Path(text).expanduser()
        if not path.is_absolute() and not self.any_path:
            raise ValueError("a model path must be absolute and lie under a folder the server was started with")
        resolved = path.resolve()  # symbolic links and '..' followed: the real place decides
        if self.any_path or any(resolved == root or resolved.is_relative_to(root) for root in self.roots):
            return str(resolved) + spec[len(spec.split("?", 1)[0]):]
        raise ValueError("not a model this server offers (it loads only models under the folders it was started "
                         "with; start it with -- --model-root DIR to allow more)")


def access(argv: list[str] | None = None, environ: dict[str, str] | None = None,
           address: str | None = None) -> Access:
    """The rules of this server: roots from ``--models``, ``--model-root`` and the environment,
    free paths from ``--allow-any-path`` while ``address`` (default: ``server.address``) is loopback."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--model-root", nargs="*", default=[])
    parser.add_argument("--allow-any-path", action="store_true")
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    env = os.environ if environ is None else environ
    extra = [Path(p).expanduser() for p in [*known.model_root, *env.get(ROOTS_ENV, "").split(os.pathsep)]
             if p.strip()]
    roots = [catalog.MODELS_DIR, *catalog.model_roots(argv, environ), *extra]
    wanted = known.allow_any_path or env.get(ANY_PATH_ENV, "") == "1"
    local = loopback(_server_address() if address is None else address)
    return Access(roots=tuple(dict.fromkeys(r.resolve() for r in roots)), any_path=wanted and local)
