"""scripts/shortcut.py: every cued seed model measured once (parts keyed by the weights digest), then tabled."""

from __future__ import annotations

import json

import pytest

from infsa_viz.model import VisionTransformer, ViTConfig, save_model
from scripts import shortcut


@pytest.mark.slow
def test_shortcut_measures_each_model_once_and_writes_every_table(tmp_path):
    seeds = tmp_path / "seeds"
    for setting in ("p10", "p100"):
        for variant in ("softmax", "linear_infsa"):
            for seed in (0, 1):
                config = ViTConfig(img_size=48, in_chans=1, patch_size=8, embed_dim=16, depth=2, num_heads=2,
                                   num_classes=10, attention=variant)
                save_model(VisionTransformer(config), seeds / "cued-digits" / setting / f"{variant}-seed{seed}")
    docs = tmp_path / "cued.md"
    docs.write_text("# x\n<!-- BEGIN shortcut -->\n<!-- END shortcut -->\n")
    out, parts = tmp_path / "shortcut.json", tmp_path / "parts"
    argv = ["--seeds-dir", str(seeds), "--n-images", "2", "--parts", str(parts), "--out", str(out), "--docs",
            str(docs)]
    assert shortcut.main(argv) == 0
    report = json.loads(out.read_text())
    assert report["protocol"]["models"] == 8 and len(list(parts.glob("*.json"))) == 8
    tables = report["tables"]
    methods = {r["method"] for r in tables["rise"]}
    assert {"attention", "chefer2021", "edge", "intensity", "random", "evidence_oracle"} <= methods
    assert tables["distinct"]["linear_infsa"] == {"visits": "attention", "perron": "attention"}
    family = [r for r in tables["difference"]["rows"] if r["in_family"]]
    assert {r["method"] for r in family} == {"attention", "rollout", "chefer2021"}  # visits/perron: twins
    edge = next(r for r in tables["rise"] if r["method"] == "edge")
    assert edge["mean"] == 0.0  # model-ignorant: the same share on every model
    text = docs.read_text()
    assert "`edge`" in text and "not in the family" in text and "*Error rate under the null*" in text
    stamps = {p: p.stat().st_mtime_ns for p in parts.glob("*.json")}
    assert shortcut.main(argv) == 0  # resumed: every part read, none rewritten
    assert {p: p.stat().st_mtime_ns for p in parts.glob("*.json")} == stamps
    assert shortcut.main([*argv[:-2], "--docs", "-", "--tables-only"]) == 0
    assert shortcut.main(["--seeds-dir", str(tmp_path / "none")]) == 2
