"""``python -m benchmarks morf``: our MoRF curves equal Quantus' on an aligned protocol (timing not asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infsa_viz.data import TEST_SEED

pytest.importorskip("quantus")
MODEL = Path(__file__).parents[3] / "models" / "softmax-vit4"


@pytest.mark.skipif(not (MODEL / "config.json").is_file(), reason="the shipped models are not in this checkout")
def test_bench_morf_agrees_with_quantus(bench_main, tmp_path):
    out = tmp_path / "m.json"
    assert bench_main("morf", "--model", str(MODEL), "--n-images", "4", "--repeats", "1", "--out", str(out)) == 0
    report = json.loads(out.read_text())
    assert report["max_abs_curve_difference"] < 1e-5
    assert report["protocol"]["ties_in_maps"] == 0
    images = report["protocol"]["images"]  # the test split's own description
    assert (images["split"], images["seed"], images["n_images"]) == ("test", TEST_SEED, 4)
    assert report["protocol"]["command"].startswith("python -m benchmarks morf --model")
    assert set(report["median_seconds"]) == {"infsa_viz", "quantus", "forwards_only_batch_256", "forwards_only_batch_4"}
    assert report["model_forwards"] == 4 * (6 * 6 + 1)  # clean + one copy per step, 36 patches of 8 px at 48 px
    assert report["forward_floor_seconds"] == min(report["median_seconds"]["forwards_only_batch_256"],
                                                  report["median_seconds"]["forwards_only_batch_4"])


def test_bench_morf_bad_settings_exit_2(bench_main, tmp_path, capsys):
    out = tmp_path / "m.json"
    assert bench_main("morf", "--model", str(MODEL), "--n-images", "0", "--out", str(out)) == 2
    assert "--n-images=0" in capsys.readouterr().err and not out.exists()
