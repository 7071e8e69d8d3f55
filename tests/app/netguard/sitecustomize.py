"""Imported by Python at start-up when this folder is on ``PYTHONPATH`` (``site`` imports any
``sitecustomize``): every name resolution and connection the process attempts to a host that is
not this machine is appended to the file ``$INFSA_VIZ_NET_LOG`` (one line each), then let through.
The browser test starts the app with it to show that the server reaches nothing outside."""

import os
import socket

_LOG = os.environ.get("INFSA_VIZ_NET_LOG")
_LOCAL = ("127.", "::1", "localhost", "0.0.0.0")


def _record(what: str, host: object) -> None:
    text = host.decode() if isinstance(host, bytes) else str(host if host is not None else "")
    if _LOG and text not in ("", "::") and not text.startswith(_LOCAL):
        with open(_LOG, "a", encoding="utf-8") as out:
            out.write(f"{what} {text}\n")


_getaddrinfo, _connect, _connect_ex = socket.getaddrinfo, socket.socket.connect, socket.socket.connect_ex


def _guarded_getaddrinfo(host, *args, **kwargs):
    _record("resolve", host)
    return _getaddrinfo(host, *args, **kwargs)


def _guarded_connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _record("connect", address[0])
    return _connect(self, address)


def _guarded_connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _record("connect", address[0])
    return _connect_ex(self, address)


socket.getaddrinfo = _guarded_getaddrinfo
socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex
