"""End to end: ``streamlit run app`` served locally, opened in Debian's Chromium by Playwright.

Every page at 800 × 900, 1280 × 800 and 1920 × 1080 with the shipped models and a researcher's
own two (five models side by side), measured in Streamlit's inner scroll pane (``stMain``: the
page itself does not scroll): nothing wider than the pane except inside an element that scrolls
on its own (a table), no clipped or overlapping image, overlays at least 120 px wide, colour-bar
text of at least 12 px with ticks between the ends; every request the browser makes and every
connection the server attempts stays on this machine; a view copied from the URL opens the same
in a new browser; and the README's screenshot.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from benchmarks.app_latency import CHROMIUM_ARGS, serve, stop

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "app-side-by-side.png"
CHROMIUM = Path("/usr/bin/chromium")
RENDER_TIMEOUT_MS = 240_000  # first render: imports, the test split, five models' maps and figures
VIEWPORTS = {800: 900, 1280: 800, 1920: 1080}
PAGES = {"": "Side by side", "grid": "Methods × models", "intervention": "Intervention", "slice": "Slice",
         "checks": "Differences & sanity", "attention": "Attention", "spectral": "Spectral", "gallery": "Gallery",
         "curves": "Curves & reports", "glossary": "Glossary"}
#: Pages that draw overlays (wait for one before measuring).
WITH_IMAGES = ("", "grid", "intervention", "checks", "attention", "spectral", "gallery")
MIN_TEXT_PX = 12
#: Below this viewport width the sidebar starts collapsed (the app's draw.NARROW_PX).
NARROW_PX = 1000
MIN_IMAGE_PX = 120
NETGUARD = Path(__file__).resolve().parent / "netguard"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None,
                       reason="the playwright Python package is not installed (pip install playwright)"),
]


def _serve(args: list[str], log: Path):
    try:
        return serve(log, args)
    except RuntimeError as err:
        pytest.fail(str(err))


def _serve_guarded(args: list[str], folder: Path):
    """:func:`serve` with the network guard (``netguard/sitecustomize.py``): ``(process, URL, log of
    every outside host the server resolved or connected to)``."""
    net = folder / "outside-hosts.log"
    try:
        proc, url = serve(folder / "streamlit.log", args, env={"INFSA_VIZ_NET_LOG": str(net)}, path=[NETGUARD])
    except RuntimeError as err:
        pytest.fail(str(err))
    return proc, url, net


@pytest.fixture(scope="module")
def served(tmp_path_factory, shipped_models, own_models):
    """The app on the shipped models plus the user's two transformers models, its outside
    connections logged."""
    folder = tmp_path_factory.mktemp("app")
    proc, url, net = _serve_guarded(["--models", str(own_models.root)], folder)
    try:
        yield url, net, folder / "streamlit.log"
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def server(served):
    return served[0]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


#: Layout of the page, measured in the browser: the widths of Streamlit's inner scroll pane (the
#: main area scrolls, not the document), every element that reaches past the pane's right edge
#: outside an element that scrolls on its own, every image of the main area with its column, every
#: colour bar's visible text sizes and ticks, and elided text of metric values.
LAYOUT_JS = """() => {
  const doc = document.documentElement;
  const main = document.querySelector('[data-testid="stMain"]');
  // drawn, and not inside a closed expander
  const shown = e => e.getBoundingClientRect().width > 0 && !e.closest('details:not([open])');
  const imgs = [...main.querySelectorAll('[data-testid="stImage"] img')].filter(shown);
  const bars = [...main.querySelectorAll('.infsa-cbar')].filter(shown);
  const right = main.getBoundingClientRect().left + main.clientWidth;
  const scrolls = e => { for (let p = e.parentElement; p && p !== main; p = p.parentElement) {
      const x = getComputedStyle(p).overflowX; if (x === 'auto' || x === 'scroll' || x === 'hidden') return true; }
    return false; };
  const past = [...main.querySelectorAll('*')].filter(e => shown(e) && e.getBoundingClientRect().right > right + 1
                                                         && !scrolls(e));
  return {
    scroll: [doc.scrollWidth, doc.clientWidth],
    pane: [main.scrollWidth, main.clientWidth],
    past: past.slice(0, 5).map(e => `${e.tagName}.${e.className} ${e.getAttribute('data-testid')}: `
                                     + `${Math.round(e.getBoundingClientRect().right)} > ${Math.round(right)}`),
    images: imgs.map(img => {
      const r = img.getBoundingClientRect(), col = img.closest('[data-testid="stColumn"]') || main;
      const c = col.getBoundingClientRect();
      return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, colLeft: c.left, colRight: c.right,
              src: img.src};
    }),
    bars: bars.map(b => {
      const texts = [...b.querySelectorAll('span, .unit')].filter(e => e.offsetParent !== null);
      const r = b.getBoundingClientRect();
      const ticks = [...b.querySelectorAll('.ticks span')].filter(e => e.offsetParent !== null)
        .map(e => e.getBoundingClientRect());
      return {sizes: texts.map(e => parseFloat(getComputedStyle(e).fontSize)), ticks: ticks.length,
              touching: ticks.some((a, i) => ticks.slice(i + 1).some(c =>
                Math.min(a.right, c.right) - Math.max(a.left, c.left) > 1 && Math.min(a.bottom, c.bottom) - Math.max(a.top, c.top) > 1)),
              overflow: texts.some(e => e.getBoundingClientRect().right > r.right + 1
                                        || e.getBoundingClientRect().left < r.left - 1)};
    }),
    elided: [...main.querySelectorAll('[data-testid="stMetricValue"], [data-testid="stMetricLabel"]')]
      .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText),
    // model names (the sidebar's chosen models, captions): whole, or whole on hover (a title)
    names: [...document.querySelectorAll('[data-tag] > span, [data-testid="stImageCaption"]')]
      .filter(e => shown(e) && e.scrollWidth > e.clientWidth + 1 && !e.closest('[title]')).map(e => e.innerText),
    // chosen options of a multiselect: each chip whole inside its box (none scrolled out of sight)
    chips: [...document.querySelectorAll('[data-testid="stMultiSelect"] [data-tag]')].filter(shown).filter(c => {
      const widget = c.closest('[data-testid="stMultiSelect"]');
      let box = widget.getBoundingClientRect();  // the widget, or the innermost box that clips its chips
      if (box.right <= 0 || box.left >= window.innerWidth) return false;  // in a collapsed sidebar
      for (let p = c.parentElement; p && p !== widget; p = p.parentElement)
        if (getComputedStyle(p).overflowX !== 'visible') { box = p.getBoundingClientRect(); break; }
      const r = c.getBoundingClientRect();
      return r.right > box.right + 1 || r.left < box.left - 1 || r.bottom > box.bottom + 1; }).map(e => e.innerText),
    sidebar: (() => { const s = document.querySelector('[data-testid="stSidebar"]');
      return s ? {collapsed: s.getAttribute('data-collapsed'), width: s.getBoundingClientRect().width} : null; })(),
    mainWidth: main.clientWidth,
  };
}"""


#: True once the page has stopped changing for 1.5 s with nothing running or stale (the app's run
#: is over and every image has loaded).
SETTLED_JS = """() => {
  const busy = document.querySelector('[data-testid="stStatusWidgetRunningIcon"], '
    + '[data-testid="stStatusWidgetRunningManIcon"], [data-stale="true"]')
    || [...document.querySelectorAll('img')].some(i => !i.complete);
  const main = document.querySelector('[data-testid="stMain"]');
  const now = Date.now(), size = busy ? -1 : main.innerHTML.length;
  if (window.__settled === undefined || window.__settled.size !== size) window.__settled = {size, since: now};
  return !busy && now - window.__settled.since >= 1500;
}"""


def _settle(page, path: str) -> None:
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=RENDER_TIMEOUT_MS)
    if path in WITH_IMAGES:
        page.locator('[data-testid="stMain"] [data-testid="stImage"] img').first.wait_for(timeout=RENDER_TIMEOUT_MS)
    page.wait_for_function(SETTLED_JS, timeout=RENDER_TIMEOUT_MS, polling=100)


def _assert_fits(page, what: str) -> dict:
    """No horizontal scroll of the page or of Streamlit's inner pane, nothing past the pane's edge
    outside a scrolling element; every image inside its column, at least 120 px wide, none
    overlapping another; colour-bar text at least 12 px inside its bar, with a tick between the
    ends; no elided figure; every chosen option of a multiselect in sight (the Slice page's metrics
    once scrolled out of a one-line box)."""
    layout = page.evaluate(LAYOUT_JS)
    width, client = layout["scroll"]
    assert width <= client, f"{what}: the page scrolls horizontally ({width} > {client} px)"
    width, client = layout["pane"]
    assert width <= client, f"{what}: the main pane scrolls horizontally ({width} > {client} px)"
    assert not layout["past"], f"{what}: past the pane's right edge: {layout['past']}"
    boxes = layout["images"]
    for b in boxes:
        assert b["left"] >= b["colLeft"] - 1 and b["right"] <= b["colRight"] + 1, f"{what}: image clipped {b}"
        assert b["right"] - b["left"] >= MIN_IMAGE_PX - 1, f"{what}: an image {b['right'] - b['left']:.0f} px wide"
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            overlap_x = min(a["right"], b["right"]) - max(a["left"], b["left"])
            overlap_y = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
            assert overlap_x <= 1 or overlap_y <= 1, f"{what}: images overlap {a} {b}"
    for bar in layout["bars"]:
        assert min(bar["sizes"]) >= MIN_TEXT_PX, f"{what}: colour-bar text of {min(bar['sizes'])} px"
        assert bar["ticks"] >= 3 and not bar["overflow"] and not bar["touching"], f"{what}: colour bar {bar}"
    assert not layout["elided"], f"{what}: figures cut short {layout['elided']}"
    assert not layout["names"], f"{what}: names cut short with no title to read them whole: {layout['names'][:3]}"
    assert not layout["chips"], f"{what}: chosen options out of sight in their box: {layout['chips'][:3]}"
    return layout


def _local(url: str) -> bool:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme in ("data", "blob", "about") or parts.hostname in ("127.0.0.1", "localhost", "::1")


def _gallery_rows(layout: dict) -> list[list[dict]]:
    rows: dict[int, list[dict]] = {}
    for box in layout["images"]:
        rows.setdefault(round(box["top"]), []).append(box)
    return [rows[top] for top in sorted(rows)]


@pytest.mark.parametrize("width", list(VIEWPORTS))
def test_every_page_fits_every_width(server, browser, width, shipped_models, tmp_path):
    """Every page at three widths: screenshots (kept in ``INFSA_VIZ_SCREENSHOTS`` when set), no
    horizontal scroll in the main pane, the sidebar collapsed below 1000 px, Gallery rows full."""
    shots = Path(os.environ.get("INFSA_VIZ_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": width, "height": VIEWPORTS[width]})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    try:
        for path, title in PAGES.items():
            page.goto(f"{server}/{path}")
            _settle(page, path)
            assert page.locator('[data-testid="stException"]').count() == 0, f"{title} at {width} px"
            assert page.locator('[data-testid="stAppDeployButton"]').count() == 0  # .streamlit/config.toml
            assert page.locator('[data-testid="stMain"] h1').first.inner_text() == title
            page.screenshot(path=str(shots / f"{path or 'side-by-side'}-{width}.png"))
            layout = _assert_fits(page, f"{title} at {width} px")
            if width < NARROW_PX:  # the sidebar collapsed: the main pane has the width
                assert layout["sidebar"]["collapsed"] == "true", f"{title} at {width} px: {layout['sidebar']}"
                assert layout["mainWidth"] >= 0.9 * width, f"{title} at {width} px: main pane {layout['mainWidth']} px"
            else:
                assert layout["sidebar"]["collapsed"] == "false", f"{title} at {width} px: {layout['sidebar']}"
            if path == "gallery":  # rows fill the width: every row but the last as full as the first
                rows = _gallery_rows(layout)
                assert len(rows) >= 2 and all(len(r) == len(rows[0]) for r in rows[:-1]), [len(r) for r in rows]
                assert len(rows[-1]) <= len(rows[0])
                right = max(b["right"] for b in rows[0])
                tile = rows[0][0]["right"] - rows[0][0]["left"]
                assert right >= layout["mainWidth"] - tile, f"gallery at {width} px: rows end at {right:.0f} px"
            if path in ("", "spectral"):
                assert len(layout["bars"]) >= 1, f"{title} at {width} px: no colour bar"
            if path == "":
                captions = page.locator('[data-testid="stImageCaption"]').all_inner_texts()
                assert sum(" · " in c and "model input" not in c for c in captions) == len(shipped_models) + 2
        page.goto(f"{server}/?scale=per-map")  # a colour bar under each of the five overlays: the narrowest
        _settle(page, "")
        layout = _assert_fits(page, f"per-map colour bars at {width} px")
        assert len(layout["bars"]) == len(shipped_models) + 2
        outside = sorted({r for r in requests if not _local(r)})
        assert not outside, f"requests that leave the machine at {width} px: {outside[:5]}"
    finally:
        page.close()


def test_the_server_reaches_nothing_outside_at_start_or_in_use(served, browser):
    """The guard logs every host the server process resolves or connects to that is not this
    machine (it does log Streamlit's checkip.amazonaws.com lookup when the server listens on all
    interfaces): after a start and a visit of every page, nothing; and it listens on 127.0.0.1."""
    url, net, log = served
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    try:
        for path in PAGES:
            page.goto(f"{url}/{path}")
            _settle(page, path)
    finally:
        page.close()
    assert not net.exists() or not net.read_text().strip(), net.read_text()
    assert [r for r in requests if not _local(r)] == []
    banner = log.read_text()
    assert "URL: http://127.0.0.1:" in banner and "Network URL" not in banner and "External URL" not in banner


def _choose(page, label: str, option: str) -> None:
    page.get_by_label(label, exact=True).click()
    page.keyboard.type(option)
    page.keyboard.press("Enter")


def test_a_copied_url_reproduces_the_view(server, browser):
    first = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        first.goto(f"{server}/grid")
        _settle(first, "grid")
        _choose(first, "Method", "rollout")
        _settle(first, "grid")
        field = first.get_by_label("Image (1 … 2000)")
        field.fill("42")
        field.press("Enter")
        first.wait_for_function("() => new URL(location.href).searchParams.get('image') === '42'",
                                timeout=RENDER_TIMEOUT_MS)
        _settle(first, "grid")
        url = first.url
        assert "/grid?" in url and "method=rollout" in url
        shown = sorted(first.locator('[data-testid="stMain"] [data-testid="stImage"] img').evaluate_all(
            "imgs => imgs.map(i => new URL(i.src).pathname)"))
    finally:
        first.close()
    context = browser.new_context(viewport={"width": 1280, "height": 800})  # another browser: no shared state
    try:
        second = context.new_page()
        second.goto(url)
        _settle(second, "grid")
        assert second.locator('[data-testid="stMain"] h1').first.inner_text() == "Methods × models"
        assert second.get_by_label("Image (1 … 2000)").input_value() == "42"
        again = sorted(second.locator('[data-testid="stMain"] [data-testid="stImage"] img').evaluate_all(
            "imgs => imgs.map(i => new URL(i.src).pathname)"))
        assert again == shown  # media URLs are content hashes: the same pixels
    finally:
        context.close()


def test_readme_screenshot_of_the_main_page(tmp_path, browser, shipped_models):
    """The screenshot at the top of the README (docs/app-side-by-side.png): the shipped models at
    1280 × 800, as a newcomer sees the app. A test run leaves the tree as it was: the shot goes to a
    temporary folder unless ``INFSA_VIZ_UPDATE_SCREENSHOT=1`` asks to replace the README's."""
    log = tmp_path / "streamlit.log"
    proc, url = _serve([], log)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        try:
            page.goto(url)
            _settle(page, "")
            page.wait_for_function("() => document.body.innerText.includes('Per-map figures')",
                                   timeout=RENDER_TIMEOUT_MS)
            _settle(page, "")
            _assert_fits(page, "main page")
            shot = page.screenshot()
        finally:
            page.close()
    finally:
        stop(proc)
    from infsa_viz.io import atomic_write

    target = SCREENSHOT if os.environ.get("INFSA_VIZ_UPDATE_SCREENSHOT") == "1" else tmp_path / SCREENSHOT.name
    atomic_write(target, shot)
    assert target.stat().st_size > 10_000
