"""How the app draws: overlays (cached PNG tiles), colour bars as page elements, and the lines
and small tables that go with them.

Drawing is the library's (:func:`infsa_viz.overlay.colour_scale`, :func:`~infsa_viz.overlay.overlay`);
the colour bar is HTML (a CSS gradient of the scale's own colours with ticks and a unit line), so
its text is page text at any width, not pixels baked into the image.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import streamlit as st

import safe
from infsa_viz.maps import METHODS
from infsa_viz.metrics.registry import Figure, image_figures
from infsa_viz.overlay import FLAT_CONTRAST, ColourScale, colour_scale, encode_png, map_contrast, overlay, to_rgb

DISPLAY_PX = 288  # overlays are zoomed (nearest) to about this side: 48 px inputs are drawn 6x
#: Ticks of a colour bar (both ends and the values between).
TICKS = 5
#: The page's styles: colour bars (text ≥ 12 px; the 2nd and 4th ticks hide in narrow columns).
CSS = """<style>
.infsa-cbar {container-type: inline-size; margin: 0 0 .6rem 0;}
.infsa-cbar .ramp {height: 14px; border-radius: 2px; border: 1px solid rgba(0,0,0,.15);}
.infsa-cbar .ticks {position: relative; height: 1.5em; font-size: 13px; line-height: 1.5;
  font-variant-numeric: tabular-nums; white-space: nowrap;}
.infsa-cbar .ticks span {position: absolute; top: 0; transform: translateX(-50%);}
.infsa-cbar .ticks span::before {content: ""; position: absolute; left: 50%; top: -3px; height: 4px;
  border-left: 1px solid currentColor;}
.infsa-cbar .ticks span:first-child {transform: none;}
.infsa-cbar .ticks span:first-child::before {left: 0;}
.infsa-cbar .ticks span:last-child {transform: translateX(-100%);}
.infsa-cbar .ticks span:last-child::before {left: auto; right: 0;}
.infsa-cbar .unit {font-size: 12px; line-height: 1.3; opacity: .8; overflow-wrap: anywhere;}
@container (max-width: 300px) {.infsa-cbar .ticks .minor {display: none;}}
@container (max-width: 150px) {
  .infsa-cbar .ticks {height: auto; display: flex; flex-wrap: wrap; justify-content: space-between; column-gap: .3rem;}
  .infsa-cbar .ticks span, .infsa-cbar .ticks span:first-child, .infsa-cbar .ticks span:last-child {
    position: static; transform: none;}
  .infsa-cbar .ticks span::before {display: none;}
}
.st-key-grid_compact_tiles [data-testid="stImage"] img {max-width: 150px;}
[data-testid="stMarkdownContainer"] table {display: table; width: 100%; max-width: 100%;}
[data-testid="stMarkdownContainer"] th, [data-testid="stMarkdownContainer"] td {overflow-wrap: anywhere;}
[data-testid="stMain"] [data-testid="stHorizontalBlock"] {flex-wrap: wrap;}
[data-testid="stMain"] [data-testid="stColumn"] {min-width: min(136px, 100%); flex-grow: 0;}
@media (max-width: 999px) {  /* narrow: figures two or one a row, never squeezed side by side */
  [data-testid="stMain"] [data-testid="stColumn"] {min-width: min(220px, 100%); flex-grow: 1;}
}
[data-tag] {max-width: 100% !important; height: auto !important;}  /* chosen model names whole (a title too) */
[data-testid="stMultiSelect"] .react-aria-ComboBox > div {max-height: none !important; height: auto !important;}
[data-testid="stMultiSelect"] .react-aria-ComboBox > div > div:first-child {  /* every chosen chip in sight */
  flex-wrap: wrap !important; overflow: visible !important; height: auto !important;}
[data-tag] > span[title] {max-width: none !important; white-space: normal !important; overflow-wrap: anywhere;
  text-overflow: clip !important; overflow: visible !important;}
.st-key-grid_header, .st-key-grid_tiles, .st-key-grid_compact_tiles {container-type: inline-size;}
@container (max-width: 640px) {  /* narrow: each method's name and colour bar on a line above its tiles */
  .st-key-grid_tiles [data-testid="stColumn"]:first-child,
  .st-key-grid_compact_tiles [data-testid="stColumn"]:first-child {flex-basis: 100%; min-width: 100%;}
  .st-key-grid_header [data-testid="stColumn"]:first-child {display: none;}
}
.st-key-gallery_tiles {container-type: inline-size;}  /* the Gallery's rows fill the width: 6, 3 or 2 a row */
.st-key-gallery_tiles [data-testid="stHorizontalBlock"] [data-testid="stColumn"] {min-width: 0; flex: 1 1 0;}
@container (max-width: 799px) {
  .st-key-gallery_tiles [data-testid="stHorizontalBlock"] [data-testid="stColumn"] {flex: 0 0 calc((100% - 2rem) / 3);}
}
@container (max-width: 420px) {
  .st-key-gallery_tiles [data-testid="stHorizontalBlock"] [data-testid="stColumn"] {flex: 0 0 calc((100% - 1rem) / 2);}
}
[data-testid="stDownloadButton"] button p {white-space: normal; overflow-wrap: anywhere;}
</style>"""


@dataclass(frozen=True)
class Display:
    """How maps are drawn: colormap (sequential; signed maps use a diverging one), opacity,
    scale mode, clipping percentile (``None``: the extremes) and whether boxes are drawn."""

    colormap: str = "inferno"
    alpha: float = 0.5
    scale: str = "shared"
    clip: float | None = 99.0
    show_boxes: bool = True


#: Below this viewport width (px) the sidebar starts collapsed and figures stack.
NARROW_PX = 1000
#: Collapses the sidebar once per browser tab when the window is narrower than :data:`NARROW_PX`
#: (Streamlit's own "auto" does so only below 768 px); the reader may open it again.
_COLLAPSE_JS = """<script>
(() => {
  const store = window.sessionStorage, key = "infsa-viz-sidebar";
  const collapse = tries => {
    const bar = document.querySelector('[data-testid="stSidebar"][data-collapsed="false"]');
    const button = bar && bar.querySelector('button[aria-label="Collapse sidebar"]');
    if (button) { button.click(); return; }
    if (tries > 0) setTimeout(() => collapse(tries - 1), 100);
  };
  if (window.innerWidth < %d && store.getItem(key) === null) { store.setItem(key, "collapsed"); collapse(50); }
})();
</script>""" % NARROW_PX


def page_style() -> None:
    """Add :data:`CSS` to the page (once per run, before anything is drawn), and collapse the
    sidebar on a narrow window (:data:`NARROW_PX`; once per tab)."""
    st.html(CSS)
    st.html(_COLLAPSE_JS, unsafe_allow_javascript=True)  # the app's own script: no outside text in it


def zoom_for(display: np.ndarray) -> int:
    """The nearest-neighbour zoom that draws an input of this side at about :data:`DISPLAY_PX`."""
    return max(1, DISPLAY_PX // display.shape[0])


@st.cache_data(show_spinner=False, max_entries=1024)
def _tile_png(display: np.ndarray, token_map: np.ndarray, scale: ColourScale, index: int, alpha: float,
              boxes: np.ndarray | None, negatives: np.ndarray | None) -> bytes:
    return encode_png(overlay(display, token_map, scale, index, alpha=alpha, boxes=boxes, distractor_boxes=negatives,
                              zoom=zoom_for(display)))


@st.cache_data(show_spinner=False, max_entries=256)
def input_png(display: np.ndarray) -> bytes:
    """PNG of a model input's pixels, zoomed (nearest) like the overlays."""
    zoom = zoom_for(display)
    return encode_png(to_rgb(np.repeat(np.repeat(display, zoom, 0), zoom, 1)))


def tile_png(view: Any, scale: ColourScale, index: int, display: Display) -> bytes:
    """PNG of one map over its model input, drawn on ``scale`` (cached by content)."""
    boxes = view.boxes if display.show_boxes else None
    negatives = view.negative_boxes if display.show_boxes else None
    return _tile_png(view.display, view.map, scale, index, display.alpha, boxes, negatives)


def tiles(display: Display, method: str, results: Sequence[tuple[Any, Any]]
          ) -> tuple[dict[str, bytes], ColourScale | None]:
    """PNG overlays (by model path, in order) of ``method``'s maps drawn together on one
    :func:`~infsa_viz.overlay.colour_scale` of exactly those maps (diverging, centred at 0, for
    a signed method); results that are error lines are left out."""
    shown = [(entry, v) for entry, v in results if not isinstance(v, str)]
    if not shown:
        return {}, None
    scale = scale_of([v.map for _, v in shown], method, display)
    return {entry.path: tile_png(v, scale, i, display) for i, (entry, v) in enumerate(shown)}, scale


def scale_of(maps: list[np.ndarray], method: str, display: Display) -> ColourScale:
    """The colour scale of ``maps`` of ``method`` drawn together as ``display`` says."""
    signed = METHODS[method].signed if method in METHODS else False
    return colour_scale(maps, display.scale, colormap=None if signed else display.colormap, signed=signed,
                        clip=display.clip)


def _tick(value: float) -> str:
    return "0" if value == 0 else f"{value:.3g}"


def colour_bar(scale: ColourScale, index: int = 0, unit: str | None = None) -> str:
    """HTML of map ``index``'s colour bar: the ramp from its lower to its upper limit in the
    scale's own colours, :data:`TICKS` evenly spaced values each at its place on the ramp (a tick
    mark above it), and the unit and clipping."""
    lo, hi = scale.limits[index]
    stops = np.linspace(lo, hi, 11)
    colours = scale.colorize(index, stops * scale.divisors[index])  # (11, 3)
    gradient = ", ".join(f"rgb({r},{g},{b}) {i * 10}%" for i, (r, g, b) in enumerate(colours.tolist()))
    values = np.linspace(lo, hi, TICKS)
    spans = "".join(f'<span class="{"major" if i in (0, TICKS // 2, TICKS - 1) else "minor"}" '
                    f'style="left: {100 * i / (TICKS - 1):g}%">{_tick(v)}</span>' for i, v in enumerate(values))
    text = html.escape(unit if unit is not None else f"{scale.unit}; {scale.clipping}")
    return (f'<div class="infsa-cbar" data-testid="infsa-colour-bar"><div class="ramp" '
            f'style="background: linear-gradient(to right, {gradient})"></div>'
            f'<div class="ticks">{spans}</div><div class="unit">{text}</div></div>')


def short_unit(scale: ColourScale) -> str:
    """The colour bar's unit line: unit and clipping, short."""
    unit = {"shared": "share of map mass", "raw": "map value", "per-map": "map value"}[scale.mode]
    return unit + ("" if scale.clip is None else f", clipped at p{scale.clip:g}")


def scale_caption(scale: ColourScale) -> str:
    """What the colours of a set of overlays mean, in one line."""
    kind = "diverging, white = 0, red > 0, blue < 0" if scale.signed else "sequential, dark = low"
    if scale.common_limits is None:
        return f"Each map stretched to its own range ({kind}; {scale.clipping}): compare shapes, not values."
    lo, hi = scale.common_limits
    why = {"shared": "each map divided by its mass Σ|m| first, so methods with different units compare",
           "raw": "raw values, comparable only within one method"}[scale.mode]
    return f"One colour scale for all maps ({scale.unit}): {lo:.4g} to {hi:.4g}, {kind}; {why}; {scale.clipping}."


def flat_note(token_map: np.ndarray) -> str | None:
    """A line flagging a *flat* map (its :func:`~infsa_viz.overlay.map_contrast` below
    :data:`~infsa_viz.overlay.FLAT_CONTRAST`): its colours on its own range would be noise; ``None``
    for a map with contrast."""
    contrast = map_contrast(token_map)
    if not (contrast < FLAT_CONTRAST or math.isnan(contrast)):  # nan: all zero, or no finite value
        return None
    if math.isnan(contrast):
        return ":orange[Flat map (no non-zero value): nothing to see in its colours.]"
    lo, hi = float(np.nanmin(token_map)), float(np.nanmax(token_map))
    what = f"contrast {contrast:.3f} < {FLAT_CONTRAST:g}; values {lo:.4g}–{hi:.4g}"
    return f":orange[Flat map ({what}): nearly uniform, any pattern in its colours is noise.]"


def validity_line(validity: dict[str, Any] | None) -> str | None:
    """One markdown line on where the absorbing-chain reading of a map's graph holds (``None`` for
    maps that do not rely on it); orange where it fails on some row."""
    if validity is None:
        return None
    share = float(np.mean(validity["row_share"]))
    percent = f"{math.floor(share * 1000) / 10:g}"  # never rounds a failing share up to 100
    layers = validity["layers"]
    where = f"layer {layers[0]}" if len(layers) == 1 else f"{len(layers)} layers"
    text = (f"absorbing-chain reading holds on {percent} % of rows ({where}; "
            f"max γ·Σ_j A_ij = {max(validity['max_row_mass']):.2f})")
    return f":green[{text}]" if validity["holds"] else f":orange[{text}]"


def figures_row(record: Any, shown: Sequence[Figure] | None = None) -> dict[str, str]:
    """One map's per-image figures as table cells: every figure the metric registry shows for single
    images (:func:`~infsa_viz.metrics.registry.image_figures`), as its declaration formats it
    (``n/a`` where undefined).

    Figures whose row mean counts only the ``"scored"`` images are shown only where the model
    predicts the class they track (``explained``), as the evaluation scores them only on correctly
    classified images: from a class of tiny probability, removing patches can multiply it and an
    area normalised by that probability means nothing."""
    predicted = int(np.argmax(record.logits)) if getattr(record, "logits", None) is not None else record.explained
    row = {}
    for figure in image_figures() if shown is None else shown:
        if figure.images == "scored" and predicted != record.explained:
            row[figure.key] = "n/a (not the predicted class)"
        else:
            row[figure.key] = figure.format_value(getattr(record, figure.key, math.nan))
    return row


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table (wraps at any width, unlike a data grid)."""
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    return "\n".join([line(header), line(["---"] * len(header)), *(line(r) for r in rows)])


def figures_table(rows: Sequence[tuple[str, Any]]) -> str:
    """The per-map figures of several models as one small markdown table, a column per figure the
    registry shows for single images (its label)."""
    shown = image_figures()
    header = ["model", *(figure.label for figure in shown)]
    body = [[label, *figures_row(record, shown).values()] for label, record in rows]
    return markdown_table(header, body)


def figures_caption() -> str:
    """What the figures table's columns are, from their declarations: their directions, and which
    figures follow only the predicted class."""
    shown = image_figures()
    directions = {figure.direction for figure in shown}
    scored = [figure.label for figure in shown if figure.images == "scored"]
    text = f"all: {directions.pop()}" if len(directions) == 1 else "; ".join(
        f"{figure.label}: {figure.direction}" for figure in shown)
    return text + (f"; {' / '.join(scored)} of the class each model predicts" if scored else "")


def figures_names() -> str:
    """The figures table's columns in a few words (``MoRF-AOC, LeRF-AUC, …``)."""
    return ", ".join(figure.label for figure in image_figures())


def prediction_line(names: Sequence[str], probabilities: np.ndarray, label: int | None) -> str:
    """``predicts **digit 3** (p = 0.912)``, with the verdict against the label when the image has
    one for this model."""
    predicted = int(probabilities.argmax())
    line = f"predicts **{_name(names, predicted)}** (p = {probabilities[predicted]:.3f})"
    if label is None:
        return line
    if predicted == label:
        return line + " :green[correct]"
    return line + f" :red[wrong: the image shows {_name(names, label)}]"


def _name(names: Sequence[str], index: int) -> str:
    """A class's name as markdown text (class names come from a model's config: escaped)."""
    return safe.md(names[index], 60) if 0 <= index < len(names) else f"class {index}"


def top_classes(names: Sequence[str], probabilities: np.ndarray, k: int = 3) -> str:
    """``"person 41%, car 20%, dog 9%"``: the ``k`` most probable classes."""
    order = np.argsort(-probabilities, kind="stable")[:k]
    return ", ".join(f"{_name(names, int(c))} {probabilities[c]:.0%}" for c in order)
