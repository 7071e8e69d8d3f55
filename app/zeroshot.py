"""CLIP zero-shot targets in the app: the prompts typed in the sidebar become each CLIP model's classes.

A model takes prompts when its directory is a whole CLIP model holding its tokenizer (the prompts are
encoded by its own text tower, :func:`infsa_viz.zero_shot.encode_prompts`), or when the server was
started with a text-embedding file (``streamlit run app -- --text-embeddings FILE.safetensors`` or
:data:`TEXT_ENV`; the prompts must be among the file's) whose width fits the model's image embedding.
Such a model is then explained as :func:`infsa_viz.zero_shot.zero_shot` makes it: its logits are the
image–text similarities, each prompt a class, and the sidebar's class picker chooses the prompt.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import streamlit as st

from infsa_viz.formats import parse_model_spec
from infsa_viz.io import read_json
from infsa_viz.zero_shot import TextEmbeddings, check_prompts, read_text_embeddings, text_embeddings

#: Environment variable naming a text-embedding file, like ``--text-embeddings``.
TEXT_ENV = "INFSA_VIZ_TEXT_EMBEDDINGS"
#: The most prompts the sidebar takes (each becomes a class of the class picker).
MAX_PROMPTS = 16
#: The longest prompt, in characters (CLIP reads 77 tokens at most).
MAX_CHARS = 200
#: Files of a tokenizer saved with ``save_pretrained`` (any one will do).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json")


def parse(text: str) -> tuple[str, ...]:
    """The prompts of the sidebar's box, one per line (blank lines skipped); an empty box has none.

    Raises:
        ValueError: one sentence: a box with no prompt but spaces, more than :data:`MAX_PROMPTS`
            prompts, a prompt longer than :data:`MAX_CHARS` characters, or the same prompt twice.
    """
    if not text:
        return ()
    prompts = [line.strip() for line in text.splitlines() if line.strip()]
    if not prompts:
        raise ValueError("the prompt box holds only spaces: type one prompt per line, e.g. a photo of a heron")
    if len(prompts) > MAX_PROMPTS:
        raise ValueError(f"{len(prompts)} prompts: at most {MAX_PROMPTS}, one per line")
    long = next((p for p in prompts if len(p) > MAX_CHARS), None)
    if long is not None:
        raise ValueError(f"a prompt of {len(long)} characters: at most {MAX_CHARS} each")
    return check_prompts(prompts, name="prompts")


def text_file(argv: list[str] | None = None, environ: dict[str, str] | None = None) -> Path | None:
    """The text-embedding file the server was started with (``-- --text-embeddings FILE`` or
    :data:`TEXT_ENV`), or ``None``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--text-embeddings", default=None)
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    given = known.text_embeddings or (os.environ if environ is None else environ).get(TEXT_ENV, "").strip()
    return Path(given).expanduser().resolve() if given else None


@st.cache_data(show_spinner=False, max_entries=8)
def _file_width(path: str, mtime: int) -> tuple[int, tuple[str, ...]]:
    text = read_text_embeddings(path)
    return int(text.embeddings.shape[1]), text.prompts


def file_prompts(file: Path) -> tuple[int, tuple[str, ...]]:
    """``(width, prompts)`` of a text-embedding file (``ValueError`` when it is not one)."""
    return _file_width(str(file), file.stat().st_mtime_ns)


def _is_clip_with_tokenizer(path: str) -> bool:
    directory = Path(parse_model_spec(path)[0])
    config = directory / "config.json"
    try:
        whole = config.is_file() and read_json(config).get("model_type") == "clip"
    except (ValueError, AttributeError):
        return False
    return whole and any((directory / name).is_file() for name in TOKENIZER_FILES)


def source_for(path: str, feature_dim: int, projected: bool, file: Path | None) -> str | None:
    """Where prompts for the model at ``path`` are encoded: its own directory (a whole CLIP model with
    its tokenizer), else the server's text-embedding ``file`` when its width is the model's image
    embedding's (``feature_dim``, a projected model only); ``None`` when the model takes no prompts."""
    if _is_clip_with_tokenizer(path):
        return str(Path(parse_model_spec(path)[0]))
    if file is not None and projected:
        try:
            width, _ = file_prompts(file)
        except (OSError, ValueError):
            return None
        return str(file) if width == feature_dim else None
    return None


@st.cache_data(show_spinner="Encoding the prompts…", max_entries=64)
def embeddings(source: str, prompts: tuple[str, ...]) -> TextEmbeddings:
    """The prompts' text embeddings from ``source`` (a CLIP directory or a text-embedding file; cached);
    ``ValueError`` in one line when they cannot be had."""
    return text_embeddings(source, prompts)
