"""The shortcut tables over models (infsa_viz/stats/shortcut/analysis.py), on simulated measurements."""

from __future__ import annotations

import numpy as np
import pytest

from infsa_viz.evaluation.shortcut import ModelCueShares
from infsa_viz.stats.shortcut import ModelEntry, distinct_maps, shortcut_tables

ROLES = {"attention": "explanation", "visits": "explanation", "edge": "model_ignorant", "random": "floor"}
SEEDS = range(5)


def _entry(variant: str, setting: str, seed: int) -> ModelEntry:
    rng = np.random.default_rng([seed, setting == "p100", variant == "softmax"])
    n = 30
    evidence = rng.random(n)
    rise = {"softmax": 0.4, "linear_infsa": 0.2}[variant] if setting == "p100" else 0.0
    attention = np.clip(0.1 + rise + 0.02 * rng.normal() + 0.1 * evidence, 0, 1)
    edge = np.linspace(0.1, 0.3, n)  # the same images: model-independent
    shares = {"attention": attention, "visits": attention if variant == "linear_infsa" else attention * 0.9,
              "edge": edge, "random": np.full(n, 0.2)}
    identical = [["attention", "visits"]] if variant == "linear_infsa" else []
    measured = ModelCueShares(tuple(ROLES), np.arange(n), {"as_generated": shares, "absent": {
        m: v * 0.1 for m, v in shares.items()}}, {"as_generated": evidence, "absent": np.zeros(n)},
        np.zeros(n, np.int64), identical)
    return ModelEntry(setting, variant, seed, f"{setting}/{variant}-seed{seed}", measured)


@pytest.fixture(scope="module")
def tables():
    entries = [_entry(v, s, k) for v in ("softmax", "linear_infsa") for s in ("p10", "p100") for k in SEEDS]
    return entries, shortcut_tables(entries, roles=ROLES)


def _row(rows, **match):
    return next(r for r in rows if all(r[k] == v for k, v in match.items()))


def test_rises_are_paired_by_seed_and_the_edge_map_does_not_rise(tables):
    _, out = tables
    softmax = _row(out["rise"], variant="softmax", method="attention")
    assert softmax["n"] == 5 and softmax["low"] < 40.0 < softmax["high"] and softmax["beats_edge"] is True
    edge = _row(out["rise"], variant="softmax", method="edge")
    assert edge["mean"] == 0.0 and edge["beats_edge"] is None


def test_identical_maps_count_once_in_the_family(tables):
    entries, out = tables
    assert distinct_maps(entries, "linear_infsa") == {"attention": "attention", "visits": "attention", "edge": "edge",
                                                      "random": "random"}
    assert out["distinct"] == {"softmax": {}, "linear_infsa": {"visits": "attention"}}
    family = [r for r in out["difference"]["rows"] if r["in_family"]]
    assert [r["method"] for r in family] == ["attention"] and out["difference"]["family_size"] == 1
    attention = family[0]
    assert attention["call"] == "lower" and attention["mean"] == pytest.approx(-20.0, abs=5.0)
    assert attention["detectable"] > 0
    visits = _row(out["difference"]["rows"], method="visits")
    assert visits["same_map_as"] == {"linear_infsa": "attention"} and "call" not in visits


def test_detection_salience_and_image_level_rows(tables):
    _, out = tables
    attention = _row(out["detection"], variant="softmax", method="attention")
    assert attention["auroc"] == 1.0 and attention["false_positive_rate"] == 0.0 and attention["beats_edge"] is True
    assert _row(out["detection"], variant="softmax", method="edge")["auroc"] == 0.5
    image = _row(out["image_level"], variant="softmax", method="attention")
    assert image["mean"] == pytest.approx(1.0) and image["n"] == 5  # the share follows the evidence exactly
    salience = _row(out["salience"], variant="softmax", method="attention")
    assert set(salience["mean"]) == {"p10/as_generated", "p10/absent", "p100/as_generated", "p100/absent"}
    assert 0 < salience["r2_regime"] < 1 and 0 < salience["r2_salience"] < 1
    edge = _row(out["salience"], variant="softmax", method="edge")
    assert edge["r2_regime"] == 0.0 and edge["follows_salience_more"] is True
