"""scripts/morf_ceiling.py: maps against the greedy oracle and the beam estimate, per model, resumable."""

from __future__ import annotations

import json

from infsa_viz.model import VisionTransformer, ViTConfig, save_model
from scripts import morf_ceiling


def test_counts_pairs_above_each_ceiling_and_resumes(tmp_path, monkeypatch):
    seeds = tmp_path / "seeds"
    config = ViTConfig(img_size=48, in_chans=1, patch_size=16, embed_dim=16, depth=1, num_heads=2, num_classes=10)
    save_model(VisionTransformer(config), seeds / "cluttered-digits" / "softmax-seed1")
    monkeypatch.setitem(morf_ceiling.N_IMAGES, "cluttered-digits", 3)
    monkeypatch.setattr(morf_ceiling, "SEARCH", {"width": 1, "expand": 2})
    monkeypatch.setattr(morf_ceiling, "ALT_SEARCH", {"width": 2, "expand": 1})
    out, parts = tmp_path / "ceiling.json", tmp_path / "parts"
    argv = ["--benchmarks", "cluttered-digits", "--seeds-dir", str(seeds), "--parts", str(parts), "--out", str(out)]
    assert morf_ceiling.main(argv) == 0
    report = json.loads(out.read_text())
    summary = report["summary"]["cluttered-digits"]
    model = report["models"]["cluttered-digits"]["softmax-seed1"]
    assert summary["pairs"] == 3 * len(report["protocol"]["maps"]) == 3 * len(model["maps"])
    assert all(b >= g - 1e-9 for b, g in zip(model["beam_deletion"], model["greedy_deletion"], strict=True))
    assert summary["above_beam_deletion"] <= summary["above_greedy_deletion"]
    above = sum(v > b + 1e-9 for values in model["maps"].values() for v, b in zip(values, model["beam_deletion"]))
    assert summary["above_beam_deletion"] == above == sum(summary["per_map_above_beam"].values())
    assert 0 < model["cost"]["beam_forwards_per_image_mean"] <= model["cost"]["beam_forwards_bound"]
    # exceedances against the best of the searches: never more than against any one of them
    best = [max(g, b, a) for g, b, a in zip(model["greedy_deletion"], model["beam_deletion"],
                                            model["beam_deletion_alt"], strict=True)]
    above_best = sum(v > m + 1e-9 for values in model["maps"].values() for v, m in zip(values, best))
    assert summary["above_best_of_searches"] == above_best <= summary["above_beam_deletion"]
    assert summary["searches"] == ["greedy_deletion", "beam_deletion", "beam_deletion_alt"]
    assert "lower bound" in report["protocol"]["estimate"]
    first = (parts / "cluttered-digits" / "softmax-seed1.json").stat().st_mtime_ns
    assert morf_ceiling.main([*argv, "--summary-only"]) == 0
    assert (parts / "cluttered-digits" / "softmax-seed1.json").stat().st_mtime_ns == first
    assert json.loads(out.read_text())["protocol"]["command"].startswith("python scripts/morf_ceiling.py --benchmarks")


def test_cued_digits_explains_the_prediction():
    import numpy as np
    import pytest
    import torch

    from infsa_viz.data import test_split
    from scripts.seed_runs import explained

    assert explained("cued-digits") == {"target": "predicted", "select": "all"}
    assert explained("cluttered-digits")["target"] == "label"
    torch.manual_seed(0)
    model = VisionTransformer(ViTConfig(img_size=48, in_chans=1, patch_size=16, embed_dim=16, depth=1, num_heads=2,
                                        num_classes=10)).eval()
    data = test_split(2, benchmark="cued-digits")
    found = morf_ceiling.ceiling_of_model(model, data, ["random"], target="predicted")
    assert found["protocol"]["target"] == "predicted" and len(found["greedy_deletion"]) == 2
    assert np.all(np.isfinite(found["greedy_deletion"])) and np.all(np.isfinite(found["beam_deletion"]))
    with pytest.raises(ValueError, match="target='top 2'"):
        morf_ceiling.ceiling_of_model(model, data, ["random"], target="top 2")
