"""Downloads of every page that draws maps: the overlays (PNG), the raw maps (NPZ: one ``.npy``
per map, ``numpy.load`` reads it) and the per-map figures (CSV, JSON).

Files are built when a button is clicked (Streamlit's deferred downloads), not on every rerun,
and a click does not rerun the page.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any, Callable, Sequence

import numpy as np
import streamlit as st

from infsa_viz.overlay import ColourScale, encode_png, overlay, overlay_grid, with_colorbar


def stem(*parts: Any) -> str:
    """A file-name stem from ``parts`` (letters, digits, ``-``)."""
    return re.sub(r"[^A-Za-z0-9]+", "-", "-".join(str(p) for p in parts)).strip("-")[:80] or "infsa-viz"


def overlay_tiles(views: Sequence[tuple[str, Any]], scale: ColourScale, *, alpha: float,
                  unit: str | None = None) -> list[tuple[str, np.ndarray]]:
    """``(title, tile)`` of each map drawn as in the app on ``scale``, its colour bar baked in."""
    out = []
    for i, (title, view) in enumerate(views):
        zoom = max(1, 288 // view.display.shape[0])
        tile = overlay(view.display, view.map, scale, i, alpha=alpha, boxes=view.boxes, zoom=zoom)
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


def overlays_png(views: Sequence[tuple[str, Any]], scale: ColourScale, *, alpha: float, ncols: int | None = None,
                 unit: str | None = None) -> bytes:
    """PNG of the maps drawn as in the app, each with its colour bar baked in, titled (ASCII)."""
    return grid_png(overlay_tiles(views, scale, alpha=alpha, unit=unit), ncols=ncols)


def array_names(names: Sequence[str]) -> list[str]:
    """A file-safe, distinct array name per map name (:func:`stem`; names that differ only in
    punctuation get ``-2``, ``-3`` … in order, so no map is lost)."""
    out: list[str] = []
    for name in names:
        base = candidate = stem(name)
        count = 1
        while candidate in out:
            count += 1
            candidate = f"{base}-{count}"
        out.append(candidate)
    return out


def maps_npz(maps: dict[str, np.ndarray]) -> bytes:
    """An ``.npz`` of the raw maps (one ``(h, w)`` float32 array per name, :func:`array_names`)."""
    buffer = io.BytesIO()
    np.savez(buffer, **{key: np.asarray(m, np.float32) for key, m in zip(array_names(list(maps)), maps.values())})
    return buffer.getvalue()


def table_csv(rows: Sequence[dict[str, Any]]) -> str:
    """CSV of a page's table rows (columns in order of first appearance), every text cell escaped against
    spreadsheet formulas (:func:`infsa_viz.io.csv_cell`): model and method names are the user's text."""
    import csv

    from infsa_viz.io import csv_cell

    columns = list(dict.fromkeys(k for row in rows for k in row))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: csv_cell(v) for k, v in row.items()})
    return buffer.getvalue()


def records_json(records: Sequence[Any]) -> str:
    """The per-map figures of :class:`~infsa_viz.evaluation.ImageRecord` s as JSON."""
    return json.dumps([r.scalars() for r in records], indent=2, default=str) + "\n"


def buttons(name: str, *, png: Callable[[], bytes] | None = None,
            maps: Callable[[], dict[str, np.ndarray]] | None = None,
            records: Callable[[], Sequence[Any]] | None = None, key: str) -> None:
    """A row of download buttons (those given), each built on click."""
    from infsa_viz.evaluation import records_csv

    wanted = [("Overlays (PNG)", png, lambda f: f(), "png", "image/png"),
              ("Raw maps (NPZ)", maps, lambda f: maps_npz(f()), "npz", "application/octet-stream"),
              ("Figures (CSV)", records, lambda f: records_csv(f()), "csv", "text/csv"),
              ("Figures (JSON)", records, lambda f: records_json(f()), "json", "application/json")]
    shown = [w for w in wanted if w[1] is not None]
    for column, (label, source, build, ext, mime) in zip(st.columns(len(shown)), shown):
        column.download_button(label, (lambda s=source, b=build: b(s)), f"{name}.{ext}", mime,
                               key=f"{key}-{ext}", on_click="ignore", width="stretch",
                               help="one .npy array per map; numpy.load reads it" if ext == "npz" else None)
