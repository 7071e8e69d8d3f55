"""scripts/meta_evaluation.py: every seed model meta-evaluated once (resumable), then summarised."""

from __future__ import annotations

import json

import pytest

from infsa_viz.model import VisionTransformer, ViTConfig, save_model
from scripts import meta_evaluation


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
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
    # two independent reference oracles: trusted only under both; the evidence figures are by construction
    # under the re-rendered evidence (their own ground truth), none under grey fill
    by_oracle = summary["by_oracle"]
    assert set(by_oracle) == {"evidence_oracle", "evidence_oracle_greyfill"}
    assert "evidence_mass_accuracy" in by_oracle["evidence_oracle"]["by_construction"]
    assert by_oracle["evidence_oracle_greyfill"]["by_construction"] == []
    assert set(summary["trusted_under_every_oracle"]) == (set(by_oracle["evidence_oracle"]["trusted_for_every_model"])
                                                          & set(by_oracle["evidence_oracle_greyfill"]
                                                                ["trusted_for_every_model"]))
    assert sorted(by_oracle["evidence_oracle"]["ranking"]) == sorted(by_oracle["evidence_oracle_greyfill"]["ranking"])
    assert summary["trusted_for_every_model"] == by_oracle["evidence_oracle"]["trusted_for_every_model"]
    first = (parts / "cluttered-digits" / "softmax-seed1.json").stat().st_mtime_ns
    assert meta_evaluation.main(argv) == 0  # resumed: nothing recomputed
    assert (parts / "cluttered-digits" / "softmax-seed1.json").stat().st_mtime_ns == first
    assert report["protocol"]["command"].startswith("python scripts/meta_evaluation.py")
