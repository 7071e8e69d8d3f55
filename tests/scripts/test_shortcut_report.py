"""The committed shortcut report, recomputed independently from its committed per-model parts: every rise
row (mean and t-interval over seeds) and every detection AUROC."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "metrics" / "shortcut-cued-digits.json"


@pytest.fixture(scope="module")
def report():
    if not REPORT.is_file():
        pytest.skip("metrics/shortcut-cued-digits.json not committed")
    return json.loads(REPORT.read_text())


def _scores(report):
    """(setting, variant, seed) -> method -> the mean over images of the part's per-image cue shares."""
    out = {}
    for model in report["models"]:
        part = json.loads((ROOT / model["part"]).read_text())
        shares = part["result"]["shares"]["as_generated"]
        out[model["setting"], model["variant"], model["seed"]] = {
            m: float(np.mean([v for v in values if v is not None])) for m, values in shares.items()}
    return out


def test_every_rise_row_is_reproduced_from_the_parts(report):
    scores = _scores(report)
    for row in report["tables"]["rise"]:
        v, m = row["variant"], row["method"]
        rises = [100 * (scores["p100", v, s][m] - scores["p10", v, s][m])
                 for (setting, variant, s) in scores if setting == "p10" and variant == v and ("p100", v, s) in scores]
        assert len(rises) == row["n"]
        mean, sd = float(np.mean(rises)), float(np.std(rises, ddof=1))
        half = stats.t.ppf(0.975, len(rises) - 1) * sd / math.sqrt(len(rises))
        assert row["mean"] == pytest.approx(mean, abs=1e-3), (v, m)
        assert row["low"] == pytest.approx(mean - half, abs=1e-3) and row["high"] == pytest.approx(mean + half, abs=1e-3)


def test_every_detection_auroc_is_reproduced_from_the_parts(report):
    scores = _scores(report)
    for row in report["tables"]["detection"]:
        v, m = row["variant"], row["method"]
        pos = [s[m] for (setting, variant, _), s in scores.items() if setting == "p100" and variant == v]
        neg = [s[m] for (setting, variant, _), s in scores.items() if setting == "p10" and variant == v]
        u = stats.mannwhitneyu(pos, neg).statistic
        assert row["auroc"] == pytest.approx(u / (len(pos) * len(neg)), abs=1e-4), (v, m)
