"""Benchmark settings, case planning, the worker's measurements and failure classification."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from benchmarks import throughput
from benchmarks.throughput import BenchSettings, case_spec, plan_cases, run_case, shape_config
from benchmarks.worker import REPOSITORY_ROOT, child_command, is_oom_message, run_spec
from infsa_viz import VARIANTS


def test_shapes_match_the_brief():
    shipped = shape_config("shipped", BenchSettings())
    assert (shipped.img_size, shipped.in_chans, shipped.patch_size, shipped.embed_dim, shipped.depth,
            shipped.num_heads, shipped.mlp_ratio, shipped.pool) == (48, 1, 8, 64, 4, 4, 4.0, "cls")
    tiny = shape_config("tiny", BenchSettings())
    assert (tiny.in_chans, tiny.patch_size, tiny.embed_dim, tiny.num_heads, tiny.depth) == (3, 16, 192, 3, 4)


def test_patch_override_keeps_the_position_grid():
    config = shape_config("shipped", BenchSettings(patch_size=4, embed_dim=16, num_heads=2), "linear_infsa")
    assert (config.img_size, config.patch_size, config.grid, config.attention) == (24, 4, (6, 6), "linear_infsa")


@pytest.mark.parametrize("changes, match", [
    ({"variants": ("softmax", "nope")}, "nope"),
    ({"variants": ()}, "variants is empty"),
    ({"shapes": ("huge",)}, "huge"),
    ({"sections": ("model", "model")}, "repeats"),
    ({"resolutions": (224, 100)}, r"\[100\].*patch size 8"),
    ({"resolutions": (0,)}, "resolutions=0"),
    ({"num_heads": 5}, "num_heads=5 must divide embed_dim=64"),
    ({"repeats": 0}, "repeats=0"),
    ({"warmup": -1}, "warmup=-1"),
    ({"time_limit_s": 0}, "time_limit_s=0"),
    ({"device": "tpu"}, "device='tpu'"),
    ({"dtype": "int8"}, "dtype='int8'"),
])
def test_settings_errors_name_the_parameter(changes, match):
    with pytest.raises(ValueError, match=match):
        BenchSettings(**changes)


def test_plan_runs_sizes_in_ascending_order_with_every_variant():
    settings = BenchSettings(shapes=("shipped",), sections=("model", "attention"), resolutions=(64, 32),
                             attention_tokens=(256, 64))
    cases = plan_cases(settings)
    assert [(c["section"], c["resolution"] or c["tokens"], c["variant"]) for c in cases] == [
        *[("model", 32, v) for v in VARIANTS], *[("model", 64, v) for v in VARIANTS],
        *[("attention", 64, v) for v in VARIANTS], *[("attention", 256, v) for v in VARIANTS],
    ]
    assert [c["tokens"] for c in cases[:: len(VARIANTS)]] == [1 + 4**2, 1 + 8**2, 64, 256]


@pytest.mark.parametrize("section", ["model", "attention"])
def test_worker_measures_in_process_without_a_cap(section):
    settings = BenchSettings(shapes=("shipped",), sections=(section,), resolutions=(16,), attention_tokens=(32,),
                             embed_dim=16, num_heads=2, depth=1, repeats=3, warmup=1, min_timing_s=1e-4)
    case = plan_cases(settings)[-1]
    spec = {**case_spec(case, settings), "memory_limit_bytes": None, "deadline_unix": time.time() + 60}
    result = run_spec(spec)
    assert result["status"] == "ok", result["message"]
    assert result["repeats_done"] == len(result["times_s"]) == 3
    assert result["latency_s"] == sorted(result["times_s"])[1]  # median of 3
    assert len(result["warmup_times_s"]) == 1 and result["loops_per_timing"] >= 1
    assert 0 < result["rss_before_forward_bytes"] <= result["peak_rss_bytes"] == result["peak_memory_bytes"]
    assert ("images_per_s" in result) == (section == "model")


def test_plan_of_the_naive_and_spectral_sections():
    settings = BenchSettings(shapes=("shipped", "tiny"), sections=("naive", "spectral"), naive_tokens=(64,),
                             spectral_resolutions=(128, 64), spectral_methods=("perron",),
                             variants=("softmax", "pure_infsa"), spectral_variants=("softmax", "pure_infsa"))
    cases = plan_cases(settings)
    assert [(c["section"], c["shape"], c["variant"], c["tokens"]) for c in cases[:4]] == [
        ("naive", "shipped", "softmax", 64), ("naive", "shipped", "pure_infsa", 64),
        ("naive", "tiny", "softmax", 64), ("naive", "tiny", "pure_infsa", 64)]
    spectral = cases[4:]  # once, shipped shape, the shipped checkpoints, sides ascending
    assert [(c["variant"], c["method"], c["resolution"], c["checkpoint"]) for c in spectral] == [
        ("softmax", "perron", 64, "models/softmax-vit4"), ("softmax", "perron", 128, "models/softmax-vit4"),
        ("pure_infsa", "perron", 64, "models/pure-infsa-vit4"),
        ("pure_infsa", "perron", 128, "models/pure-infsa-vit4")]
    assert spectral[0]["tokens"] == 1 + 8**2


@pytest.mark.parametrize("changes, match", [
    ({"spectral_methods": ("nope",)}, "spectral_methods: 'nope'"),
    ({"spectral_resolutions": (100,)}, r"spectral_resolutions \[100\]"),
    ({"naive_tokens": ()}, "naive_tokens is empty"),
])
def test_new_section_settings_errors_name_the_parameter(changes, match):
    with pytest.raises(ValueError, match=match):
        BenchSettings(**changes)


def test_worker_measures_a_shipped_models_spectral_map_with_its_convergence():
    settings = BenchSettings(sections=("spectral",), variants=("pure_infsa",), spectral_resolutions=(64,),
                             spectral_methods=("visits",), repeats=1, warmup=0)
    spec = {**case_spec(plan_cases(settings)[0], settings), "memory_limit_bytes": None,
            "deadline_unix": time.time() + 60}
    result = run_spec(spec)
    assert result["status"] == "ok", result["message"]
    assert result["finite"] is True and result["map_metadata"]["max_residual"] < 1e-6


@pytest.mark.parametrize("section", ["attention", "naive"])
def test_worker_runs_in_bfloat16(section):
    settings = BenchSettings(shapes=("shipped",), sections=(section,), attention_tokens=(32,), naive_tokens=(32,),
                             variants=("pure_infsa",), dtype="bfloat16", repeats=1, warmup=0)
    spec = {**case_spec(plan_cases(settings)[0], settings), "memory_limit_bytes": None,
            "deadline_unix": time.time() + 60}
    assert spec["dtype"] == "bfloat16"
    result = run_spec(spec)
    assert result["status"] == "ok", result["message"]


def test_worker_reports_a_bad_spec_as_error():
    settings = BenchSettings(shapes=("shipped",), sections=("model",), resolutions=(16,))
    spec = {**case_spec(plan_cases(settings)[0], settings), "memory_limit_bytes": None,
            "deadline_unix": time.time() + 60, "resolution": 12}  # not divisible by the patch
    result = run_spec(spec)
    assert result["status"] == "error" and "ValueError" in result["message"]


@pytest.mark.parametrize("message, oom", [
    ("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 bytes", True),
    ("CUDA out of memory. Tried to allocate 2.00 GiB", True),
    ("mat1 and mat2 shapes cannot be multiplied", False),
])
def test_oom_messages(message, oom):
    assert is_oom_message(message) is oom


def _fake_run(returncode=0, stderr="", raises=None):
    def fake(command, **kwargs):
        if raises is not None:
            raise raises
        return subprocess.CompletedProcess(command, returncode, "", stderr)
    return fake


@pytest.mark.parametrize("fake, status, match", [
    (_fake_run(raises=subprocess.TimeoutExpired("worker", 5)), "timeout", "5 s time limit"),
    (_fake_run(returncode=-signal.SIGKILL), "oom", "SIGKILL"),
    (_fake_run(returncode=-signal.SIGALRM), "timeout", "own alarm"),
    (_fake_run(returncode=1, stderr="Traceback\nMemoryError"), "oom", "MemoryError"),
    (_fake_run(returncode=1, stderr="Traceback\nImportError: no module"), "error", "ImportError"),
])
def test_run_case_classifies_process_failures(monkeypatch, fake, status, match):
    monkeypatch.setattr(throughput.subprocess, "run", fake)
    result = run_case({"section": "model"}, time_limit_s=5)
    assert result["status"] == status and match in result["message"] and result["wall_s"] >= 0


def test_worker_reports_the_warmup_when_no_timed_forward_fits():
    settings = BenchSettings(shapes=("shipped",), sections=("attention",), attention_tokens=(32,),
                             embed_dim=16, num_heads=2, repeats=3, warmup=1)
    spec = {**case_spec(plan_cases(settings)[0], settings), "memory_limit_bytes": None,
            "deadline_unix": time.time() - 1}  # the time limit is already spent
    result = run_spec(spec)
    assert result["status"] == "ok" and result["latency_from_warmup"] is True
    assert result["repeats_done"] == 0 and result["times_s"] == result["warmup_times_s"]
    assert "warmup" in result["message"]


def test_worker_ends_itself_after_the_deadline_without_its_runner(tmp_path):
    # Softmax over 2^20 tokens runs for minutes; with the deadline long past, the worker's own
    # alarm ends it ALARM_GRACE_S seconds (here: the 1 s minimum) after it starts timing.
    settings = BenchSettings(shapes=("shipped",), sections=("attention",), variants=("softmax",),
                             attention_tokens=(2**20,), threads=1)
    spec = {**case_spec(plan_cases(settings)[0], settings), "deadline_unix": time.time() - 3600}
    command, env = child_command("benchmarks.worker", json.dumps(spec), str(tmp_path / "r.json"))
    proc = subprocess.run(command, capture_output=True, timeout=120, env=env)
    assert proc.returncode == -signal.SIGALRM and not (tmp_path / "r.json").exists()


def test_child_command_puts_the_repository_root_first_on_pythonpath(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    command, env = child_command("benchmarks.worker", "SPEC", "OUT")
    assert command == [sys.executable, "-m", "benchmarks.worker", "SPEC", "OUT"]
    assert env["PYTHONPATH"].split(os.pathsep) == [str(REPOSITORY_ROOT), "/elsewhere"]
    assert (REPOSITORY_ROOT / "benchmarks" / "worker.py").is_file()


def test_run_case_does_not_depend_on_the_working_directory(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no benchmarks/ here: the child finds it through PYTHONPATH
    monkeypatch.delenv("PYTHONPATH", raising=False)
    settings = BenchSettings(shapes=("shipped",), sections=("model",), variants=("linear_infsa",),
                             resolutions=(16,), embed_dim=16, num_heads=2, depth=1, repeats=1, threads=1)
    result = run_case(case_spec(plan_cases(settings)[0], settings), time_limit_s=120)
    assert result["status"] == "ok", result.get("message")
    assert result["images_per_s"] > 0 and result["repeats_done"] == 1
