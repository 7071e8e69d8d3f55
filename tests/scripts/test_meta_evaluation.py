"""scripts/meta_evaluation.py: every seed model meta-evaluated once (resumable), then summarised."""

from __future__ import annotations

import json

from infsa_viz.model import VisionTransformer, ViTConfig, save_model
from scripts import meta_evaluation


def test_meta_evaluates_each_model_once_and_summarises(tmp_path, monkeypatch):
    seeds = tmp_path / "seeds"
    for variant in ("softmax", "pure_infsa"):
        config = ViTConfig(img_size=48, in_chans=1, patch_size=16, embed_dim=16, depth=1, num_heads=2,
                           num_classes=10, attention=variant)
        save_model(VisionTransformer(config), seeds / "cluttered-digits" / f"{variant}-seed1")
    monkeypatch.setitem(meta_evaluation.N_IMAGES, "cluttered-digits", 4)
    monkeypatch.setitem(meta_evaluation.ROAD_IMAGES, "cluttered-digits", 1)
    out, parts = tmp_path / "meta.json", tmp_path / "parts"
    argv = ["--benchmarks", "cluttered-digits", "--seeds", "1", "--seeds-dir", str(seeds), "--parts", str(parts),
            "--out", str(out), "--threads", "1"]
    assert meta_evaluation.main(argv) == 0
    report = json.loads(out.read_text())
    assert sorted(report["models"]["cluttered-digits"]) == ["pure_infsa-seed1", "softmax-seed1"]
    summary = report["summary"]["cluttered-digits"]
    figures = summary["figures"]
    morf = figures["morf_aoc"]
    assert morf["models"] == 2 and 0 <= morf["trustworthy"] <= 2 and morf["role"] == "metric"
    assert morf["spearman_max"] is None  # untrained models classify none of 4 images: no scored MoRF mean
    box = figures["box_pr_auc"]
    assert -1 <= box["spearman_max"] <= 1 and 0 <= box["stability_min"] <= 1 and box["reactivity_min"] <= 0.5
    assert len(box["stability_curve_min"]) == len(box["noise"])
    for name in ("class_switch_shift", "target_sensitivity"):  # they re-explain: not meta-evaluable
        assert name not in figures
    controls = summary["controls"]
    assert set(controls["negative"]) == {"control_constant", "control_random", "control_peakedness",
                                         "control_total_mass", "control_image"}
    assert controls["negatives_never_trusted"] and all(figures[n]["trustworthy"] == 0 for n in controls["negative"])
    assert set(summary["trusted_for_every_model"]) <= set(figures)
    first = (parts / "cluttered-digits" / "softmax-seed1.json").stat().st_mtime_ns
    assert meta_evaluation.main(argv) == 0  # resumed: nothing recomputed
    assert (parts / "cluttered-digits" / "softmax-seed1.json").stat().st_mtime_ns == first
    assert report["protocol"]["command"].startswith("python scripts/meta_evaluation.py")
