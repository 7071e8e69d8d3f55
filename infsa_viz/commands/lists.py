"""argparse ``type=`` converters shared by the commands: comma-separated values (one converter
made for each element type) and output files (a bad value exits 2 with the usage line)."""

from __future__ import annotations

import argparse
import os
from typing import Callable, TypeVar

T = TypeVar("T")

__all__ = ["comma_floats", "comma_ints", "comma_list", "comma_names", "output_file", "refuse_overwriting_inputs"]


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


def refuse_overwriting_inputs(outputs: dict[str, str], inputs: list[str]) -> None:
    """Refuse an output that would overwrite an input: a file an input path names, or an existing
    file inside an input folder (a model directory, a data folder).

    Args:
        outputs: option (``"--out"``) → a path it writes.
        inputs: the paths the command reads (files or folders; a model spec without its ``?options``).

    Raises:
        ValueError: naming the option, the path and the input it would overwrite.
    """
    from pathlib import Path

    sources = [(text, Path(os.path.realpath(text))) for text in inputs if text and os.path.exists(text)]
    for option, out in outputs.items():
        target = Path(os.path.realpath(out))
        for text, source in sources:
            inside = source.is_dir() and target.is_file() and source in target.parents
            if target == source or inside:
                raise ValueError(f"{option}={out!r} would overwrite {'a file of ' if inside else ''}the input "
                                 f"{text!r}; choose another output path")
