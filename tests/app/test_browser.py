"""End to end: ``streamlit run app`` served locally, opened in Debian's Chromium by Playwright."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


@pytest.fixture
def server(tmp_path):
    port = _free_port()
    log = tmp_path / "streamlit.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_side_by_side_page_in_a_real_browser(server, tmp_path, shipped_models):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(server)
            captions = page.locator('[data-testid="stImageCaption"]')
            for entry in shipped_models:  # one overlay per model, captioned "<variant> · <model dir>"
                captions.filter(has_text=entry.label).first.wait_for(timeout=RENDER_TIMEOUT_MS)
            page.get_by_text("Overlay grid (PNG)").wait_for(timeout=RENDER_TIMEOUT_MS)
            page.wait_for_timeout(1500)  # let the charts settle for the screenshot
            page.screenshot(path=str(tmp_path / "side-by-side.png"), full_page=True)
            assert page.locator('[data-testid="stException"]').count() == 0
            assert page.locator('[data-testid="stImage"] img').count() >= len(shipped_models)
            overflow = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stColumn"] img')]
                .map(img => img.getBoundingClientRect().right
                            - img.closest('[data-testid="stColumn"]').getBoundingClientRect().right)""")
            assert overflow and max(overflow) <= 1, f"overlays overflow their columns by {overflow} px"
        finally:
            browser.close()
