"""Resumable evaluation: each finished (model, method, image chunk) is journalled atomically.

``infsa-viz evaluate --out OUT.json`` keeps ``OUT.json.journal/`` (or ``--journal DIR``)::

    DIR/journal.json            the marker: this folder is a journal (written first)
    DIR/journal.lock            held with flock while a run uses the journal
    DIR/<settings>/run.json     one keyed set per fingerprint of the run (data description, settings)
    DIR/<settings>/<chunk>.json one finished chunk: its ImageRecords, the map's options and metadata,
                                and the metric protocols

A chunk is keyed by everything that shapes its result: its model's name, weights *and whole config*
(a SHA-256 of the state dict and of the architecture and preprocessing, :func:`model_digest`), its
method with the method's version and default options, its image indices and a SHA-256 of its
images' bytes, labels, boxes and names; the run's settings (every metric's and map option, the
data's description) and the toolkit's version of each selected metric
(:attr:`~infsa_viz.metrics.registry.Metric.version`) key the set it lives in. So a run with more
models or methods reuses the chunks of the others; changed weights, an edited ``config.json``
(attention variant, normalisation, resize) or a metric whose definition changed are recomputed;
and changing one image recomputes only the chunks that hold it. Other settings start another keyed
set beside the first; nothing is wiped. Killed at any point, the same command reads
the finished chunks back instead of recomputing them; the final report equals an uninterrupted
run's exactly (floats round-trip through JSON exactly, arrays keep their dtype).

The journal owns only what it wrote: a folder holding anything else (a user's folder named by
mistake, an older journal) is refused with one line and left as it is; :meth:`Journal.remove`
deletes the journal's own files and nothing else. Every run holds a shared ``flock`` on
``journal.lock`` while it uses the journal (released by the kernel when the process dies, SIGKILL
included): runs may share a journal (each writes whole chunk files atomically; two that compute
the same chunk write the same bytes), but the journal is removed only under an exclusive lock,
never under a running job. :class:`OutputLock` (``OUT.json.lock``) refuses a second run on the
same output path.

JSON only, never pickle: a journal is data, and reading one cannot run code.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping, Sequence

import numpy as np

from ..io import atomic_write, read_json
from .records import ImageRecord

__all__ = ["Journal", "OutputLock", "model_digest", "run_fingerprint"]

log = logging.getLogger(__name__)

MARKER, LOCK, RUN = "journal.json", "journal.lock", "run.json"
#: What the marker holds; a folder whose marker says otherwise is not ours to write.
_MARK = {"infsa_viz": "evaluation journal", "layout": 2}
_SET = re.compile(r"^[0-9a-f]{16}$")
#: Files of a keyed set: run.json, chunks, and the temporary files of an interrupted atomic write.
_SET_FILE = re.compile(r"^(run|[0-9a-f]{24})\.json$|^\.(run|[0-9a-f]{24})\.json\.[^/]+\.tmp$")
_TOP_FILE = re.compile(r"^(journal\.json|journal\.lock|\.journal\.json\.[^/]+\.tmp)$")


def model_digest(model: Any) -> str:
    """SHA-256 of what shapes a model's outputs: its state dict (names, dtypes, shapes and bytes) and its
    whole config (architecture, preprocessing, class names): what keys its journalled chunks."""
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        array = tensor.detach().cpu().contiguous()
        digest.update(f"{name}{array.dtype}{tuple(array.shape)}".encode())
        digest.update(array.numpy().tobytes())
    config = getattr(model, "config", None)
    if config is not None:
        settings = config.to_dict() if hasattr(config, "to_dict") else repr(config)
        digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def run_fingerprint(data: Any, protocol: Any, world_size: int) -> dict[str, Any]:
    """What every journalled chunk of a run shares: the data's description and names, the settings,
    the toolkit's version of each selected metric and the process count (models, methods and image
    contents are per chunk)."""
    from ..metrics.registry import METRICS

    return {"data": data.description, "names": list(data.names or []), "protocol": protocol.to_dict(),
            "metric_versions": {name: METRICS[name].version for name in protocol.metrics},
            "world_size": world_size}


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


def migrate_chunk(entry: dict[str, Any]) -> dict[str, Any]:
    """A decoded chunk file in today's names (chunks keep their keys: no name below is hashed into one).

    Chunks written before the explained class had one name (issue 46) hold ``ImageRecord.scored`` and
    perturbation protocols with ``"score": "target" | "predicted"``; both are now ``explained``.
    """
    def renamed(value: Any) -> Any:
        if isinstance(value, dict):
            return {("explained" if k == "score" and v in ("target", "predicted") else k): renamed(v)
                    for k, v in value.items()}
        return [renamed(v) for v in value] if isinstance(value, list) else value

    records = [{("explained" if k == "scored" else k): v for k, v in r.items()} for r in entry["records"]]
    return {**entry, "records": records, "protocols": renamed(entry["protocols"])}


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    """The entries the row protocol keeps (see ``engine._merged``); others cannot be journalled."""
    return {k: v for k, v in d.items() if isinstance(v, (str, int, float, bool, list)) or v is None}


def _update(digest: Any, value: Any) -> None:
    """Feed one value (array, number, string or None) into ``digest``, with its dtype and shape."""
    array = np.ascontiguousarray(np.asarray(value if value is not None else []))
    digest.update(f"{array.dtype.str}{array.shape}".encode())
    digest.update(array.tobytes() if array.dtype != object else repr(array.tolist()).encode())


def _chunk_digest(data: Any, chunk: Sequence[int]) -> str:
    """SHA-256 of a chunk's inputs: each image's bytes, label, boxes, negative boxes and labels, name."""
    digest = hashlib.sha256()
    for i in chunk:
        _update(digest, data.images[i])
        _update(digest, data.labels[i])
        _update(digest, data.boxes[i])
        for extra in (data.negative_boxes, data.negative_labels):
            _update(digest, None if extra is None else extra[i])
        _update(digest, data.names[i] if data.names else "")
    return digest.hexdigest()


def _older_journal(directory: Path) -> bool:
    """Whether ``directory`` is a first-layout journal (no marker): a ``run.json`` object at the top and
    nothing but its chunks (``<24 hex>.json``) and their temporary files beside it. A folder that holds
    anything else is a user's, whatever its ``run.json`` says."""
    run = directory / RUN
    try:
        found = read_json(run) if run.is_file() and not run.is_symlink() else None
    except ValueError:
        return False
    if not isinstance(found, dict):
        return False
    others = [e for e in directory.iterdir() if e.name != RUN]
    return bool(others) and all(e.is_file() and not e.is_symlink() and _SET_FILE.match(e.name) for e in others)


def _foreign(directory: Path) -> list[str]:
    """The entries of ``directory`` a journal did not write (relative names)."""
    out = []
    for entry in sorted(directory.iterdir()):
        if entry.is_dir() and not entry.is_symlink() and _SET.match(entry.name):
            out += [f"{entry.name}/{f.name}" for f in sorted(entry.iterdir())
                    if not (f.is_file() and not f.is_symlink() and _SET_FILE.match(f.name))]
        elif not (entry.is_file() and not entry.is_symlink() and _TOP_FILE.match(entry.name)):
            out.append(entry.name + ("/" if entry.is_dir() else ""))
    return out


class Journal:
    """The finished chunks of evaluation runs, in ``directory``; a context manager holding its lock.

    Args:
        directory: the journal folder: a new or empty folder (created), or an earlier journal.
        fingerprint: what every chunk of this run shares (data description, settings; JSON-able),
            e.g. :func:`run_fingerprint`; each fingerprint gets its own keyed set in the folder.
        models: model name -> model digest (:func:`model_digest`: weights and config); a chunk's key
            holds both, so a model's chunks are found again only for the same weights and config.
            Names not listed are keyed by name alone.
        data: the :class:`~infsa_viz.data.LabelledImages` the chunk indices refer to; a chunk's key
            then holds a SHA-256 of its images, labels, boxes and names, so a chunk is reused only
            for the same inputs. Without it, chunks are keyed by their indices and ``fingerprint``
            must describe the data.
        lock: hold a shared lock on ``journal.lock`` while in use (default); the other
            processes of a torchrun job pass ``False`` (rank 0 holds it for the job).

    Raises:
        ValueError: ``directory`` is a file, or holds anything a journal did not write (named; left
            untouched).
    """

    def __init__(self, directory: str | Path, fingerprint: dict[str, Any],
                 models: Mapping[str, str] | None = None, *, data: Any = None, lock: bool = True) -> None:
        self.directory = Path(directory)
        self.models = dict(models or {})
        self.data = data
        self.resumed = 0
        self._fd: int | None = None
        self._digests: dict[tuple[int, ...], str] = {}
        self._check_ours()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ValueError(f"cannot create the journal {str(self.directory)!r}: {err.strerror or err}") from None
        if lock:
            self._lock()
        if not (self.directory / MARKER).is_file():
            atomic_write(self.directory / MARKER, json.dumps(_MARK) + "\n")
        text = json.dumps(_encode(fingerprint), sort_keys=True)
        self.run_directory = self.directory / hashlib.sha256(text.encode()).hexdigest()[:16]
        run = self.run_directory / RUN
        if run.is_file() and read_json(run) != json.loads(text):
            raise ValueError(f"{run}: does not hold this run's settings; the journal was changed by hand")
        if not run.is_file():
            atomic_write(run, text + "\n")
        others = [d.name for d in self.directory.iterdir() if d.is_dir() and d != self.run_directory]
        if others:
            log.info("%s also keeps %d set(s) of chunks of other data or settings", self.directory, len(others))

    def _check_ours(self) -> None:
        """Refuse a path that is a file, or a folder with anything a journal did not write."""
        where = self.directory
        if where.exists() and not where.is_dir():
            raise ValueError(f"journal {str(where)!r} is a file; expected a folder (or a path to create)")
        if not where.is_dir() or not any(where.iterdir()):
            return
        if (where / MARKER).is_file():
            try:
                mark = read_json(where / MARKER)
            except ValueError:
                mark = None
            if mark != _MARK:
                raise ValueError(f"{where / MARKER}: not a journal of this version ({mark!r}); choose another "
                                 "journal folder")
        elif _older_journal(where):
            raise ValueError(f"journal {str(where)!r} is an older journal (run.json at the top, chunks without their "
                             "images' hash); its chunks cannot be reused: delete it or choose another folder")
        foreign = _foreign(where)
        if foreign:
            raise ValueError(f"journal {str(where)!r} holds files this toolkit did not write ({', '.join(foreign[:3])}"
                             f"{', …' if len(foreign) > 3 else ''}); it is left as it is: choose an empty or new folder")

    def _lock(self) -> None:
        self._fd = _flock(self.directory / LOCK, "", shared=True)  # shared: never busy

    def close(self) -> None:
        """Release the lock (the kernel does it too when the process ends)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def _key(self, model: str, method: str, chunk: Sequence[int]) -> str:
        """What a chunk is filed under (JSON text): model name and digest, method with its version and
        defaults, first index, length and the images' digest. Stored in the chunk and compared on reuse."""
        from ..maps import METHODS

        key = tuple(int(i) for i in chunk)
        if self.data is not None and key not in self._digests:
            self._digests[key] = _chunk_digest(self.data, key)
        spec = METHODS.get(method)
        version = None if spec is None else [spec.version, json.dumps(spec.defaults, sort_keys=True, default=str)]
        return json.dumps([model, self.models.get(model), method, version, key[0], len(key), self._digests.get(key)])

    def _path(self, model: str, method: str, chunk: Sequence[int]) -> Path:
        text = self._key(model, method, chunk)
        return self.run_directory / f"{hashlib.sha256(text.encode()).hexdigest()[:24]}.json"

    def load(self, model: str, method: str, chunk: Sequence[int]) -> tuple[list[ImageRecord], Any, dict[str, Any]] | None:
        """The journalled ``(records, map result summary, protocols)`` of a chunk, or ``None``."""
        path = self._path(model, method, chunk)
        if not path.is_file():
            return None
        try:
            entry = migrate_chunk(_decode(read_json(path)))
            records = [ImageRecord(**r) for r in entry["records"]]
        except (ValueError, TypeError, KeyError):
            log.warning("%s is damaged; recomputing that chunk", path)
            return None
        if entry.get("key") != self._key(model, method, chunk):  # a chunk copied in from another run or model
            log.warning("%s was made by another model, method or images than the one it is filed under "
                        "(model %r, method %r); recomputing that chunk", path, model, method)
            return None
        self.resumed += 1
        return records, SimpleNamespace(options=entry["options"], metadata=entry["metadata"]), entry["protocols"]

    def save(self, model: str, method: str, chunk: Sequence[int], records: Sequence[ImageRecord], result: Any,
             protocols: dict[str, Any]) -> None:
        """Journal one finished chunk atomically."""
        entry = {"key": self._key(model, method, chunk),
                 "records": [{f.name: getattr(r, f.name) for f in dataclasses.fields(r)} for r in records],
                 "options": _jsonable(result.options), "metadata": _jsonable(result.metadata),
                 "protocols": protocols}
        atomic_write(self._path(model, method, chunk), json.dumps(_encode(entry)))

    def has_chunks(self) -> bool:
        """Whether any keyed set of the journal holds a finished chunk (of this run or another)."""
        return any(f.name != RUN and _SET_FILE.match(f.name) and not f.name.startswith(".")
                   for sub in self.directory.iterdir() if sub.is_dir() and _SET.match(sub.name)
                   for f in sub.iterdir())

    def remove(self) -> None:
        """Delete the journal's own files (every keyed set, the marker, the lock) and the folders left
        empty; anything else found in the folder stays where it is. A journal another run is using
        (it holds the shared lock) is kept, with a warning."""
        if not self.directory.is_dir():
            self.close()
            return
        import fcntl

        fd = self._fd if self._fd is not None else os.open(self.directory / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        self._fd = fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("%s is kept: another evaluation is using it", self.directory)
            self.close()
            return
        for sub in self.directory.iterdir():
            if sub.is_dir() and not sub.is_symlink() and _SET.match(sub.name):
                for f in sub.iterdir():
                    if f.is_file() and not f.is_symlink() and _SET_FILE.match(f.name):
                        f.unlink(missing_ok=True)
                _rmdir_if_empty(sub)
        for name in (MARKER, LOCK):
            (self.directory / name).unlink(missing_ok=True)
        self.close()
        _rmdir_if_empty(self.directory)


def _rmdir_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # not empty: something the journal did not write appeared; it stays
        log.warning("%s is kept: it holds files the journal did not write", folder)


def _flock(path: Path, busy: str, *, shared: bool = False) -> int:
    """A non-blocking ``flock`` on ``path`` (created), exclusive (recording this process's pid) or shared; its fd.

    Raises:
        ValueError: ``busy`` when another process holds a conflicting lock, or the file cannot be created.
    """
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise ValueError(f"cannot write next to {str(path)!r}: {err.strerror or err}") from None
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ValueError(busy) from None
    if not shared:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    return fd


class OutputLock:
    """An exclusive ``flock`` on ``path`` + ``.lock`` (the file holds the holder's pid); a second holder
    gets ``ValueError``.

    The kernel releases the lock when the process ends, however it ends, so a killed run never
    leaves a stale lock behind.

    Args:
        path: the output the lock guards.
        holder: who a second holder is told holds it (default ``"another evaluation"``).
        option: the option that chooses another output (default ``"--out"``).
    """

    def __init__(self, path: str | Path, *, holder: str = "another evaluation", option: str = "--out") -> None:
        self.path = Path(str(path) + ".lock")
        self.holder, self.option = holder, option
        self._fd: int | None = None

    def __enter__(self) -> "OutputLock":
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ValueError(f"cannot write next to {str(self.path)[:-5]!r}: {err.strerror or err}") from None
        self._fd = _flock(self.path, f"{self.holder} is writing {str(self.path)[:-5]!r} (lock {self.path} is held); "
                          f"wait for it to finish or choose another {self.option}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None
