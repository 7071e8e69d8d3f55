"""What a link or the "Another model" box may load: only what the server was started with.

A model path from outside — a link's ``models`` parameter, the sidebar's path box — is loaded only
when it lies under a *declared root*: the shipped ``models/`` folder, a folder given with
``streamlit run app -- --models DIR`` (or :data:`catalog.MODELS_ENV`), or one given with
``-- --model-root DIR`` (or :data:`ROOTS_ENV`) whose models are not listed but may be typed in.
Any other path is refused with the same words whether or not it exists, so nothing about the
server's disk is told. A link names such a model by its root's short name and the path under it
(``models/softmax-vit4``, ``mine/run3``: :meth:`Access.link_name`), so it reopens on a colleague's
server whose roots have the same names, and shows nothing of this server's layout. Free paths (any path ``load_model`` reads) are a local-use option:
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
from typing import Any

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



def unique_name(base: str, taken: dict[str, Any] | set[str]) -> str:
    """``base``, or ``base-2``, ``base-3`` … the first not in ``taken``: a short name for a folder."""
    name, count = base, 1
    while name in taken:
        count += 1
        name = f"{base}-{count}"
    return name

@dataclass(frozen=True)
class Access:
    """The declared roots (resolved) and whether any path may be loaded."""

    roots: tuple[Path, ...]
    any_path: bool

    def root_names(self) -> dict[str, Path]:
        """A short name per declared root (its folder's name; ``-2``, ``-3`` … where two share one):
        how links and the path box name a model under it (``NAME/sub/model``) without the server's layout."""
        out: dict[str, Path] = {}
        for root in self.roots:
            out[unique_name(root.name or "root", out)] = root
        return out

    def link_name(self, spec: str) -> str:
        """How a link names the model ``spec`` (a resolved path, ``?options`` kept): ``ROOT/relative``
        under a declared root; the path itself only outside every root (``--allow-any-path``, a local server)."""
        text = spec.split("?", 1)[0]
        path = Path(text)
        for name, root in self.root_names().items():
            if path == root or path.is_relative_to(root):
                rel = path.relative_to(root).as_posix()
                return (name if rel == "." else f"{name}/{rel}") + spec[len(text):]
        return spec

    def check(self, spec: str) -> str:
        """The model spec (``PATH``, ``ROOT/relative`` with ``ROOT`` a :meth:`root_names` name, either
        with ``?key=value…``) with its path resolved, when it may be loaded; ``ValueError`` otherwise,
        in words that do not depend on what is on the disk."""
        text = spec.split("?", 1)[0].strip()
        if not text:
            raise ValueError("an empty model path")
        path = Path(text).expanduser()
        if not path.is_absolute():
            head, _, rest = text.replace("\\", "/").partition("/")
            root = self.root_names().get(head)
            if root is not None:
                path = root / rest if rest else root
            elif not self.any_path:
                raise ValueError("a model is named by a path under a folder the server was started with "
                                 f"({', '.join(sorted(self.root_names()))}/…) or by an absolute path under one")
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
