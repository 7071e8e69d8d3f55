"""Option validation shared across the package: every error names the parameter, its value and
what was expected (the habit of scikit-learn's ``metrics/_ranking.py``)."""

from __future__ import annotations

import operator
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["check_choice", "check_float", "check_int", "check_memory", "machine_memory"]


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={value!r} is invalid; expected one of {list(choices)}")
    return value


def check_int(name: str, value: Any, *, minimum: int) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name}={value!r} is invalid; expected an integer >= {minimum}")
    try:
        number = operator.index(value)
    except TypeError:
        raise ValueError(f"{name}={value!r} is invalid; expected an integer >= {minimum}") from None
    if number < minimum:
        raise ValueError(f"{name}={value!r} is invalid; expected an integer >= {minimum}")
    return number


def check_float(name: str, value: Any, *, minimum: float | None = None, positive: bool = False) -> float:
    """A finite real number; ``positive`` demands ``> 0``, ``minimum`` demands ``>= minimum``."""
    expectation = "a finite number" + (" > 0" if positive else "") + (
        f" >= {minimum}" if minimum is not None else ""
    )
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name}={value!r} is invalid; expected {expectation}")
    number = float(value)
    if not np.isfinite(number) or (positive and number <= 0) or (minimum is not None and number < minimum):
        raise ValueError(f"{name}={value!r} is invalid; expected {expectation}")
    return number


def machine_memory() -> int:
    """Bytes of physical memory of this machine."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def check_memory(name: str, value: Any, *, bytes_each: float, what: str, budget: float | None = None) -> None:
    """Refuse ``value`` items of ``bytes_each`` bytes (at least) when they cannot fit ``budget`` bytes
    (default: this machine's memory); the message gives the bound.

    Raises:
        ValueError: naming ``name``, its value, the bytes it needs, the budget and the largest value that fits.
    """
    budget = machine_memory() if budget is None else budget
    if value * bytes_each > budget:
        raise ValueError(f"{name}={value:,} needs at least {value * bytes_each / 1e9:,.3g} GB ({what}), over the "
                         f"{budget / 1e9:,.3g} GB available; expected at most {max(int(budget // bytes_each), 0):,}")
