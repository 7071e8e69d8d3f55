"""Text from outside the app — a link's parameters, a file or folder name, an upload, a model's
class names or path — made inert before it reaches markdown or HTML.

Streamlit renders markdown in captions, labels, messages and image captions (links, images that
the browser fetches, ``:red[…]`` colours, ``$…$`` maths); plotly renders a little HTML in legends
and titles. Every such string goes through :func:`md` (markdown) or :func:`html` (HTML), and
:func:`line` keeps a notice to one short line. Text the app writes itself needs neither.
"""

from __future__ import annotations

import html as _html
import re

__all__ = ["MAX_LINE", "csv_cell", "html", "line", "md"]

#: Longest notice line (characters); longer text ends in "…".
MAX_LINE = 120
#: Every ASCII punctuation character markdown, Streamlit's directives or KaTeX may read.
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~:$&\"'=^%@/;,?])")
_SPACE = re.compile(r"\s+")


def _one_line(value: object, limit: int | None) -> str:
    text = _SPACE.sub(" ", str(value)).strip()
    if limit is not None and len(text) > limit:
        text = text[:max(limit - 1, 0)]
        text = text[:-1] if (len(text) - len(text.rstrip("\\"))) % 2 else text  # no half escape
        text += "…"
    return text


def md(value: object, limit: int | None = 200) -> str:
    """``value`` as literal markdown text: one line (whitespace folded), at most ``limit``
    characters (``None``: any length), every punctuation character backslash-escaped (CommonMark
    shows an escaped character as itself, so the reader sees the text unchanged)."""
    return _MARKDOWN.sub(r"\\\1", _one_line(value, limit))


def html(value: object, limit: int | None = 200) -> str:
    """``value`` as literal HTML text (``&``, ``<``, ``>``, quotes as entities), one line, at most
    ``limit`` characters."""
    return _html.escape(_one_line(value, limit), quote=True)


def csv_cell(value: object) -> object:
    """A CSV cell a spreadsheet will not run: text starting with ``=``, ``+``, ``-``, ``@``, a tab
    or a carriage return gets a leading ``'`` (OWASP's rule); numbers pass unchanged."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def line(text: str, limit: int = MAX_LINE) -> str:
    """App-written text shortened to one line of at most ``limit`` characters (escape the outside
    parts of it with :func:`md` first)."""
    return _one_line(text, limit)
