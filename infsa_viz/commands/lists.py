"""argparse ``type=`` converters shared by the commands and scripts: comma-separated values (one
converter made for each element type), output files and bounded numbers (a bad value exits 2 with one
line naming the option: argparse prefixes ``argument --seed:``)."""

from __future__ import annotations

import argparse
import math
import os
from typing import Callable, TypeVar

T = TypeVar("T")

__all__ = ["bounded", "comma_floats", "comma_ints", "comma_list", "comma_names", "count", "learning_rate",
           "output_file", "seed", "threads"]


def comma_list(convert: Callable[[str], T], what: str) -> Callable[[str], tuple[T, ...]]:
    """A converter ``"a, b,,c"`` → ``(convert("a"), convert("b"), convert("c"))``: parts stripped,
    empty parts dropped; a part ``convert`` refuses makes one argparse error naming ``what``."""

    def parse(text: str) -> tuple[T, ...]:
        try:
            return tuple(convert(part.strip()) for part in text.split(",") if part.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of {what}") from None

    parse.__name__ = f"comma_{what}"
    return parse


comma_ints = comma_list(int, "integers")
comma_floats = comma_list(float, "numbers")
comma_names = comma_list(str, "names")


def output_file(text: str) -> str:
    """An output file path: refused up front when it names an existing folder (the result would be
    computed and then fail to be written)."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is an existing folder; expected a file path")
    return text


def bounded(kind: type, low: float, high: float, *, name: str, low_open: bool = False) -> Callable[[str], int | float]:
    """A converter to ``kind`` (``int`` or ``float``) within ``[low, high]`` (``(low, high]`` with
    ``low_open``) for the option ``name``; a float must be finite. Refused where parsed, so nothing runs
    with a value that overflows later (``--seed 10**30``, ``--threads 10**12``, ``--lr 1e308``)."""
    what = "an integer" if kind is int else "a number"
    interval = (f"{'(' if low_open else '['}{low:,}, {high:,}]" if kind is int else
                f"{'(' if low_open else '['}{low:g}, {high:g}]")

    def parse(text: str) -> int | float:
        try:
            value = kind(text.strip())
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"{name}={text!r} is invalid; expected {what} in {interval}") from None
        if kind is float and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{name}={text!r} is not finite; expected a number in {interval}")
        if value < low or value > high or (low_open and value == low):
            shown = f"{value:,}" if kind is int and abs(value) >= 10_000 else f"{value:g}" if kind is float else value
            raise argparse.ArgumentTypeError(f"{name}={shown} is out of range; expected {what} in {interval}")
        return value

    parse.__name__ = kind.__name__
    return parse


def threads(name: str = "--threads") -> Callable[[str], int | float]:
    """Torch / BLAS threads: 1 to 1,024."""
    return bounded(int, 1, 1024, name=name)


def seed(name: str = "--seed") -> Callable[[str], int | float]:
    """A random seed, what every generator the toolkit seeds accepts (numpy's legacy seeds are 32-bit)."""
    return bounded(int, 0, 2**32 - 1, name=name)


def count(name: str, high: int = 2**31 - 1) -> Callable[[str], int | float]:
    """A count of images, steps, chunks … (at least one; the memory checks bound the real size)."""
    return bounded(int, 1, high, name=name)


def learning_rate(name: str = "--lr") -> Callable[[str], int | float]:
    """An optimiser's learning rate, in (0, 10]."""
    return bounded(float, 0.0, 10.0, name=name, low_open=True)
