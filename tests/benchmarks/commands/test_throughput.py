"""``python -m benchmarks throughput`` end to end: one process per case, statuses ok / oom / timeout / skipped."""

from __future__ import annotations

import json

import pytest
import torch

from infsa_viz import VARIANTS

# A small model: width 16, 2 heads, 1 block, patch 4 (6×6 position grid).
SMALL = ["--shape", "shipped", "--patch", "4", "--width", "16", "--heads", "2", "--depth", "1", "--threads", "1"]


@pytest.fixture
def bench(bench_main, tmp_path):
    """``bench(*args)`` → (exit code, report or None)."""
    out = tmp_path / "bench-cpu.json"

    def call(*args: str):
        code = bench_main("throughput", "--out", str(out), *SMALL, *args)
        return code, (json.loads(out.read_text(encoding="utf-8")) if out.is_file() else None)

    return call


def test_tiny_grid_writes_json_and_html_with_every_variant_ok(bench, tmp_path, capsys):
    # One process per case (about 2 s each, mostly importing torch): 2 resolutions + 1 token count.
    code, report = bench("--sections", "model,attention", "--resolutions", "16,32", "--attention-tokens", "64",
                         "--repeats", "2")
    assert code == 0
    html = (tmp_path / "bench-cpu.html").read_text()
    assert 'src="plotly.min.js"' in html and (tmp_path / "plotly.min.js").is_file()  # offline, one shared copy
    cases = report["cases"]
    assert len(cases) == 3 * len(VARIANTS) and report["complete"] is True
    assert {c["status"] for c in cases} == {"ok"}
    for section in ("model", "attention"):
        assert {c["variant"] for c in cases if c["section"] == section} == set(VARIANTS)
    for case in cases:
        assert 1 <= case["repeats_done"] == len(case["times_s"]) <= 2 and case["threads"] == 1
        assert case["peak_rss_bytes"] >= case["rss_before_forward_bytes"] > 0
    assert [c["tokens"] for c in cases if c["section"] == "model"][:: len(VARIANTS)] == [17, 65]
    protocol = report["protocol"]
    assert protocol["torch"] == torch.__version__ and protocol["device"] == "cpu"
    assert protocol["command"].startswith("python -m benchmarks throughput --out")
    assert protocol["settings"]["repeats"] == 2
    slopes = report["summary"]["model_latency_slope"]["shipped"]
    assert {v: s["points"] for v, s in slopes.items()} == dict.fromkeys(VARIANTS, 2)
    assert {v: s["slope"] for v, s in report["summary"]["attention_slope"]["shipped"].items()} == dict.fromkeys(
        VARIANTS)  # one token count: no slope
    assert set(report["summary"]["throughput_ratio"]["shipped"]) == {"16", "32"}
    err = capsys.readouterr().err
    assert err.count("throughput: ") == len(cases) and "Traceback" not in err


def test_naive_and_spectral_sections_side_by_side(bench):
    code, report = bench("--sections", "attention,naive,spectral", "--variants", "pure_infsa",
                         "--attention-tokens", "64", "--naive-tokens", "64", "--spectral-resolutions", "32",
                         "--spectral-methods", "perron", "--spectral-variants", "pure_infsa",
                         "--repeats", "1", "--warmup", "0")
    assert code == 0
    assert [(c["section"], c["status"]) for c in report["cases"]] == [
        ("attention", "ok"), ("naive", "ok"), ("spectral", "ok")]
    entry = report["summary"]["naive_vs_ours"]["shipped"]["64"]["pure_infsa"]
    assert entry["time_ratio"] > 0 and entry["memory_ratio"] > 0
    (spectral,) = report["summary"]["spectral"]
    assert spectral["method"] == "perron" and spectral["finite"] and spectral["iterations"] >= 0


def test_a_size_predicted_past_the_time_limit_is_skipped(monkeypatch):
    from benchmarks import throughput

    def fake_case(spec, *, time_limit_s):  # quadratic: 1 s at 1,000 tokens
        seconds = (spec["tokens"] / 1000) ** 2
        return {"status": "ok", "latency_s": seconds, "cpu_s": seconds, "peak_memory_bytes": 1}

    monkeypatch.setattr(throughput, "run_case", fake_case)
    settings = throughput.BenchSettings(sections=("attention",), shapes=("shipped",), variants=("softmax",),
                                        attention_tokens=(1000, 2000, 4000, 8000), time_limit_s=20.0)
    report = throughput.run_benchmark(settings)
    assert [c["status"] for c in report["cases"]] == ["ok", "ok", "ok", "skipped"]  # 64 s predicted at 8,000
    assert report["cases"][3]["predicted_s"] == pytest.approx(64.0)
    assert throughput.predicted_seconds(report["cases"][:1], 2000) is None


def test_memory_cap_gives_oom_and_skips_larger_sizes(bench):
    # One Linear-InfSA layer (width 64) at 2²⁴ tokens: its (1, N, 64) float32 input alone is 4.3 GB,
    # over the 2 GB address-space cap; 1,024 tokens fit. (Pure InfSA no longer fails here: its
    # blockwise path ran 65,537 tokens in 0.31 GB under this cap.)
    code, report = bench("--sections", "attention", "--variants", "linear_infsa",
                         "--attention-tokens", "1024,16777216,33554432", "--repeats", "1", "--warmup", "0",
                         "--memory-limit", "2")
    assert code == 0
    assert [c["status"] for c in report["cases"]] == ["ok", "oom", "skipped"]
    assert "allocate" in report["cases"][1]["message"]
    assert report["cases"][2]["message"].startswith("oom at 16777216 tokens")


def test_time_limit_gives_timeout_and_skips_larger_sizes(bench):
    code, report = bench("--sections", "attention", "--variants", "softmax", "--attention-tokens", "1048576,2097152",
                         "--time-limit", "1")
    assert code == 0
    assert [c["status"] for c in report["cases"]] == ["timeout", "skipped"]
    assert report["cases"][0]["message"] == "ran past the 1 s time limit; killed"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised without CUDA")
def test_cuda_without_cuda_exits_2(bench, capsys):
    code, report = bench("--device", "cuda")
    assert code == 2 and report is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cuda" in err and "Traceback" not in err


@pytest.mark.parametrize("args, match", [
    (["--resolutions", "30"], "not divisible"),
    (["--variants", "softmax,bogus"], "bogus"),
    (["--heads", "3"], "num_heads=3 must divide embed_dim=16"),
])
def test_bad_settings_exit_2_before_running(bench, capsys, args, match):
    code, report = bench(*args)
    assert code == 2 and report is None and match in capsys.readouterr().err
