"""A whole-set forward of a real model takes minutes on a CPU: the app shows how far it is and the time
left (every long loop shows progress), and clears the bar when done."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np


class _Bar:
    def __init__(self) -> None:
        self.shown: list[tuple[float, str]] = []
        self.cleared = False

    def progress(self, value: float, text: str = "") -> None:
        self.shown.append((value, text))

    def empty(self) -> None:
        self.cleared = True


def test_a_set_forward_of_many_batches_shows_progress_and_time_left(app, monkeypatch):
    compute = app.compute
    n, classes = 5 * compute.BATCH + 7, 6
    bars: list[_Bar] = []
    monkeypatch.setattr(compute.inputs, "set_data", lambda key: range(n))
    monkeypatch.setattr(compute, "_chunk_probabilities",
                        lambda path, version, key, spec, start: np.full((min(compute.BATCH, n - start), classes), start,
                                                                  np.float32))
    monkeypatch.setattr(compute.st, "empty", lambda: bars.append(_Bar()) or bars[-1])
    entry = SimpleNamespace(source="m", version=0, name="vit-b16")
    probs = compute.set_probabilities(entry, "a set")
    assert probs.shape == (n, classes) and probs[-1, 0] == 5 * compute.BATCH  # every batch, in order
    (bar,) = bars
    assert [v for v, _ in bar.shown] == [k / 6 for k in range(1, 6)]  # after each batch but the last
    assert bar.shown[0][1].startswith(f"vit-b16: {compute.BATCH} of {n} images classified, about ")
    assert bar.shown[-1][1].split("about ")[1].endswith((" s left", " min left")) and bar.cleared


def test_a_few_batches_show_no_bar(app, monkeypatch):
    compute = app.compute
    monkeypatch.setattr(compute.inputs, "set_data", lambda key: range(compute.BATCH))
    monkeypatch.setattr(compute, "_chunk_probabilities", lambda *a: np.zeros((compute.BATCH, 2), np.float32))
    monkeypatch.setattr(compute.st, "empty", lambda: (_ for _ in ()).throw(AssertionError("a bar was shown")))
    assert compute.set_probabilities(SimpleNamespace(source="m", version=0, name="m"), "k").shape == (compute.BATCH, 2)


def test_durations_read_for_people(app):
    assert [app.compute._duration(s) for s in (0.4, 40, 89, 90, 600)] == ["0 s", "40 s", "89 s", "2 min", "10 min"]
