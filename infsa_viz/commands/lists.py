"""argparse ``type=`` converters shared by the commands: comma-separated values (one converter
made for each element type) and output files (a bad value exits 2 with the usage line)."""

from __future__ import annotations

import argparse
import os
from typing import Callable, TypeVar

T = TypeVar("T")

__all__ = ["comma_floats", "comma_ints", "comma_list", "comma_names", "output_file"]


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
