"""Resumable evaluation: each finished (model, method, image chunk) is journalled atomically.

``infsa-viz evaluate --out OUT.json`` keeps ``OUT.json.journal/``: one JSON file per finished
chunk (its :class:`~infsa_viz.evaluation.records.ImageRecord`\\ s, the map's options and metadata,
and the metric protocols), and ``run.json``, the fingerprint of the run (data and protocol).
A chunk is keyed by its model's name *and weights* (a SHA-256 of the state dict), its method and
its images, so a run with more models or methods reuses the chunks of the others, and changed
weights under the same name are recomputed. Killed at any point, the same command reads the
finished chunks back instead of recomputing them; the final report equals an uninterrupted run's
exactly (floats round-trip through JSON exactly, arrays keep their dtype). The default journal
is removed once the report is written; one named with ``--journal DIR`` is kept. A lock file
(``OUT.json.lock``, held with ``flock`` and released by the kernel when the process dies,
SIGKILL included) refuses a second run on the same output path.

JSON only, never pickle: a journal is data, and reading one cannot run code.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping, Sequence

import numpy as np

from ..io import atomic_write, read_json
from .records import ImageRecord

__all__ = ["Journal", "OutputLock"]

log = logging.getLogger(__name__)


def _encode(value: Any) -> Any:
    """JSON-able form of records' values: arrays keep dtype and shape, tuples stay tuples."""
    if isinstance(value, np.ndarray):
        return {"__ndarray__": value.tolist(), "dtype": value.dtype.str, "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return {"__npscalar__": value.item(), "dtype": value.dtype.str}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {"__dict__": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot journal a value of type {type(value).__name__}")


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if "__ndarray__" in value:
            return np.array(value["__ndarray__"], dtype=np.dtype(value["dtype"])).reshape(value["shape"])
        if "__npscalar__" in value:
            return np.dtype(value["dtype"]).type(value["__npscalar__"])
        if "__tuple__" in value:
            return tuple(_decode(v) for v in value["__tuple__"])
        if "__dict__" in value:
            return {_decode(k): _decode(v) for k, v in value["__dict__"]}
    return value


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    """The entries the row protocol keeps (see ``engine._merged``); others cannot be journalled."""
    return {k: v for k, v in d.items() if isinstance(v, (str, int, float, bool, list)) or v is None}


class Journal:
    """The finished chunks of one evaluation run, in ``directory``.

    Args:
        directory: the journal folder (created).
        fingerprint: what every chunk shares (data, protocol; JSON-able); a journal with another
            fingerprint is discarded with a warning.
        models: model name -> weights digest; a chunk's key holds both, so a model's chunks are
            found again only for the same weights. Names not listed are keyed by name alone.
    """

    def __init__(self, directory: str | Path, fingerprint: dict[str, Any],
                 models: Mapping[str, str] | None = None) -> None:
        self.directory = Path(directory)
        self.models = dict(models or {})
        text = json.dumps(_encode(fingerprint), sort_keys=True)
        run = self.directory / "run.json"
        if run.is_file():
            try:
                same = read_json(run) == json.loads(text)
            except ValueError:
                same = False
            if not same:
                log.warning("%s holds another run's work (different data or settings); "
                            "starting afresh", self.directory)
                shutil.rmtree(self.directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        if not run.is_file():
            atomic_write(run, text + "\n")
        self.resumed = 0

    def _path(self, model: str, method: str, chunk: Sequence[int]) -> Path:
        key = json.dumps([model, self.models.get(model), method, int(chunk[0]), len(chunk)])
        return self.directory / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"

    def load(self, model: str, method: str, chunk: Sequence[int]) -> tuple[list[ImageRecord], Any, dict[str, Any]] | None:
        """The journalled ``(records, map result summary, protocols)`` of a chunk, or ``None``."""
        path = self._path(model, method, chunk)
        if not path.is_file():
            return None
        try:
            entry = _decode(read_json(path))
            records = [ImageRecord(**r) for r in entry["records"]]
        except (ValueError, TypeError, KeyError):
            log.warning("%s is damaged; recomputing that chunk", path)
            return None
        self.resumed += 1
        return records, SimpleNamespace(options=entry["options"], metadata=entry["metadata"]), entry["protocols"]

    def save(self, model: str, method: str, chunk: Sequence[int], records: Sequence[ImageRecord], result: Any,
             protocols: dict[str, Any]) -> None:
        """Journal one finished chunk atomically."""
        entry = {"records": [{f.name: getattr(r, f.name) for f in dataclasses.fields(r)} for r in records],
                 "options": _jsonable(result.options), "metadata": _jsonable(result.metadata),
                 "protocols": protocols}
        atomic_write(self._path(model, method, chunk), json.dumps(_encode(entry)))

    def remove(self) -> None:
        """Delete the journal (after the report is written)."""
        shutil.rmtree(self.directory, ignore_errors=True)


class OutputLock:
    """An exclusive ``flock`` on ``path`` + ``.lock``; a second holder gets ``ValueError``.

    The kernel releases the lock when the process ends, however it ends, so a killed run never
    leaves a stale lock behind.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(str(path) + ".lock")
        self._fd: int | None = None

    def __enter__(self) -> "OutputLock":
        import fcntl

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise ValueError(f"cannot write next to {str(self.path)[:-5]!r}: {err.strerror or err}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ValueError(f"another evaluation is writing {str(self.path)[:-5]!r} (lock {self.path} is held); "
                             "wait for it to finish or choose another --out") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None
