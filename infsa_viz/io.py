"""Small file helpers: atomic writes (temp file + rename), atomic folder replacement, validated JSON
reads, the output rule (no output over an input) and the digest of a model's files."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, TypeVar

T = TypeVar("T")

__all__ = ["atomic_write", "check_new_folder", "csv_cell", "dataclass_from_json", "model_files_digest", "read_json",
           "refuse_overwriting_inputs", "replace_folder", "write_json"]

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


def refuse_overwriting_inputs(outputs: Mapping[str, str | Path | None], inputs: Iterable[str | Path | None]) -> None:
    """The output rule: refuse an output that is an input, lies inside an input folder, or is a folder
    holding an input (a model directory, a data folder, a part, a journal, a report that is read).

    Paths are compared after resolving symbolic links, so a link to an input is that input. ``None``
    and empty entries, and inputs that do not exist (``test:0``), are skipped.

    Args:
        outputs: option (``"--out"``) → a path it writes (a file, or a folder it fills).
        inputs: the paths the command reads (files or folders; a model spec without its ``?options``).

    Raises:
        ValueError: naming the option, the output and the input it would overwrite.
    """
    sources = [(str(text), Path(os.path.realpath(text))) for text in inputs if text and os.path.exists(text)]
    for option, out in outputs.items():
        if not out:
            continue
        target = Path(os.path.realpath(out))
        for text, source in sources:
            if target == source:
                how = "the input"
            elif source.is_dir() and source in target.parents:
                how = "a file of the input"
            elif target.is_dir() and target in source.parents:
                how = "a folder holding the input"
            else:
                continue
            raise ValueError(f"{option}={str(out)!r} would overwrite {how} {text!r}; choose another output path")


def check_new_folder(option: str, path: str | Path, *, overwrite: bool) -> None:
    """Refuse an output folder that is a file, or a folder already holding anything (a trained model),
    unless ``overwrite`` (then :func:`replace_folder` replaces it atomically)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{option}={str(path)!r} is a file; expected a folder (new or empty)")
    if path.is_dir() and not overwrite and any(path.iterdir()):
        held = sorted(e.name for e in path.iterdir())
        raise ValueError(f"{option}={str(path)!r} already holds {', '.join(held[:3])}{', …' if len(held) > 3 else ''}; "
                         f"choose a new folder, or pass --overwrite to replace it (atomically, once the new one is "
                         "complete)")


def replace_folder(path: str | Path, write: Callable[[Path], T]) -> T:
    """``write(folder)`` into a new folder beside ``path``, then swap it in: the old folder is renamed
    away, the new one renamed to ``path``, the old one deleted. A failure or interruption before the
    swap leaves ``path`` as it was (the unfinished folder is removed).

    Returns:
        what ``write`` returned.
    """
    import shutil

    path = Path(path)
    new = path.parent / f".{path.name}.overwrite-new"
    old = path.parent / f".{path.name}.overwrite-old"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for leftover in (new, old):  # our own names, left by a killed earlier replacement
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover)
        new.mkdir()
    except OSError as err:
        raise ValueError(f"cannot write {str(path)!r}: {err.strerror or err} ({err.filename or path.parent})") from None
    try:
        result = write(new)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    try:
        if path.exists():
            os.rename(path, old)
        os.rename(new, path)
    except OSError as err:
        if old.exists() and not path.exists():
            os.rename(old, path)
        raise ValueError(f"cannot replace {str(path)!r}: {err.strerror or err}; it is left as it was") from None
    shutil.rmtree(old, ignore_errors=True)
    return result


def model_files_digest(path: str | Path) -> str:
    """SHA-256 of what a saved model is made of: a folder's files (names and bytes, its top level,
    sorted by name) or one weights file: the key of every result stored from that model, so a
    retrained, edited or replaced model never reuses another's parts.

    Raises:
        ValueError: the path does not exist or cannot be read.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(f for f in path.iterdir() if f.is_file() and not f.name.startswith("."))
    elif path.is_file():
        files = [path]
    else:
        raise ValueError(f"{path}: does not exist; expected a model folder or weights file")
    digest = hashlib.sha256()
    try:
        for file in files:
            digest.update(f"{file.name}\0{file.stat().st_size}\0".encode())
            with open(file, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    except OSError as err:
        raise ValueError(f"{path}: cannot be read ({err.strerror or err})") from None
    return digest.hexdigest()
