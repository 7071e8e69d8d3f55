"""scripts/verdict.py: every seed model of a benchmark evaluated once, then summarised for the README."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infsa_viz.attention import VARIANTS
from infsa_viz.vit import VisionTransformer, ViTConfig, save_model
from scripts import verdict


def _seeds(root, seeds=(1, 2, 3)):
    """Tiny untrained models that read the cluttered-digits test images, as ``root/cluttered-digits/``."""
    for seed in seeds:
        for variant in VARIANTS:
            config = ViTConfig(img_size=48, in_chans=1, patch_size=16, embed_dim=16, depth=1, num_heads=2,
                               num_classes=10, attention=variant)
            save_model(VisionTransformer(config), root / "cluttered-digits" / f"{variant}-seed{seed}")


def test_seed_models_are_found_in_variant_then_seed_order(tmp_path):
    _seeds(tmp_path, seeds=(2, 1))
    (tmp_path / "cluttered-digits" / "notes").mkdir()
    (tmp_path / "cluttered-digits" / "gauss-seed1").mkdir()
    found = verdict.seed_models("cluttered-digits", tmp_path)
    assert [p.rsplit("/", 1)[1] for p in found] == [f"{v}-seed{s}" for v in VARIANTS for s in (1, 2)]
    assert verdict.seed_models("cluttered-digits-hard", tmp_path) == []


def test_images_per_benchmark_unless_given():
    import argparse

    def n_images(benchmark: str, given: int | None) -> str:
        args = argparse.Namespace(n_images=given, metrics=Path("m"), journal=None, threads=None)
        argv = verdict.evaluate_argv(benchmark, ["a-seed1"], args)
        return argv[argv.index("--n-images") + 1]

    assert [n_images(b, None) for b in ("cluttered-digits", "cluttered-digits-hard")] == ["1000", "500"]
    assert n_images("cluttered-digits-hard", 64) == "64"


@pytest.mark.slow
def test_evaluates_and_summarises_every_variant_against_softmax(tmp_path, capsys):
    seeds, metrics = tmp_path / "seeds", tmp_path / "metrics"
    _seeds(seeds)
    argv = ["--benchmarks", "cluttered-digits", "--n-images", "6", "--threads", "1", "--seeds-dir", str(seeds),
            "--metrics", str(metrics)]
    assert verdict.main([*argv, "--journal", str(tmp_path / "journal")]) == 0
    assert (tmp_path / "journal" / "cluttered-digits" / "journal.json").is_file()  # kept for the next seeds
    report = json.loads((metrics / "verdict-cluttered-digits.json").read_text())
    assert len(report["results"]) == 9 * (len(verdict.METHODS) + 2)  # + random and box_oracle
    record = json.loads((metrics / "verdict.json").read_text())
    bench = record["benchmarks"]["cluttered-digits"]
    assert len(bench["models"]) == 9 and bench["n_images"] == 6
    comparisons = {(c["figure"], c["method"], c["variant"]) for c in bench["verdict"]}
    assert {(f, m, v) for f in verdict.FIGURES for m in verdict.METHODS for v in VARIANTS[1:]} <= comparisons
    assert all(c["call"] in ("higher", "lower", "not shown") and len(c["per_seed"]) == 3 for c in bench["verdict"])
    attention = next(e for e in bench["figures"] if e["variant"] == "softmax" and e["method"] == "attention")
    assert attention["seeds"] == [1, 2, 3] and len(attention["box_pr_auc"]["per_seed_ci"]) == 3
    assert 0 <= attention["box_pr_auc"]["mean"] <= 100  # in points
    assert set(bench["benchmark_quality"]) == set(VARIANTS)
    assert bench["benchmark_quality"]["softmax"]["box_pr_auc"]["oracle_minus_random"]["mean"] > 0
    assert record["paper"]["softmax"]["morf_aoc"] == 42.6
    assert (metrics / "verdict.html").is_file()
    before = (metrics / "verdict-cluttered-digits.json").read_text()
    assert verdict.main([*argv, "--summary-only"]) == 0  # nothing evaluated again
    assert (metrics / "verdict-cluttered-digits.json").read_text() == before
    assert json.loads((metrics / "verdict.json").read_text())["benchmarks"] == record["benchmarks"]
    assert verdict.main(["--benchmarks", "cluttered-digits", "--seeds-dir", str(tmp_path / "none"),
                         "--metrics", str(metrics), "--summary-only"]) == 2
    assert "no seed models" in capsys.readouterr().err


def test_compare_finds_the_largest_difference_in_points(tmp_path, capsys):
    row = {"model": "m-seed1", "method": "attention", "morf_aoc": 80.0, "box_pr_auc": 0.70, "n_images": 10,
           "variant": "softmax", "morf_aoc_ci": [79.0, 81.0]}
    ours, other = tmp_path / "ours", tmp_path / "other"
    for folder, pr in ((ours, 0.70), (other, 0.704)):
        folder.mkdir()
        (folder / "verdict-cluttered-digits.json").write_text(json.dumps({"results": [{**row, "box_pr_auc": pr}]}))
    difference, where, compared = verdict.largest_difference(
        json.loads((ours / "verdict-cluttered-digits.json").read_text()),
        json.loads((other / "verdict-cluttered-digits.json").read_text()))
    assert difference == pytest.approx(0.4) and where == "m-seed1 · attention · box_pr_auc" and compared == 3
    argv = ["--benchmarks", "cluttered-digits", "--metrics", str(ours), "--compare", str(other)]
    assert verdict.main(argv) == 0  # 0.4 points: within the 0.5-point tolerance
    (other / "verdict-cluttered-digits.json").write_text(json.dumps({"results": [{**row, "morf_aoc": 80.6}]}))
    assert verdict.main(argv) == 1 and "largest difference 0.6 points" in capsys.readouterr().err
    assert verdict.main([*argv[:-1], str(tmp_path / "nowhere")]) == 2
