"""scripts/verdict.py: every seed model of a benchmark evaluated once, then summarised for the README."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from infsa_viz.evaluation import compare
from infsa_viz.io import write_json
from infsa_viz.model import VARIANTS, VisionTransformer, ViTConfig, save_model
from scripts import verdict, verdict_text
from scripts.doc_sections import markers, read_section
from tests.evaluation.helpers import image_record


def _docs(tmp_path):
    """A docs file holding the verdict-tables section."""
    path = tmp_path / "verdict.md"
    path.write_text("# verdict\n\n" + "\n".join(markers("verdict-tables")) + "\n\nafter\n", encoding="utf-8")
    return path


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
            "--metrics", str(metrics), "--docs", str(_docs(tmp_path))]
    assert verdict.main([*argv, "--journal", str(tmp_path / "journal")]) == 0
    assert (tmp_path / "journal" / "cluttered-digits" / "journal.json").is_file()  # kept for the next seeds
    report = json.loads((metrics / "verdict-cluttered-digits.json").read_text())
    assert len(report["results"]) == 9 * (len(verdict.METHODS) + 3)  # + random, box_oracle, evidence_oracle
    greedy = json.loads((metrics / "verdict-cluttered-digits-greedy.json").read_text())
    assert {r["method"] for r in greedy["results"]} == {*verdict.METHODS, "random", "greedy_deletion"}
    record = json.loads((metrics / "verdict.json").read_text())
    bench = record["benchmarks"]["cluttered-digits"]
    assert len(bench["models"]) == 9 and bench["n_images"] == 6
    comparisons = {(c["figure"], c["method"], c["variant"]) for c in bench["verdict"]}
    assert {(f, m, v) for f in verdict.FIGURES for m in verdict.METHODS for v in VARIANTS[1:]} <= comparisons
    assert all(c["call"] in ("higher", "lower", "not shown") and len(c["per_seed"]) == 3 for c in bench["verdict"])
    assert all({"difference", "ci", "p", "p_holm", "n_seeds", "matched_images"} <= set(c) for c in bench["verdict"])
    attention = next(e for e in bench["figures"] if e["variant"] == "softmax" and e["method"] == "attention")
    assert attention["seeds"] == [1, 2, 3] and len(attention["box_pr_auc"]["per_seed_ci"]) == 3
    assert 0 <= attention["box_pr_auc"]["mean"] <= 100  # in points
    assert set(bench["benchmark_quality"]) == set(VARIANTS)
    assert bench["benchmark_quality"]["softmax"]["box_pr_auc"]["oracle_minus_random"]["mean"] > 0
    ceiling = bench["morf_ceiling"]["per_variant"]["softmax"]
    assert ceiling["oracle"]["mean"] is not None and bench["morf_ceiling"]["n_images"] == 6
    assert record["paper"]["softmax"]["morf_aoc"] == 42.6
    assert (metrics / "verdict.html").is_file()
    before = (metrics / "verdict-cluttered-digits.json").read_text()
    assert verdict.main([*argv, "--summary-only"]) == 0  # nothing evaluated again
    assert (metrics / "verdict-cluttered-digits.json").read_text() == before
    assert json.loads((metrics / "verdict.json").read_text())["benchmarks"] == record["benchmarks"]
    assert verdict.main(["--benchmarks", "cluttered-digits", "--seeds-dir", str(tmp_path / "none"),
                         "--metrics", str(metrics), "--summary-only", "--docs", str(tmp_path / "verdict.md")]) == 2
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


def _synthetic_report(n: int = 40, seeds=(1, 2, 3)) -> dict:
    """An evaluation report made by the evaluation's own ``compare`` from hand-made records: pure InfSA's
    attention map 5 MoRF points and 0.05 PR-AUC above softmax's in every seed, Linear-InfSA's equal,
    and pure InfSA 10 points less accurate (its first 4 of 40 images wrong)."""
    rng = np.random.default_rng(0)
    records, rows = [], []
    for seed in seeds:
        base = rng.normal(60.0, 10.0, n)
        for variant in VARIANTS:
            model = f"models/seeds/cluttered-digits/{variant}-seed{seed}"
            for method in ("attention", "random", "box_oracle"):
                shift = 5.0 if variant == "pure_infsa" and method == "attention" else 0.0
                values = base + shift + rng.normal(0.0, 0.3) + rng.normal(0.0, 1.0, n)
                records += [image_record(model, method, i, morf=float(values[i]), pr=0.4 + shift / 100 + 0.001 * i,
                                         variant=variant, predicted=1 if variant == "pure_infsa" and i < 4 else 0)
                            for i in range(n)]
                rows.append({"model": model, "variant": variant, "method": method,
                             "accuracy": 0.9 if variant == "pure_infsa" else 1.0,
                             "morf_aoc": float(values.mean()), "box_pr_auc": 0.4 + shift / 100})
    return {"protocol": {"command": "synthetic"}, "dataset": {"name": "cluttered-digits", "n_images": n},
            "results": rows, **compare(records, rows, select="correct")}


def test_summary_of_a_synthetic_report_holds_the_seed_level_verdict(tmp_path):
    """verdict.json: for every variant x map x figure, the seed-level difference in points, its hierarchical-
    bootstrap interval, raw and Holm p, seeds and matched images; and the docs tables from it."""
    metrics, seeds, docs = tmp_path / "metrics", tmp_path / "seeds", _docs(tmp_path)
    for variant in VARIANTS:
        for seed in (1, 2, 3):
            (seeds / "cluttered-digits" / f"{variant}-seed{seed}").mkdir(parents=True)
            (seeds / "cluttered-digits" / f"{variant}-seed{seed}" / "config.json").write_text("{}")
    write_json(metrics / "verdict-cluttered-digits.json", _synthetic_report())
    argv = ["--benchmarks", "cluttered-digits", "--summary-only", "--seeds-dir", str(seeds), "--metrics", str(metrics),
            "--docs", str(docs)]
    assert verdict.main(argv) == 0
    bench = json.loads((metrics / "verdict.json").read_text())["benchmarks"]["cluttered-digits"]
    found = {(c["figure"], c["method"], c["variant"]): c for c in bench["verdict"]}
    measured = ("morf_aoc", "box_pr_auc")  # the synthetic records hold no evidence figures: none is compared
    assert set(found) == {(f, "attention", v) for f in measured for v in VARIANTS[1:]}  # maps, not floors
    pure = found["morf_aoc", "attention", "pure_infsa"]
    assert pure["difference"] == pytest.approx(5.0, abs=1.0) and pure["ci"][0] < pure["difference"] < pure["ci"][1]
    assert pure["n_seeds"] == 3 and pure["matched_images"] == {"per_seed": [36, 36, 36], "min": 36}
    assert pure["p_holm"] >= pure["p"] and pure["call"] == "higher"
    assert pure["accuracy_gap"] == pytest.approx(-10.0) and pure["accuracy_flag"]
    assert found["box_pr_auc", "attention", "pure_infsa"]["difference"] == pytest.approx(5.0)  # x 100: points
    assert pure["per_seed"][0]["variant_accuracy"] == 90.0 and pure["per_seed"][0]["image_level"]["p_wilcoxon_holm"] < 0.05
    linear = found["morf_aoc", "attention", "linear_infsa"]
    assert linear["call"] == "not shown" and not linear["accuracy_flag"]
    table = read_section(docs, "verdict-tables")
    assert table == verdict_text.verdict_tables(json.loads((metrics / "verdict.json").read_text()))
    assert "**higher** ⚠ accuracy -10.0" in table and "| morf_aoc | attention |" in table
    assert docs.read_text().endswith("after\n")  # the prose around the section stays


def test_a_report_before_the_seed_level_verdict_is_summarised_without_calls():
    old = _synthetic_report()
    old["verdict"] = {"protocol": {}, "comparisons": [{"figure": "morf_aoc", "method": "attention", "per_seed": []}]}
    summary = verdict.summarise(old, "old.json")
    assert summary["verdict"] == [] and "predates" in summary["verdict_note"]
    assert "Pending" in verdict_text.verdict_tables({"benchmarks": {"cluttered-digits": summary}})
