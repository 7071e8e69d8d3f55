"""scripts/paper_gap.py on tiny untrained seed models: both studies, their JSON and their docs tables."""

from __future__ import annotations

import json

import pytest

from infsa_viz.model import VARIANTS, VisionTransformer, ViTConfig, save_model
from scripts import paper_gap
from scripts.doc_sections import markers, read_section

SECTIONS = ("protocol-sensitivity", "protocol-sensitivity-matches", "forking-paths", "forking-paths-grid",
            "eigen-cosine-layers", "eigen-cosine-tokens")


def _seed_models(root):
    for benchmark, size, seeds in (("cluttered-digits", 48, (0, 1, 2)), ("cluttered-digits-hard", 96, (1, 2, 3))):
        for variant in VARIANTS:
            for seed in seeds:
                config = ViTConfig(img_size=size, in_chans=1, patch_size=16, embed_dim=16, depth=2, num_heads=2,
                                   num_classes=10, attention=variant)
                save_model(VisionTransformer(config), root / benchmark / f"{variant}-seed{seed}")


@pytest.mark.slow
def test_both_studies_write_their_json_and_tables(tmp_path):
    _seed_models(tmp_path / "seeds")
    docs = tmp_path / "verdict.md"
    docs.write_text("\n\n".join("\n".join(markers(s)) for s in SECTIONS) + "\n", encoding="utf-8")
    argv = ["--n-images", "4", "--cosine-images", "3", "--token-images", "2", "--threads", "1",
            "--seeds-dir", str(tmp_path / "seeds"), "--metrics", str(tmp_path), "--docs", str(docs)]
    assert paper_gap.main(argv) == 0
    record = json.loads((tmp_path / "protocol-sensitivity.json").read_text())
    assert len(record["models"]) == 9 and len(record["choices"]) == 135
    scores = record["models"][0]["scores"]
    assert set(scores) == set(paper_gap.MAPS) and all(len(v) == 135 for v in scores.values())
    assert all(n <= 4 for method in scores.values() for _, n in method)
    cosine = json.loads((tmp_path / "eigen-cosine.json").read_text())
    assert len(cosine["layers"]) == 9 and len(cosine["layers"][0]["trained"]["per_layer"]) == 2
    assert {e["num_tokens"] for e in cosine["tokens"]} == {5, 10, 37, 65}
    assert {g["num_tokens"] for g in cosine["gaussian"]} == {5, 10, 37, 65}
    for section in SECTIONS:
        assert read_section(docs, section)
    tables = {**paper_gap.sensitivity_tables(record), **paper_gap.cosine_tables(cosine)}
    assert all(read_section(docs, name) == table for name, table in tables.items())
    assert "ours: mean · patch_fraction · ratio · aoc · label · correct" in tables["protocol-sensitivity"]
    assert "target = predicted, images = all" in tables["protocol-sensitivity"]
    assert paper_gap.main([*argv, "--tables-only"]) == 0  # from the JSON alone
    assert "seed 2 (Linear-InfSA seed 2 vs softmax seed 2)" in tables["forking-paths"]


def test_a_missing_seed_model_or_section_exits_2(tmp_path, capsys):
    assert paper_gap.main(["--only", "cosine", "--seeds-dir", str(tmp_path), "--metrics", str(tmp_path)]) == 2
    assert "do not exist" in capsys.readouterr().err
    assert paper_gap.main(["--n-images", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "paper_gap.py: error: --n-images=0 must be a positive integer"  # one line, no usage
    for bad in ("a,b", "-1", ","):
        assert paper_gap.main(["--seeds", bad]) == 2
        assert "--seeds" in capsys.readouterr().err
