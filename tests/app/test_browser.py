"""End to end: ``streamlit run app`` served locally, opened in Debian's Chromium by Playwright."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import cv2
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "app-side-by-side.png"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
START_TIMEOUT_S = 120
RENDER_TIMEOUT_MS = 240_000  # first render: imports, the test split, three models' maps and figures

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
    pytest.mark.skipif(importlib.util.find_spec("playwright") is None,
                       reason="the playwright Python package is not installed (pip install playwright)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"streamlit exited with code {server.returncode}:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200 and response.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.5)
    pytest.fail(f"streamlit was not healthy within {START_TIMEOUT_S} s:\n{log.read_text()[-2000:]}")


def _serve(args: list[str], log: Path):
    port = _free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             *(["--", *args] if args else [])],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
        )
    return proc, f"http://127.0.0.1:{port}"


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory, shipped_models):
    """The app on the shipped models plus a copy of the first one (four models side by side)."""
    tmp_path = tmp_path_factory.mktemp("app")
    extra = tmp_path / "more"
    (extra / "copy-of-first").mkdir(parents=True)
    for f in Path(shipped_models[0].path).iterdir():
        (extra / "copy-of-first" / f.name).symlink_to(f)
    proc, url = _serve(["--models", str(extra)], tmp_path / "streamlit.log")
    try:
        _wait_healthy(url, proc, tmp_path / "streamlit.log")
        yield url
    finally:
        _stop(proc)


#: Layout of every overlay and column of the page, measured in the browser.
LAYOUT_JS = """() => {
  const doc = document.documentElement;
  const imgs = [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stImage"] img')]
    .filter(img => img.getBoundingClientRect().width > 0);
  return {
    scroll: [doc.scrollWidth, doc.clientWidth],
    images: imgs.map(img => {
      const r = img.getBoundingClientRect(), col = img.closest('[data-testid="stColumn"]');
      const c = col ? col.getBoundingClientRect() : document.querySelector('[data-testid="stMain"]').getBoundingClientRect();
      return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, colLeft: c.left, colRight: c.right,
              natural: img.naturalWidth, src: img.src};
    }),
  };
}"""


def _assert_fits(page, what: str) -> list[dict]:
    """No horizontal scroll; every image inside its column, none overlapping another."""
    layout = page.evaluate(LAYOUT_JS)
    width, client = layout["scroll"]
    assert width <= client, f"{what}: the page scrolls horizontally ({width} > {client} px)"
    boxes = layout["images"]
    assert boxes, f"{what}: no image"
    for b in boxes:
        assert b["left"] >= b["colLeft"] - 1 and b["right"] <= b["colRight"] + 1, f"{what}: image clipped {b}"
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            overlap_x = min(a["right"], b["right"]) - max(a["left"], b["left"])
            overlap_y = min(a["bottom"], b["bottom"]) - max(a["top"], b["top"])
            assert overlap_x <= 1 or overlap_y <= 1, f"{what}: images overlap {a} {b}"
    return boxes


def _wait_overlays(page, count: int) -> None:
    page.wait_for_function(
        """n => [...document.querySelectorAll('[data-testid="stImageCaption"]')]
                 .filter(c => c.innerText.includes(' · ') && !c.innerText.includes('model input')).length >= n""",
        arg=count, timeout=RENDER_TIMEOUT_MS)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=RENDER_TIMEOUT_MS)
    page.wait_for_timeout(1000)


def _choose(page, label: str, option: str) -> None:
    page.get_by_label(label, exact=True).click()
    page.keyboard.type(option)
    page.keyboard.press("Enter")


def _png(page, src: str) -> np.ndarray:
    data = page.request.get(src).body()
    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)[..., ::-1]


def test_every_view_fits_1280_with_colour_bars_and_honest_colours(server, tmp_path, shipped_models):
    from playwright.sync_api import sync_playwright

    models = len(shipped_models) + 1  # the shipped models and the copy added with --models
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(server)
            _wait_overlays(page, models)
            assert page.locator('[data-testid="stException"]').count() == 0
            _assert_fits(page, f"side by side, {models} models")
            assert page.get_by_text("Overlay grid (PNG)").count() == 1

            # two models fewer: the copy and the first model removed from the multiselect
            for _ in range(models - 2):
                page.locator('[data-testid="stMultiSelect"] svg[viewBox="0 0 10 10"]').first.locator("..").click()
                page.wait_for_timeout(300)
            page.keyboard.press("Escape")
            _wait_overlays(page, 2)
            boxes = _assert_fits(page, "side by side, 2 models")
            page.screenshot(path=str(tmp_path / "two.png"))

            # a random map drawn opaque: the colour bar is there, and its ends are not where the pixels pile up
            _choose(page, "Method", "random")
            page.get_by_text("Display", exact=True).click()
            opacity = page.locator('[data-testid="stSlider"]').filter(has_text="Map opacity").get_by_role("slider")
            opacity.focus()
            page.keyboard.press("End")
            page.wait_for_timeout(500)
            _wait_overlays(page, 2)
            boxes = _assert_fits(page, "random map")
            from infsa_viz.overlay import _lookup_table

            lut = _lookup_table("inferno").astype(int)
            for b in [b for b in boxes if b["natural"] >= 200][:2]:
                rgb = _png(page, b["src"]).astype(int)
                side = rgb.shape[1]
                tile, bar = rgb[:side], rgb[side:]
                ramp = bar[8, 6:side - 6]  # the colour bar's ramp: the colormap from its low to its high end
                assert np.abs(ramp[0] - lut[0]).max() <= 2 and np.abs(ramp[-1] - lut[255]).max() <= 2
                assert (bar[20:] < 100).all(-1).sum() > 50  # tick labels and the unit line are drawn
                at_ends = [(np.abs(tile - lut[e]).max(-1) <= 6).mean() for e in (0, 255)]
                assert sum(at_ends) < 0.05, f"{sum(at_ends):.1%} of the overlay's pixels at the colormap's ends"
        finally:
            browser.close()


@pytest.mark.parametrize("view", ["grid", "attention", "spectral", "gallery", "curves", "glossary"])
def test_other_views_fit_1280(server, view):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"{server}/{view}")
            page.locator('[data-testid="stMain"] h1').wait_for(timeout=RENDER_TIMEOUT_MS)
            if view not in ("glossary", "curves", "gallery"):  # pages with images: wait until one is drawn
                page.locator('[data-testid="stMain"] [data-testid="stImage"] img').first.wait_for(
                    timeout=RENDER_TIMEOUT_MS)
            page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                                   timeout=RENDER_TIMEOUT_MS)
            page.wait_for_timeout(2000)
            assert page.locator('[data-testid="stException"]').count() == 0
            if view in ("glossary", "curves", "gallery"):
                width, client = page.evaluate("() => [document.documentElement.scrollWidth, "
                                              "document.documentElement.clientWidth]")
                assert width <= client, f"{view}: the page scrolls horizontally"
            else:
                _assert_fits(page, view)
        finally:
            browser.close()


def test_readme_screenshot_of_the_main_page(tmp_path, shipped_models):
    """The screenshot at the top of the README (docs/app-side-by-side.png): the shipped models at
    1280 × 800, as a newcomer sees the app."""
    from playwright.sync_api import sync_playwright

    log = tmp_path / "streamlit.log"
    proc, url = _serve([], log)
    try:
        _wait_healthy(url, proc, log)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(url)
                _wait_overlays(page, len(shipped_models))
                _assert_fits(page, "main page")
                page.wait_for_timeout(1000)
                shot = page.screenshot()
            finally:
                browser.close()
    finally:
        _stop(proc)
    from infsa_viz.io import atomic_write

    atomic_write(SCREENSHOT, shot)
    assert SCREENSHOT.stat().st_size > 10_000
