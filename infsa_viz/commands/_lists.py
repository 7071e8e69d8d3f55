"""Comma-separated option values, as argparse ``type=`` converters (a bad value exits 2 with usage)."""

from __future__ import annotations

import argparse


def comma_ints(text: str) -> tuple[int, ...]:
    """``"16,32"`` → ``(16, 32)``; empty parts are dropped."""
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None


def comma_names(text: str) -> tuple[str, ...]:
    """``"a, b"`` → ``("a", "b")``; parts are stripped and empty parts dropped."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def comma_floats(text: str) -> tuple[float, ...]:
    """``"0.5,0.5,0.5"`` → ``(0.5, 0.5, 0.5)``; empty parts are dropped."""
    try:
        return tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers") from None
