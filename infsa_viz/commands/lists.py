"""Comma-separated option values: one argparse ``type=`` converter, made for each element type
(a bad value exits 2 with the usage line)."""

from __future__ import annotations

import argparse
from typing import Callable, TypeVar

T = TypeVar("T")

__all__ = ["comma_floats", "comma_ints", "comma_list", "comma_names"]


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
