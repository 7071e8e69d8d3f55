"""Downloads of every page that draws maps: the overlays (PNG), the raw maps (NPZ: one ``.npy``
per map, ``numpy.load`` reads it), the per-map figures (CSV, JSON), a page's table (CSV) and the
settings that made them (JSON).

The PNG is what the page shows (the same colour scale, opacity and boxes, each colour bar baked
in). Every file records the settings (:func:`settings`: the link that reopens the view, models
with their class names, method, layer, head or head fusion, discard ratio, γ, target, display,
version): the PNG in a ``tEXt`` chunk, the NPZ as ``settings`` (a JSON string), the JSON beside
the records, each CSV in ``#`` lines above its header (:func:`csv_header`). Data folders and models
are named as links name them (a short name, paths under it): no file says where the server keeps them. Files are built when
a button is clicked (Streamlit's deferred downloads), not on every rerun, and a click does not
rerun the page.
"""

from __future__ import annotations

import csv
import io
import json
import re
import struct
import zlib
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import streamlit as st

from infsa_viz import __version__
from infsa_viz.io import csv_cell
from infsa_viz.maps import METHODS
from infsa_viz.overlay import ColourScale, encode_png, overlay, overlay_grid, with_colorbar

#: The PNG text chunk's keyword that holds the settings.
PNG_KEY = "infsa-viz settings"


def stem(*parts: Any) -> str:
    """A file-name stem from ``parts`` (letters, digits, ``-``)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", "-".join(str(p) for p in parts)).strip("-")[:80] or "infsa-viz"


def overlay_tiles(views: Sequence[tuple[str, Any]], scale: ColourScale, *, display: Any,
                  unit: str | None = None) -> list[tuple[str, np.ndarray]]:
    """``(title, tile)`` of each map drawn as the app shows it on ``scale`` (``display``: its
    opacity and whether the target and distractor boxes are drawn), its colour bar baked in."""
    out = []
    for i, (title, view) in enumerate(views):
        zoom = max(1, 288 // view.display.shape[0])
        boxes = view.boxes if display.show_boxes else None
        negatives = getattr(view, "negative_boxes", None) if display.show_boxes else None
        tile = overlay(view.display, view.map, scale, i, alpha=display.alpha, boxes=boxes, distractor_boxes=negatives,
                       zoom=zoom)
        out.append((title, with_colorbar(tile, scale, i, label=unit)))
    return out


def grid_png(tiles: Sequence[tuple[str, np.ndarray]], *, ncols: int | None = None) -> bytes:
    """PNG of titled tiles in a grid (``ncols`` per row), each resized to the widest, titles in ASCII."""
    import cv2

    side = max(t.shape[1] for _, t in tiles)
    resized = [cv2.resize(t, (side, round(t.shape[0] * side / t.shape[1])), interpolation=cv2.INTER_NEAREST)
               for _, t in tiles]
    height = max(t.shape[0] for t in resized)
    padded = [np.pad(t, ((0, height - t.shape[0]), (0, 0), (0, 0)), constant_values=255) for t in resized]
    titles = [title.encode("ascii", "replace").decode() for title, _ in tiles]
    return encode_png(overlay_grid(padded, titles, ncols=ncols))


def overlays_png(views: Sequence[tuple[str, Any]], scale: ColourScale, *, display: Any, ncols: int | None = None,
                 unit: str | None = None) -> bytes:
    """PNG of the maps drawn as in the app, each with its colour bar baked in, titled (ASCII)."""
    return grid_png(overlay_tiles(views, scale, display=display, unit=unit), ncols=ncols)


def settings(sel: Any, *, extra: dict[str, Any] | None = None, method: str | None = None,
             options: dict[str, Any] | None = None) -> dict[str, Any]:
    """What made a page's maps, JSON-ready: version, image, method with its resolved options
    (layer, head or head fusion, discard ratio, γ, …), the target as chosen and as each model
    resolves it, every model with its variant and class names, the display, and ``extra``."""
    import compute
    import inputs

    method = sel.method if method is None else method
    spec = METHODS[method]
    resolved = {**spec.defaults, **(sel.options if options is None else options)}
    models = []
    for entry in sel.models:
        row: dict[str, Any] = {"name": entry.name, "variant": entry.variant, "format": entry.format,
                               "class_names": list(inputs.class_names(entry))}
        if entry.prompts:  # CLIP zero-shot: the classes are the prompts; where their text embeddings came from
            row["zero_shot"] = {"prompts": list(entry.prompts), "text": Path(str(entry.text)).name}
        if spec.explains_class and sel.image is not None:
            try:
                row["explains"] = compute.class_index(entry, sel.image, sel.target)
            except ValueError as err:
                row["explains"] = str(err)
        models.append(row)
    import urlstate

    image = sel.image
    return {"infsa_viz": __version__, "link": urlstate.link(),
            "image": None if image is None else image.source,
            "image_set": None if image is None else image.set_key or "upload",
            "image_number": None if image is None or image.index is None else image.index + 1,
            "method": method, "family": spec.family, "options": resolved,
            "layer": resolved.get("layer"), "head": resolved.get("head"),
            "head_fusion": resolved.get("head") if "head" in resolved and not spec.per_layer else None,
            "discard_ratio": resolved.get("discard_ratio"), "gamma": resolved.get("gamma", None),
            "gamma_source": ("learned rho (fixed default without one)" if resolved.get("gamma") is None else "chosen")
            if "gamma" in resolved else None,
            "target": sel.target if spec.explains_class else None, "models": models,
            "display": {k: getattr(sel.display, k) for k in ("colormap", "alpha", "scale", "clip", "show_boxes")},
            **(extra or {})}


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, default=str, ensure_ascii=True) + "\n"


def png_with_text(png: bytes, text: str, key: str = PNG_KEY) -> bytes:
    """``png`` with a ``tEXt`` chunk ``key``: ``text`` (ASCII) after its header chunk."""
    body = key.encode("latin-1") + b"\0" + text.encode("ascii", "replace")
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    end = 8 + 4 + 4 + 13 + 4  # signature, then IHDR: length, type, 13 bytes of data, CRC
    return png[:end] + chunk + png[end:]


def csv_header(settings: dict[str, Any] | None) -> str:
    """The lines that open every CSV the app exports: ``# link: …`` (reopens the view) and
    ``# settings: {…}`` (one line of JSON); ``pandas.read_csv(f, comment="#")`` skips them."""
    if settings is None:
        return ""
    return (f"# link: {settings.get('link', '')}\n"
            f"# settings: {json.dumps(settings, default=str, ensure_ascii=True)}\n")


def table_csv(rows: Sequence[dict[str, Any]], settings: dict[str, Any] | None = None) -> str:
    """CSV of a page's table rows (columns in order of first appearance), every text cell escaped against
    spreadsheet formulas (:func:`infsa_viz.io.csv_cell`): model, method and class names are outside text;
    opened by :func:`csv_header` when ``settings`` are given."""
    buffer = io.StringIO()
    buffer.write(csv_header(settings))
    columns = list(dict.fromkeys(k for row in rows for k in row))
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_cell(v) for k, v in row.items()})
    return buffer.getvalue()


def array_names(names: Sequence[str], *, taken: Sequence[str] = ()) -> list[str]:
    """A file-safe, distinct array name per map name (:func:`stem`; names that differ only in
    punctuation, or that meet a ``taken`` name, get ``-2``, ``-3`` … in order, so no map is lost)."""
    out: list[str] = []
    for name in names:
        base = candidate = stem(name)
        count = 1
        while candidate in out or candidate in taken:
            count += 1
            candidate = f"{base}-{count}"
        out.append(candidate)
    return out


def maps_npz(maps: dict[str, np.ndarray], settings: dict[str, Any] | None = None) -> bytes:
    """An ``.npz`` of the raw maps (one ``(h, w)`` float32 array per name, :func:`array_names`) and, when
    given, the settings as ``settings`` (a JSON string: ``json.loads(str(npz["settings"]))``)."""
    buffer = io.BytesIO()
    names = array_names(list(maps), taken=() if settings is None else ("settings",))
    arrays = {key: np.asarray(m, np.float32) for key, m in zip(names, maps.values())}
    if settings is not None:
        arrays["settings"] = np.array(_json(settings))
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def records_json(records: Sequence[Any], settings: dict[str, Any] | None = None) -> str:
    """The per-map figures of :class:`~infsa_viz.evaluation.ImageRecord` s as JSON (with the
    settings that made them, when given)."""
    rows = [r.scalars() for r in records]
    return _json(rows if settings is None else {"settings": settings, "records": rows})


def buttons(name: str, *, png: Callable[[], bytes] | None = None,
            maps: Callable[[], dict[str, np.ndarray]] | None = None,
            records: Callable[[], Sequence[Any]] | None = None,
            table: Callable[[], Sequence[dict[str, Any]]] | None = None,
            settings: dict[str, Any] | None = None, key: str) -> None:
    """A row of download buttons (those given, and the settings when given), each built on
    click; the settings travel inside the PNG, the NPZ and the JSON too."""
    from infsa_viz.evaluation import records_csv

    text = None if settings is None else _json(settings)
    wanted = [("Overlays (PNG)", png, lambda f: f() if text is None else png_with_text(f(), text), "png",
               "image/png"),
              ("Raw maps (NPZ)", maps, lambda f: maps_npz(f(), settings), "npz", "application/octet-stream"),
              ("Figures (CSV)", records, lambda f: csv_header(settings) + records_csv(f()), "csv", "text/csv"),
              ("Figures (JSON)", records, lambda f: records_json(f(), settings), "json", "application/json"),
              ("Table (CSV)", table, lambda f: table_csv(f(), settings), "table.csv", "text/csv"),
              ("Settings (JSON)", (lambda: text) if text is not None else None, lambda f: f(), "settings.json",
               "application/json")]
    shown = [w for w in wanted if w[1] is not None]
    columns = st.columns(min(len(shown), 3))  # at most three a row: labels stay whole in narrow columns
    for i, (label, source, build, ext, mime) in enumerate(shown):
        columns[i % len(columns)].download_button(
            label, (lambda s=source, b=build: b(s)), f"{name}.{ext}", mime, key=f"{key}-{ext}", on_click="ignore",
            width="stretch", help="one .npy array per map; numpy.load reads it" if ext == "npz" else None)
