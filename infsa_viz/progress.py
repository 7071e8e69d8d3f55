"""Progress bars for long loops: tqdm on stderr, silent when stderr is not a terminal."""

from __future__ import annotations

import os
import sys
from typing import Iterable, TypeVar

T = TypeVar("T")

__all__ = ["progress"]


def progress(iterable: Iterable[T], *, desc: str | None = None, total: int | None = None,
             unit: str = "it", enabled: bool | None = None) -> Iterable[T]:
    """Wrap ``iterable`` in a tqdm bar unless stderr is not a TTY (or ``INFSA_VIZ_PROGRESS=0``).

    ``enabled`` forces the bar on or off. Without a description the bar is off too (inner
    loops of library calls stay quiet; commands name their loops).
    """
    if enabled is None:
        enabled = desc is not None and sys.stderr.isatty() and os.environ.get("INFSA_VIZ_PROGRESS", "1") != "0"
    if not enabled:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, total=total, unit=unit, leave=False, dynamic_ncols=True)
