"""Text from outside the app — a link's parameters, a file or folder name, an upload, a model's
class names or path — made inert before it reaches markdown or HTML.

Streamlit renders markdown in captions, labels, messages and image captions (links, images that
the browser fetches, ``:red[…]`` colours, ``$…$`` maths); plotly renders a little HTML in legends
and titles. Every such string goes through :func:`md` (markdown) or :func:`html` (HTML), and
:func:`line` keeps a notice to one line (whole: a notice cut short loses the fix it names). Text the app writes itself needs neither.
"""

from __future__ import annotations

import html as _html
import re

__all__ = ["MAX_LINE", "html", "line", "md", "short_paths"]

#: Longest line of a value from outside shown in a notice (characters; longer ends in "…"). The app's
#: own words are never cut: the fix a notice names must stay readable.
MAX_LINE = 200
#: The characters that start markdown anywhere in a line: escapes, code, emphasis, links and images
#: (and Streamlit's ``:colour[…]`` directives), HTML, KaTeX maths, strikethrough, tables, entities,
#: e-mail autolinks.
_MARKDOWN = re.compile(r"([\\`*_\[\]<>$~|&@])")
#: What starts a block at the start of a line (heading, list, quote, setext rule, numbered list).
_LEADING = re.compile(r"^(?:([#+\-=>])|(\d+)([.)]))")
_SPACE = re.compile(r"\s+")
_PATH = re.compile(r"(?<![\w.])/[^\s'\":]+")  # an absolute path, not a/b


def _one_line(value: object, limit: int | None) -> str:
    text = _SPACE.sub(" ", str(value)).strip()
    if limit is not None and len(text) > limit:
        text = text[:max(limit - 1, 0)]
        text = text[:-1] if (len(text) - len(text.rstrip("\\"))) % 2 else text  # no half escape
        text += "…"
    return text


def md(value: object, limit: int | None = MAX_LINE) -> str:
    """``value`` as literal markdown text: one line (whitespace folded), at most ``limit``
    characters (``None``: any length), every character that could start markup backslash-escaped
    (CommonMark shows an escaped character as itself, so the reader sees the text unchanged), and
    no bare URL left for the autolinker (``://`` and ``www.`` broken by an escape)."""
    text = _MARKDOWN.sub(r"\\\1", _one_line(value, limit))
    text = text.replace("://", r":\/\/").replace("www.", r"www\.")
    return _LEADING.sub(lambda m: "\\" + m[1] if m[1] else f"{m[2]}\\{m[3]}", text)


def html(value: object, limit: int | None = MAX_LINE) -> str:
    """``value`` as literal HTML text (``&``, ``<``, ``>``, quotes as entities), one line, at most
    ``limit`` characters."""
    return _html.escape(_one_line(value, limit), quote=True)


def short_paths(text: str) -> str:
    """``text`` with every absolute path cut to its last part (a one-line message has room for the
    name, and need not tell the server's folders)."""
    return _PATH.sub(lambda m: m.group(0).rstrip("/").rsplit("/", 1)[-1], text)


def line(text: str, limit: int | None = None) -> str:
    """App-written text as one line (whitespace folded), whole unless a ``limit`` is given (a label
    in a narrow widget); escape the outside parts of it with :func:`md` first, which keeps each
    to :data:`MAX_LINE` characters."""
    return _one_line(text, limit)
