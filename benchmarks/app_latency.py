"""How fast the app answers a researcher: the real app in Chromium, timed from the browser, and
where the time goes, stage by stage, on the server.

Run as ``python -m benchmarks app-latency --out metrics/app-latency.json``. Starts
``streamlit run app`` on a free local port, opens it in Debian's Chromium (Playwright) at
1280 × 800, and times, from the user's action until the page has settled (no element of the
previous run left stale, no "running" indicator, the new method's caption and one overlay per
model shown):

* ``process_start_to_first_overlay_s``: from the start of the ``streamlit run app`` process to the
  first overlays shown in the browser (Streamlit's start, its health check answering, the page
  load, imports, models, maps), the figure a researcher waits for;
* ``cold_first_render_s``: a fresh server's first page load (imports, models, maps, figures),
  from the page request, with ``cold_first_title_s`` (the page's title shown: the browser has
  loaded Streamlit and the script has started) and ``cold_first_overlays_s`` (the overlays shown,
  the figures computing); ``server_ready_s``: process start to the health check answering; each
  the median of several fresh servers (:func:`measure_cold`), each run in ``cold_runs``;
* ``cached_method_switch_s``: switching back to a method already computed for this image;
* ``uncached_attention_switch_s``: switching for the first time to another attention-family
  method (attention → rollout → visits → neumann → perron → linear_estimate);
  both timed from the choice (Enter on the option the typed name filtered); ``…_typing_included_s``
  also times opening the dropdown and typing the name (the protocol of the first reports);
* ``next_image_s`` (the "next image" button: every map and figure new), ``integrated_gradients_s``
  and ``only_misclassified_s`` (first time; the set's predictions are then cached,
  ``only_misclassified_cached_s``).

:func:`server_stages` times, in a fresh process, what the first run and a switch compute, in the
app's order and with the app's own functions (imports, test split, models, first image, maps,
tiles, the figures' imports and figures); the browser's share is the rest. The machine is shared:
the report records ``os.getloadavg()`` before and after, the load average when each figure was
measured (``load``: figure → 1, 5 and 15-minute load averages) and the CPU count.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Sequence

__all__ = ["GOALS", "GOAL_LOAD", "LOADED_GOALS", "BackgroundLoad", "measure_app", "measure_cold",
           "measure_switches", "serve", "serve_dev", "server_stages", "stop"]

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
#: The issue's goals (seconds) on an idle 2-core machine.
GOALS = {"process_start_to_first_overlay_s": 5.0, "cached_method_switch_s": 0.3, "uncached_attention_switch_s": 0.6}
#: The goals under a background load of :data:`GOAL_LOAD` busy processes (seconds).
LOADED_GOALS = {"process_start_to_first_overlay_s": 8.0, "cached_method_switch_s": 0.3,
                "uncached_attention_switch_s": 0.6}
GOAL_LOAD = 4
#: Figure → the 1, 5 and 15-minute load averages when it was measured (:func:`loaded`).
LOAD: dict[str, list[float]] = {}


def loaded(key: str, value: Any) -> Any:
    """``value``, with the machine's load average now recorded under ``key`` in :data:`LOAD`."""
    LOAD[key] = [round(v, 2) for v in os.getloadavg()]
    return value
ATTENTION_METHODS = ["rollout", "visits", "neumann", "perron", "linear_estimate"]
TIMEOUT_MS = 300_000

SETTLED_JS = """([method, models, text]) => {
  if (text && !document.body.innerText.includes(text)) return false;
  if (document.querySelector('[data-testid="stStatusWidgetRunningIcon"], [data-testid="stStatusWidgetRunningManIcon"]'))
    return false;
  if (document.querySelector('[data-stale="true"]')) return false;
  const caption = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
    .some(c => c.innerText.startsWith(method + ' ('));
  const overlays = [...document.querySelectorAll('[data-testid="stImageCaption"]')]
    .filter(c => c.innerText.includes(' · ') && !c.innerText.includes('model input')).length;
  const figures = [...document.querySelectorAll('strong')].some(b => b.innerText === 'Per-map figures');
  return caption && overlays >= models && figures;
}"""

OVERLAYS_JS = """models => [...document.querySelectorAll('[data-testid="stImageCaption"]')]
  .filter(c => c.innerText.includes(' · ') && !c.innerText.includes('model input')).length >= models"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(log: Path, args: Sequence[str] = (), *, env: dict[str, str] | None = None,
          path: Sequence[Path] = ()) -> tuple[subprocess.Popen, str]:
    """``streamlit run app`` (with ``-- args``) on a free local port, its output in ``log``;
    ``(process, URL)`` once it answers its health check (``RuntimeError`` after 120 s or if it exits).

    The address is the repository's ``.streamlit/config.toml`` (127.0.0.1), as ``dev.py app`` serves
    it; ``env`` adds environment variables and ``path`` folders in front of ``PYTHONPATH``."""
    port = _free_port()
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app", "--server.headless", "true",
                                 "--server.port", str(port), *(["--", *args] if args else [])],
                                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                env={**os.environ, **(env or {}),
                                     "PYTHONPATH": os.pathsep.join([*map(str, path), str(ROOT)])})
    return proc, _healthy(proc, port, log, "streamlit", 120)


def serve_dev(log: Path) -> tuple[subprocess.Popen, str]:
    """``python3 dev.py app`` (the Quickstart's command: its environment check, then ``streamlit run
    app`` on 127.0.0.1) on a free port, headless; ``(process, URL)`` once it answers its health check."""
    port = _free_port()
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "dev.py", "app", "--server.headless", "true", "--server.port",
                                 str(port)], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, _healthy(proc, port, log, "dev.py app", 300)


class BackgroundLoad:
    """``workers`` busy processes (one pure-Python loop each) for the time of a ``with`` block: the
    stated background load under which figures are measured (on top of whatever else runs)."""

    def __init__(self, workers: int) -> None:
        if workers < 0:
            raise ValueError(f"workers={workers} must be >= 0")
        self.workers = workers
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "BackgroundLoad":
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.workers)]
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()
        self.procs = []


def stop(proc: subprocess.Popen) -> None:
    """End a server started by :func:`serve` or :func:`serve_dev` (``dev.py`` leads its own process
    group, its ``streamlit`` child with it: the group is ended)."""
    import signal

    group = os.name == "posix" and os.getpgid(proc.pid) == proc.pid
    if group:
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
        proc.wait()


def _healthy(proc: subprocess.Popen, port: int, log: Path, what: str, seconds: float) -> str:
    """The server's URL once its health endpoint answers; the process is stopped if it never does."""
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return url
        except OSError:
            time.sleep(0.2)
    stop(proc)
    raise RuntimeError(f"{what} was not healthy within {seconds:g} s: {log.read_text()[-2000:]}")


def _settle(page, method: str, models: int, text: str = "") -> None:
    """Wait until the page shows ``method``'s caption (and ``text``) with nothing stale."""
    page.wait_for_timeout(30)  # let the click reach the server before polling for the settled page
    page.wait_for_function(SETTLED_JS, arg=[method, models, text], timeout=TIMEOUT_MS, polling=20)


#: Seconds from the click that opens the method's dropdown until settled, typing included (the
#: protocol of the first reports), by method switch; :func:`_choose` returns the time from the choice.
TYPED: list[float] = []


def _choose(page, method: str, models: int) -> float:
    """Choose ``method`` in the sidebar: open the dropdown, type its name to filter the options,
    then time from the choice (Enter) until the page has settled."""
    opened = time.perf_counter()
    page.get_by_label("Method", exact=True).click()
    page.keyboard.type(method)
    start = time.perf_counter()
    page.keyboard.press("Enter")
    _settle(page, method, models)
    end = time.perf_counter()
    TYPED.append(end - opened)
    return end - start


def _timed_click(page, locator, method: str, models: int, text: str = "") -> float:
    start = time.perf_counter()
    locator.click()
    _settle(page, method, models, text)
    return time.perf_counter() - start


def _cold(page, url: str, models: int, started: float, ready: float) -> dict[str, float]:
    """A fresh server's first page load: until the title, the overlays and the settled page, from
    the page request; and from the process start (``started``, ``ready``: ``perf_counter`` at the
    process start and when its health check answered)."""
    out = {"server_ready_s": ready - started}
    start = time.perf_counter()
    page.goto(url)
    page.locator('[data-testid="stMain"] h1').first.wait_for(timeout=TIMEOUT_MS)
    out["cold_first_title_s"] = time.perf_counter() - start
    page.wait_for_function(OVERLAYS_JS, arg=models, timeout=TIMEOUT_MS, polling=20)
    now = time.perf_counter()
    out["cold_first_overlays_s"] = now - start
    out["process_start_to_first_overlay_s"] = now - started
    _settle(page, "attention", models)
    out["cold_first_render_s"] = time.perf_counter() - start
    out["loadavg"] = [round(v, 2) for v in os.getloadavg()]
    return out


def _fresh(log: Path, via_dev: bool = False) -> tuple[subprocess.Popen, str, float, float]:
    """A fresh server (``streamlit run app``, or ``python3 dev.py app`` when ``via_dev``):
    ``(process, URL, perf_counter at its start, perf_counter when it answered)``."""
    started = time.perf_counter()
    proc, url = serve_dev(log) if via_dev else serve(log)
    return proc, url, started, time.perf_counter()


def measure_cold(*, models: int, runs: int, log: Path, via_dev: bool = False) -> list[dict[str, float]]:
    """:func:`_cold` of ``runs`` fresh servers (started by ``python3 dev.py app`` when ``via_dev``),
    each opened by a browser started before the server (so the process-start figure holds no
    browser start)."""
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as p:
        for _ in range(runs):
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            proc, url, started, ready = _fresh(log, via_dev)
            try:
                out.append(_cold(page, url, models, started, ready))
            finally:
                browser.close()
                stop(proc)
    return out


def measure_switches(*, models: int, repeats: int, log: Path) -> dict[str, Any]:
    """A fresh server's first overlays and its method switches only (the figures with goals under
    load): ``process_start_to_first_overlay_s``, ``uncached_attention_switch_s`` and
    ``cached_method_switch_s`` (medians), with the load average after each."""
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        proc, url, started, ready = _fresh(log)
        try:
            cold = _cold(page, url, models, started, ready)
            out["process_start_to_first_overlay_s"] = cold["process_start_to_first_overlay_s"]
            out["loadavg_first_overlay"] = cold["loadavg"]
            out["uncached_attention_switch_s"] = statistics.median(_choose(page, m, models) for m in ATTENTION_METHODS[:3])
            out["loadavg_uncached"] = [round(v, 2) for v in os.getloadavg()]
            out["cached_method_switch_s"] = statistics.median(
                _choose(page, "attention" if i % 2 == 0 else "visits", models) for i in range(repeats))
            out["loadavg_cached"] = [round(v, 2) for v in os.getloadavg()]
        finally:
            browser.close()
            stop(proc)
    return out


def measure_app(*, models: int, repeats: int = 5, log: Path) -> dict[str, Any]:
    """Drive the app in Chromium; seconds per interaction (see the module docstring)."""
    from playwright.sync_api import sync_playwright

    out: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        proc, url, started, ready = _fresh(log)
        try:
            out.update(_cold(page, url, models, started, ready))
            TYPED.clear()
            first = [_choose(page, m, models) for m in ATTENTION_METHODS]
            out["uncached_attention_switch_s"] = loaded("uncached_attention_switch_s", statistics.median(first))
            out["uncached_attention_switch_all_s"] = dict(zip(ATTENTION_METHODS, first))
            out["uncached_attention_switch_typing_included_s"] = statistics.median(TYPED)
            TYPED.clear()
            methods = ["attention" if i % 2 == 0 else "visits" for i in range(repeats)]
            cached = [_choose(page, m, models) for m in methods]
            out["cached_method_switch_s"] = loaded("cached_method_switch_s", statistics.median(cached))
            out["cached_method_switch_all_s"] = cached
            out["cached_method_switch_typing_included_s"] = statistics.median(TYPED)
            number = int(page.get_by_label("Image (1 … 2000)").input_value())  # images are numbered from 1
            out["next_image_s"] = loaded("next_image_s", _timed_click(
                page, page.get_by_role("button", name="▶"), methods[-1], models, f"test image #{number + 1}."))
            out["integrated_gradients_s"] = loaded("integrated_gradients_s",
                                                   _choose(page, "integrated_gradients", models))
            _choose(page, "attention", models)
            toggle = page.get_by_text("Only misclassified", exact=True)
            for key in ("only_misclassified_s", "only_misclassified_cached_s"):
                out[key] = loaded(key, _timed_click(page, toggle, "attention", models, "Misclassified image (1 … "))
                _timed_click(page, toggle, "attention", models, "Image (1 … ")  # back to the whole split
        finally:
            browser.close()
            stop(proc)
    return out


# ------------------------------------------------------------------------- server, by stage
def _stages() -> dict[str, float]:
    """Run in a fresh process (see :func:`server_stages`): each stage of the first run, then of a
    switch, with the app's functions, in the app's order."""
    out: dict[str, float] = {}
    mark = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        out[name] = round(now - mark, 4)
        mark = now

    import torch  # noqa: F401

    lap("import torch")
    sys.path.insert(0, str(ROOT / "app"))  # the app's modules import each other, as Streamlit runs them
    import catalog
    import compute
    import draw
    import inputs
    import sidebar  # noqa: F401

    lap("import streamlit, infsa_viz and the app")
    found, _ = catalog.find_models([])
    inputs.set_data("cluttered-digits")
    lap("test split (2000 images)")
    for entry in found:
        catalog.get_model(entry)
    lap(f"load {len(found)} models")
    index = compute.first_all_correct(found, "cluttered-digits") or 0
    image = inputs.set_image("cluttered-digits", index)
    lap("first image every model gets right")
    display = draw.Display()

    def maps(method: str) -> list:
        views = [(e, compute.map_view(e, image, method, {})) for e in found]
        draw.tiles(display, method, views)
        return views

    maps("attention")
    lap("attention maps and tiles")
    for e in found:
        compute.explain(e, image, "attention", {})
    lap("per-map figures")
    for method in ATTENTION_METHODS[:2]:
        maps(method)
        for e in found:
            compute.explain(e, image, method, {})
    out["uncached switch: maps, tiles and figures (mean of rollout, visits)"] = round(
        (time.perf_counter() - mark) / 2, 4)
    mark = time.perf_counter()
    maps("attention")
    for e in found:
        compute.explain(e, image, "attention", {})
    lap("cached switch: maps, tiles and figures")
    return out


def server_stages() -> dict[str, float]:
    """Seconds of each stage of the first run and of a switch, timed in a fresh process (the
    imports included) with the app's own functions; the browser and Streamlit's messages are the
    rest of each browser-timed figure."""
    code = "import json, benchmarks.app_latency as a; print(json.dumps(a._stages()))"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    if proc.returncode != 0:
        raise RuntimeError(f"server stages failed: {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def goals_report(measured: dict[str, Any]) -> dict[str, Any]:
    """Each goal with the measured value, whether it is met, the gap (measured − goal) and the load
    average when it was measured (the goals hold on an idle machine)."""
    return {key: {"goal_s": goal, "measured_s": round(measured[key], 3), "met": measured[key] <= goal,
                  "gap_s": round(max(0.0, measured[key] - goal), 3), "loadavg": LOAD.get(key)}
            for key, goal in GOALS.items()}


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
