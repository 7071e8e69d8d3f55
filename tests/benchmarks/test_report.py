"""Slope fitting, summary, goals and HTML of the throughput benchmark's report, on synthetic cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.report import GOALS, loglog_slope, summarize, write_report
from infsa_viz import VARIANTS

BASE, PURE, LINEAR = VARIANTS  # softmax, pure_infsa, linear_infsa


@pytest.mark.parametrize("power", [0.5, 1.0, 2.0])
def test_slope_of_a_power_law_is_its_exponent(power):
    tokens = np.array([1024, 4096, 16384, 65536, 262144])
    assert loglog_slope(tokens, 3e-7 * tokens**power) == pytest.approx(power, abs=1e-9)


def test_slope_is_a_python_float_and_ignores_the_constant():
    tokens = [1e3, 1e4, 1e5]
    slope = loglog_slope(tokens, [5e-4, 5e-3, 5e-2])
    assert type(slope) is float and slope == pytest.approx(1.0)


def test_slope_with_one_point_is_nan_with_a_warning():
    with pytest.warns(UserWarning, match="two distinct"):
        assert math.isnan(loglog_slope([1024, 1024], [1.0, 2.0]))


@pytest.mark.parametrize("tokens, times", [([1, 2], [1.0]), ([0, 2], [1.0, 2.0]), ([1, 2], [1.0, -1.0])])
def test_slope_rejects_bad_input(tokens, times):
    with pytest.raises(ValueError, match="tokens"):
        loglog_slope(tokens, times)


def _model(variant, resolution, images_per_s, status="ok", shape="shipped", peak=10**9):
    row = {"section": "model", "shape": shape, "variant": variant, "resolution": resolution,
           "tokens": 1 + (resolution // 8) ** 2, "status": status}
    if status == "ok":
        row.update(images_per_s=images_per_s, latency_s=1 / images_per_s, cpu_s=2 / images_per_s,
                   peak_memory_bytes=peak)
    return row


def _attention(variant, tokens, seconds, shape="shipped"):
    return {"section": "attention", "shape": shape, "variant": variant, "resolution": None,
            "tokens": tokens, "status": "ok", "latency_s": seconds, "cpu_s": 2 * seconds}


def test_summary_ratios_largest_slopes_and_goals():
    cases = [
        _model(BASE, 224, 100.0), _model(PURE, 224, 50.0), _model(LINEAR, 224, 200.0),
        _model(BASE, 1024, 2.0), _model(PURE, 1024, 0.0, status="oom"), _model(LINEAR, 1024, 40.0),
        _model(BASE, 9216, 0.0, status="timeout"), _model(LINEAR, 9216, 0.5, peak=3 * 10**9),
    ]
    cases += [_attention(LINEAR, n, 1e-6 * n) for n in (1024, 4096, 16384)]
    cases += [_attention(BASE, n, 1e-9 * n**2) for n in (1024, 4096)]
    summary = summarize(cases)
    ratios = summary["throughput_ratio"]["shipped"]
    assert ratios["224"] == {f"{PURE}/{BASE}": 0.5, f"{LINEAR}/{BASE}": 2.0}
    assert ratios["1024"] == {f"{LINEAR}/{BASE}": 20.0}  # pure failed at 1024: no ratio
    assert "9216" not in ratios
    largest = summary["largest_completed"]["shipped"]
    assert largest[BASE]["resolution"] == 1024 and largest[PURE]["resolution"] == 224
    assert largest[LINEAR] == {"resolution": 9216, "tokens": 1 + 1152**2, "images_per_s": 0.5,
                               "peak_memory_bytes": 3 * 10**9}
    slopes = summary["attention_slope"]["shipped"]
    assert slopes[LINEAR] == {"slope": pytest.approx(1.0), "tokens_min": 1024, "tokens_max": 16384, "points": 3}
    assert slopes[BASE]["slope"] == pytest.approx(2.0)
    assert summary["attention_cpu_slope"]["shipped"][LINEAR]["slope"] == pytest.approx(1.0)
    assert summary["statuses"] == {"ok": 11, "oom": 1, "timeout": 1}
    # pure: not at 2048², oom at 1024²; no spectral rows
    assert [g["met"] for g in summary["goals"]] == [True, True, True, None, None, None, None, None, None]


def test_goals_not_met_and_not_measured():
    limit = GOALS["peak_memory_max_bytes"]
    cases = [_model(BASE, 1024, 2.0), _model(LINEAR, 1024, 4.0), _model(LINEAR, 9216, 0.1, peak=limit + 1)]
    goals = summarize(cases)["goals"]
    assert [g["met"] for g in goals] == [False, False, None, None, None, None, None, None, None]
    assert goals[0]["value"] == 2.0 and goals[1]["value"] == limit + 1


def test_pure_infsa_goals_read_memory_and_throughput_against_softmax():
    side, at = GOALS["pure_resolution"], GOALS["pure_ratio_at"]
    cases = [_model(BASE, at, 2.0), _model(PURE, at, 1.5), _model(BASE, side, 0.1, peak=10**9),
             _model(PURE, side, 0.05, peak=3 * 10**9)]
    memory, ratio = summarize(cases)["goals"][3:5]
    assert memory["value"] == 3.0 and memory["met"] is False  # 3× softmax's peak > 2×
    assert ratio["value"] == 0.75 and ratio["met"] is True
    cases[-1] = _model(PURE, side, 0.0, status="oom")
    memory = summarize(cases)["goals"][3]
    assert memory["value"] == "oom" and memory["met"] is False


def test_write_report_writes_json_and_one_offline_html(tmp_path):
    cases = [_model(BASE, 224, 100.0), _model(LINEAR, 224, 200.0), _attention(LINEAR, 1024, 1e-3)]
    report = {"protocol": {"device": "cpu", "cpu_model": "<test cpu>", "torch": "x", "date": "d"},
              "cases": cases, "summary": summarize(cases), "complete": True}
    json_path, html_path = write_report(report, tmp_path / "bench-cpu.json")
    assert html_path == tmp_path / "bench-cpu.html"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench-cpu.html", "bench-cpu.json", "plotly.min.js"]
    page = html_path.read_text(encoding="utf-8")
    assert 'src="http' not in page and page.count('src="plotly.min.js"') == 1  # offline: the shared local copy
    assert page.count("Plotly.newPlot") == 3  # throughput, memory, attention time
    assert "&lt;test cpu&gt;" in page


def _naive(variant, tokens, seconds, peak, status="ok"):
    return {"section": "naive", "shape": "shipped", "variant": variant, "resolution": None, "tokens": tokens,
            "status": status, "latency_s": seconds, "peak_memory_bytes": peak}


def test_naive_rows_are_compared_with_our_layer_at_the_same_size():
    ours = [{**_attention(PURE, 4096, 0.5), "peak_memory_bytes": 10**9},
            {**_attention(PURE, 16384, 2.0), "peak_memory_bytes": 2 * 10**9}]
    cases = [*ours, _naive(PURE, 4096, 1.0, 3 * 10**9), _naive(PURE, 16384, None, None, status="oom"),
             _naive(LINEAR, 4096, 1.0, 10**9)]  # no attention row of ours for linear: not compared
    table = summarize(cases)["naive_vs_ours"]["shipped"]
    assert table["4096"][PURE]["time_ratio"] == 2.0 and table["4096"][PURE]["memory_ratio"] == 3.0
    assert table["16384"][PURE]["naive"]["status"] == "oom" and "time_ratio" not in table["16384"][PURE]
    assert LINEAR not in table["4096"]


def _spectral(map_method, side, peak, status="ok", **meta):
    return {"section": "spectral", "shape": "shipped", "variant": PURE, "method": map_method, "resolution": side,
            "tokens": 1 + (side // 8) ** 2, "status": status, "latency_s": 1.0, "peak_memory_bytes": peak,
            "finite": True, "map_metadata": meta}


def test_spectral_goals_and_rows_keep_the_solver_apart_from_the_map_method():
    limit = GOALS["spectral_memory_max_bytes"]
    small, big = GOALS["spectral_resolutions"]
    cases = [_spectral("visits", small, limit - 1, solver="gmres", iterations=4, max_residual=1e-8),
             _spectral("visits", big, limit + 1, solver="gmres", iterations=5, max_residual=1e-8),
             _spectral("perron", small, 10**9, method="power", iterations=11, max_residual=2e-8),
             _spectral("perron", big, None, status="timeout")]
    summary = summarize(cases)
    assert [g["met"] for g in summary["goals"][-4:]] == [True, False, True, False]
    assert summary["goals"][-1]["value"] == "timeout"
    rows = summary["spectral"]
    assert [(r["method"], r["solver"], r.get("iterations")) for r in rows] == [
        ("visits", "gmres", 4), ("visits", "gmres", 5), ("perron", "power", 11), ("perron", None, None)]


def test_upper_slope_ignores_the_small_sizes():
    from benchmarks.report import UPPER_SLOPE_MIN_TOKENS as low

    cases = [_attention(LINEAR, n, 1e-6 * low) for n in (low // 16, low // 4)]  # flat: per-call overhead
    cases += [_attention(LINEAR, n, 1e-6 * n) for n in (low, 4 * low, 16 * low)]
    summary = summarize(cases)
    assert summary["attention_slope"]["shipped"][LINEAR]["slope"] < 0.9
    assert summary["attention_slope_upper"]["shipped"][LINEAR] == {
        "slope": pytest.approx(1.0), "tokens_min": low, "tokens_max": 16 * low, "points": 3}
