"""Small file helpers: atomic writes (temp file + rename) and validated JSON reads."""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["atomic_write", "csv_cell", "dataclass_from_json", "read_json", "write_json"]

#: What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection"): ``=``, ``+``, ``-``,
#: ``@``, a tab and a carriage return.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def atomic_write(path: str | Path, data: bytes | str) -> Path:
    """Write ``data`` to ``path`` via a temporary file in the same folder and ``os.replace``.

    A crash or interruption leaves either the old file or the new one, never a half-written one.

    Raises:
        ValueError: the folder cannot be created or written (the message names ``path``).
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise ValueError(f"cannot write {str(path)!r}: {err.strerror or err} ({err.filename or path.parent})") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual mode
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise ValueError(f"cannot write {str(path)!r}: {err.strerror or err}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def csv_cell(value: Any) -> Any:
    """``value`` safe for a CSV cell a spreadsheet opens: text that starts like a formula gets a leading
    ``'`` (OWASP's rule against CSV injection); numbers, and text that does not, stay as they are."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def write_json(path: str | Path, obj: Any) -> Path:
    """Atomically write ``obj`` as indented JSON (NaN written as ``NaN``, as Python reads it)."""
    return atomic_write(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def read_json(path: str | Path) -> Any:
    """Read a JSON file; ``ValueError`` naming the file if it is missing or malformed."""
    path = Path(path)
    if not path.is_file():
        if os.path.lexists(path) and not path.is_dir():
            raise ValueError(f"{path}: cannot be read (a broken symbolic link or a link loop)")
        raise ValueError(f"{path}: file not found")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply; expected a config of plain values") from None
    except OSError as err:
        raise ValueError(f"{path}: cannot be read ({err.strerror or err})") from None


def dataclass_from_json(cls: type[T], data: Any, *, source: str, **converted: Any) -> T:
    """Build the dataclass ``cls`` from a JSON object; errors name the source, the key and the problem.

    Args:
        cls: a dataclass whose ``__post_init__`` validates its fields (raising ``ValueError``).
        data: the parsed JSON value.
        source: where it came from (a file, a key), for the messages.
        **converted: fields already converted by the caller (e.g. a nested dataclass), used in
            place of ``data``'s entries.
    """
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a JSON object, got {type(data).__name__}")
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{source}: unknown keys {unknown}; expected keys among {sorted(known)}")
    try:
        return cls(**{**data, **converted})
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None
