"""The models the app offers: where they are found, what each path is, loading, class names.

Models are the shipped ones (``models/*/``), any added with ``streamlit run app -- --models DIR``
or :data:`MODELS_ENV`, and one typed into the sidebar: any path :func:`infsa_viz.load_model`
reads. What a path is, is the format registry's answer (:func:`infsa_viz.formats.detect`: our
directories, transformers ``save_pretrained`` directories, ``.safetensors`` state dicts with
``?num_heads=…`` options, and any format a plugin registers); what a model is (its attention
variant) is its loaded config's. Each is loaded once per server (``st.cache_resource``, one lock
per model since attention capture hooks into the shared module) and reloaded when its files
change (``version``: the newest file's mtime). A CLIP model given prompts in the sidebar
(:mod:`zeroshot`) is another entry of the same path, loaded as its zero-shot model.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import streamlit as st
import torch
import zeroshot

from infsa_viz import VARIANTS, load_model
from infsa_viz.formats import detect, parse_model_spec
from infsa_viz.io import read_json
from infsa_viz.model import CONFIG_FILE
from infsa_viz.zero_shot import zero_shot

ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = ROOT / "models"
#: Environment variable naming more model folders (``os.pathsep``-separated), like ``--models``.
MODELS_ENV = "INFSA_VIZ_MODELS"
#: Separates a model's path from its zero-shot prompts in a load key (no path holds it).
_ZERO_SHOT = "\0"
#: Where a model directory records the data it was trained on (``data.name``, a benchmark).
CARD_FILE = "card.json"


@dataclass(frozen=True)
class ModelEntry:
    """A model the app may show: ``path`` (absolute; a state dict may carry ``?options``),
    ``name``, ``version`` (the newest file's mtime in ns, so a retrained model reloads) and
    ``format`` (the format registry's name for it, ``"?"`` for damaged files). Its ``variant`` is
    the loaded model's config's (``"?"`` when it does not load)."""

    path: str
    name: str
    version: int
    format: str
    prompts: tuple[str, ...] = ()
    text: str | None = None

    @property
    def source(self) -> str:
        """What is loaded, the key of every cache of the model: its path, and for a zero-shot model
        (:mod:`zeroshot`) the prompts and where their text embeddings come from (``text``)."""
        return self.path if not self.prompts else self.path + _ZERO_SHOT + json.dumps([self.text, list(self.prompts)])

    def with_prompts(self, text: str, prompts: tuple[str, ...]) -> ModelEntry:
        """This model with a zero-shot head over ``prompts`` (text embeddings from ``text``)."""
        return dataclasses.replace(self, prompts=tuple(prompts), text=text)

    @property
    def variant(self) -> str:
        model, _, _ = _load(self.source, self.version)
        return "?" if model is None else str(model.config.attention)

    @property
    def label(self) -> str:
        return f"{self.variant} · {self.name}"


def model_entry(spec: str | Path) -> ModelEntry:
    """Describe a model path (``PATH?key=value…`` allowed); ``ValueError`` naming what is wrong."""
    text, _ = parse_model_spec(spec)
    path = Path(text).expanduser()
    if not path.exists():
        raise ValueError(f"model {text!r} does not exist")
    try:
        kind = detect(path)  # the format registry says what the path is
    except ValueError:
        if not ((path / CONFIG_FILE).is_file() or path.suffix == ".safetensors"):
            raise
        kind = "?"  # a model whose files are damaged: listed, and its load error shown
    if kind != "?" and path.is_dir() and (path / CONFIG_FILE).is_file() and not any(path.glob("*.safetensors")):
        raise ValueError(f"{text!r} has a config but no weights yet")
    files = [f for f in path.iterdir() if f.is_file()] if path.is_dir() else [path]
    query = str(spec)[len(text):]
    return ModelEntry(str(path.resolve()) + query, path.name, max(f.stat().st_mtime_ns for f in files), kind)


def _models_in(root: Path) -> tuple[list[ModelEntry], list[str]]:
    """The model ``root`` is, or the models directly inside it, with a line per one that is not."""
    try:
        return [model_entry(root)], []
    except ValueError as err:
        if not root.is_dir() or (root / CONFIG_FILE).is_file():
            return [], [str(err)]
    entries, problems = [], []
    for sub in sorted(root.iterdir()):
        try:
            entries.append(model_entry(sub))
        except ValueError as err:
            if sub.is_dir():  # a file no format claims is not a model: left out silently
                problems.append(str(err))
    return entries, problems


def _order(entries: list[ModelEntry]) -> list[ModelEntry]:
    rank = {v: i for i, v in enumerate(VARIANTS)}
    return sorted(entries, key=lambda e: (rank.get(e.variant, len(rank)), e.name))


def discover_models(root: str | Path) -> list[ModelEntry]:
    """Model directories directly under ``root``, ordered as :data:`infsa_viz.VARIANTS`, then by
    name; folders that are not (yet) a model are skipped silently."""
    root = Path(root)
    return _order(_models_in(root)[0]) if root.is_dir() else []


def model_roots(argv: list[str] | None = None, environ: dict[str, str] | None = None) -> list[Path]:
    """Folders the user added: ``streamlit run app -- --models DIR …`` and :data:`MODELS_ENV`."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--models", nargs="*", default=[])
    known, _ = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    env = (os.environ if environ is None else environ).get(MODELS_ENV, "")
    return [Path(p).expanduser() for p in [*known.models, *env.split(os.pathsep)] if p.strip()]


def find_models(roots: list[Path]) -> tuple[list[ModelEntry], list[str]]:
    """The shipped models and every model under ``roots`` (a root may itself be a model), with a
    one-line problem per root or entry that is not a model."""
    entries, problems = discover_models(MODELS_DIR), []
    for root in roots:
        if not root.exists():
            problems.append(f"{root}: not a directory")
            continue
        found, issues = _models_in(root)
        problems += issues
        if not found and not issues:
            problems.append(f"{root}: no model directory inside")
        entries += [e for e in _order(found) if e.path not in {x.path for x in entries}]
    return entries, problems


@st.cache_data(show_spinner=False, ttl=5)
def available_models(roots: tuple[str, ...]) -> tuple[list[ModelEntry], list[str]]:
    """:func:`find_models`, re-scanned at most every 5 s (every rerun reads it)."""
    return find_models([Path(r) for r in roots])


def short_names(entries: list[ModelEntry], link_name: Callable[[str], str] = str) -> dict[str, str]:
    """A short, unique name per model path, for URLs: its name, or ``link_name(path)`` where two
    share one (:meth:`access.Access.link_name`: the root's short name and the path under it)."""
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.name] = counts.get(e.name, 0) + 1
    return {e.path: e.name if counts[e.name] == 1 else link_name(e.path) for e in entries}


# ----------------------------------------------------------------------------------- loading
def path_of(source: str) -> str:
    """The model path of a load key (:attr:`ModelEntry.source`)."""
    return source.partition(_ZERO_SHOT)[0]


def _zero_shot(source: str, version: int) -> torch.nn.Module:
    path, _, given = source.partition(_ZERO_SHOT)
    text, prompts = json.loads(given)
    return zero_shot(model_at(path, version)[0], zeroshot.embeddings(text, tuple(prompts)))


@st.cache_resource(show_spinner="Loading model…", max_entries=16)
def _load(source: str, version: int) -> tuple[torch.nn.Module | None, threading.Lock, str | None]:
    try:
        model = _zero_shot(source, version) if _ZERO_SHOT in source else load_model(source)
        return model.eval(), threading.Lock(), None
    except Exception as err:  # noqa: BLE001  # any model the user adds: its problem is shown, the app goes on
        line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return None, threading.Lock(), f"{type(err).__name__}: {line}"


def model_at(path: str, version: int) -> tuple[torch.nn.Module, threading.Lock]:
    """The model loaded from ``path`` at ``version`` and its lock; ``ValueError`` with a one-line
    reason when it does not load."""
    model, lock, error = _load(path, version)
    if model is None:
        raise ValueError(f"cannot load the model: {error}")
    return model, lock


def get_model(entry: ModelEntry) -> tuple[torch.nn.Module, threading.Lock]:
    """:func:`model_at` of an entry."""
    return model_at(entry.source, entry.version)


def load_error(entry: ModelEntry) -> str | None:
    """Why ``entry`` does not load, in one line, or ``None``."""
    return _load(entry.source, entry.version)[2]


def loaded(entries: list[ModelEntry]) -> list[ModelEntry]:
    """The entries that load."""
    return [e for e in entries if load_error(e) is None]


# ------------------------------------------------------------------------------ what it knows
@st.cache_data(show_spinner=False, max_entries=64)
def trained_on(path: str, version: int) -> str | None:
    """The data a model directory records it was trained on (its card's ``data.name``), or ``None``."""
    card = Path(parse_model_spec(path)[0]) / CARD_FILE
    try:
        data = read_json(card).get("data") if card.is_file() else None
    except (ValueError, AttributeError):
        return None
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) else None


def class_names(entry: ModelEntry, default: dict[str, tuple[str, ...]] | None = None) -> tuple[str, ...]:
    """The model's class names as :func:`infsa_viz.load_model` returns them (a transformers
    ``id2label``, our config's ``class_names``); else those of the data it was trained on
    (``default``: data name → names, when the counts agree); else ``class 0`` … (empty when the
    model does not load)."""
    if load_error(entry) is not None:
        return ()
    config = get_model(entry)[0].config
    if config.class_names is not None:
        return tuple(config.class_names)
    names = (default or {}).get(trained_on(entry.path, entry.version) or "")
    if names is not None and len(names) == config.num_classes:
        return names
    return tuple(f"class {i}" for i in range(config.num_classes))
