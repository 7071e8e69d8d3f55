"""scripts/verdict.py: every seed model of a benchmark evaluated once, then summarised for the README."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from infsa_viz.stats import compare
from infsa_viz.io import write_json
from infsa_viz.model import VARIANTS, VisionTransformer, ViTConfig, save_model
from scripts import verdict, verdict_benchmarks, verdict_text
from scripts.doc_sections import markers, read_section
from tests.evaluation.helpers import image_record


def _docs(tmp_path):
    """A docs file holding the verdict-tables and verdict-image-sets sections."""
    path = tmp_path / "verdict.md"
    path.write_text("# verdict\n\n" + "\n".join(markers("verdict-tables")) + "\n\n"
                    + "\n".join(markers("verdict-image-sets")) + "\n\nafter\n", encoding="utf-8")
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


def test_a_benchmark_is_one_data_entry(tmp_path, monkeypatch):
    """A benchmark with two training settings is one entry: its groups' models are found folder by folder,
    evaluated on its data and images; a retired benchmark is refused with its reason."""
    import argparse

    entry = verdict_benchmarks.VerdictBenchmark("cued", data="cluttered-digits", seeds="cued", n_images=64,
                                                greedy_images=8, groups=("p0.9", "p0.5"))
    monkeypatch.setitem(verdict_benchmarks.VERDICT_BENCHMARKS, "cued", entry)
    for group in entry.groups:
        for variant in VARIANTS:
            (tmp_path / "cued" / group / f"{variant}-seed1").mkdir(parents=True)
            (tmp_path / "cued" / group / f"{variant}-seed1" / "config.json").write_text("{}")
    found = verdict.seed_models("cued", tmp_path)
    assert [p.rsplit("/", 2)[1:] for p in found] == [[g, f"{v}-seed1"] for g in entry.groups for v in VARIANTS]
    args = argparse.Namespace(n_images=None, metrics=Path("m"), journal=None, threads=None)
    argv = verdict.evaluate_argv("cued", found, args)
    assert argv[argv.index("--data") + 1] == "cluttered-digits" and argv[argv.index("--n-images") + 1] == "64"
    greedy = verdict.greedy_argv("cued", found, argparse.Namespace(**{**vars(args), "n_images": 4}))
    assert greedy[greedy.index("--n-images") + 1] == "4" and greedy[greedy.index("--out") + 1] == "m/verdict-cued-greedy.json"
    plain = verdict.evaluate_argv("cluttered-digits", found, args)
    assert plain[plain.index("--n-images") + 1] == "1000"
    cued = verdict.evaluate_argv("cued-digits", found, args)  # a benchmark's own evaluate options
    assert cued[cued.index("--target") + 1] == "predicted" and cued[cued.index("--select") + 1] == "all"
    assert verdict.main(["--benchmarks", "cluttered-digits-hard", "--summary-only"]) == 2


@pytest.mark.slow
def test_evaluates_and_summarises_every_variant_against_softmax(tmp_path, capsys):
    seeds, metrics = tmp_path / "seeds", tmp_path / "metrics"
    _seeds(seeds)
    argv = ["--benchmarks", "cluttered-digits", "--n-images", "6", "--threads", "1", "--seeds-dir", str(seeds),
            "--metrics", str(metrics), "--docs", str(_docs(tmp_path))]
    assert verdict.main([*argv, "--journal", str(tmp_path / "journal")]) == 0
    assert (tmp_path / "journal" / "cluttered-digits" / "journal.json").is_file()  # kept for the next seeds
    report = json.loads((metrics / "verdict-cluttered-digits.json").read_text())
    assert len(report["results"]) == 9 * (len(verdict.METHODS) + 5)  # + random, edge, intensity, box and evidence oracles
    greedy = json.loads((metrics / "verdict-cluttered-digits-greedy.json").read_text())
    assert {r["method"] for r in greedy["results"]} == {*verdict.METHODS, "random", "greedy_deletion"}
    record = json.loads((metrics / "verdict.json").read_text())
    bench = record["benchmarks"]["cluttered-digits"]
    assert len(bench["models"]) == 9 and bench["n_images"] == 6
    comparisons = {(c["figure"], c["method"], c["variant"]) for c in bench["verdict"]}
    assert {(f, m, v) for f in verdict.FIGURES for m in verdict.METHODS for v in VARIANTS[1:]} <= comparisons
    assert all(c["call"] in ("higher", "lower", "not shown") and len(c["per_seed"]) == 3 for c in bench["verdict"])
    assert all({"difference", "ci", "ci_t", "ci_simultaneous", "detectable_difference", "family", "p", "p_holm",
                "n_seeds", "matched_images", "image_sets"} <= set(c) for c in bench["verdict"])
    assert all(set(c["image_sets"]) == {"matched", "own_correct", "all"} for c in bench["verdict"])
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
        (folder / "verdict-cluttered-digits.json").write_text(json.dumps({"dataset": {"name": "cluttered-digits"},
                                                                          "results": [{**row, "box_pr_auc": pr}]}))
    difference, where, compared = verdict.largest_difference(
        json.loads((ours / "verdict-cluttered-digits.json").read_text()),
        json.loads((other / "verdict-cluttered-digits.json").read_text()))
    assert difference == pytest.approx(0.4) and where == "m-seed1 · attention · box_pr_auc" and compared == 3
    argv = ["--benchmarks", "cluttered-digits", "--metrics", str(ours), "--compare", str(other)]
    assert verdict.main(argv) == 0  # 0.4 points: within the 0.5-point tolerance
    (other / "verdict-cluttered-digits.json").write_text(json.dumps({"dataset": {"name": "cluttered-digits"}, "results": [{**row, "morf_aoc": 80.6}]}))
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
    return {"protocol": {"command": "synthetic", "settings": {"select": "correct"}}, "dataset": {"name": "cluttered-digits", "n_images": n},
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
    record = json.loads((metrics / "verdict.json").read_text())
    table = read_section(docs, "verdict-tables")
    assert table == verdict_text.verdict_tables(record)
    assert "**higher** ⚠ accuracy -10.0" in table and "| attention | morf_aoc | pure InfSA |" in table
    assert read_section(docs, "verdict-image-sets") == verdict_text.image_set_table(record)
    # the evaluation stored every image set: pure InfSA's 4 misclassified images count only under "all"
    assert pure["image_sets"]["matched"]["call"] == "higher" and pure["image_sets"]["all"]["stored"]
    assert pure["per_seed"][0]["image_sets"]["own_correct"] == pytest.approx(5.0, abs=1.5)
    assert pure["family"] == 4 and pure["ci_simultaneous"][0] < pure["ci_t"][0] < pure["ci_t"][1] < pure["ci_simultaneous"][1]
    assert "would detect ≥" in verdict_text.readme_table(record) and "Same test on" in verdict_text.called_sentences(record)
    calls = verdict_text.called_table(record).splitlines()
    # no evidence figure in the synthetic records; pure InfSA called higher on both others, Linear on none
    assert calls[2].startswith("| cluttered-digits (3) | pure InfSA | – | **higher**: attention +")
    assert calls[2].endswith(" | **higher**: attention +5.0 | 2 of 2 |") and calls[3].endswith("| – | – | – | 0 of 2 |")
    assert docs.read_text().endswith("after\n")  # the prose around the section stays


def test_a_report_before_the_seed_level_verdict_is_summarised_without_calls():
    old = _synthetic_report()
    old["verdict"] = {"protocol": {}, "comparisons": [{"figure": "morf_aoc", "method": "attention", "per_seed": []}]}
    summary = verdict.summarise(old, "old.json")
    assert summary["verdict"] == [] and "predates" in summary["verdict_note"]
    assert "Pending" in verdict_text.verdict_tables({"benchmarks": {"cluttered-digits": summary}})


def test_a_report_before_the_detectable_difference_gets_it_from_its_seeds_and_rows():
    """A report written before issue #35: family, simultaneous interval and detectable difference are
    recomputed from the seed differences; 'all' (box PR-AUC) and 'own_correct' (MoRF-AOC) image sets from
    the rows; the sets it did not store are said to be missing and enter Holm as p = 1."""
    report = _synthetic_report()
    for c in report["verdict"]["comparisons"]:
        for key in ("family", "ci_simultaneous", "detectable_difference", "image_sets"):
            c.pop(key)
        for s in c["per_seed"]:
            s.pop("image_sets")
    summary = verdict.summarise(report, "old.json")
    assert "predates the image-set means" in summary["image_sets_note"]
    fresh = {(c["figure"], c["variant"]): c for c in verdict.summarise(_synthetic_report(), "new.json")["verdict"]}
    for c in summary["verdict"]:
        new = fresh[c["figure"], c["variant"]]
        assert c["family"] == new["family"] == 4
        np.testing.assert_allclose(c["ci_simultaneous"], new["ci_simultaneous"], atol=1e-3)
        assert c["detectable_difference"] == pytest.approx(new["detectable_difference"], abs=1e-3)
        stored = {name for name, entry in c["image_sets"].items() if entry["stored"]}
        assert stored == {"matched", "all" if c["figure"] == "box_pr_auc" else "own_correct"}
        assert c["image_sets"]["matched"]["call"] == c["call"]


def test_quality_of_several_groups_is_kept_per_group():
    """Two training settings hold models of the same names: their quality entries stay apart, each
    naming its variant and group, and the tables label the group."""
    across = {"s/p10/softmax": {"seeds": [0]}, "s/p100/softmax": {"seeds": [0, 1]}}
    variant_of = {"s/p10/softmax": "softmax", "s/p100/softmax": "softmax"}
    keyed = verdict.by_variant(across, variant_of)
    assert keyed == {"softmax · p10": {"seeds": [0], "variant": "softmax", "group": "s/p10"},
                     "softmax · p100": {"seeds": [0, 1], "variant": "softmax", "group": "s/p100"}}
    one = verdict.by_variant({"s/softmax": {"seeds": [0]}}, {"s/softmax": "softmax"})
    assert list(one) == ["softmax"] and one["softmax"]["group"] == "s"


def test_every_verdict_benchmark_is_a_registered_source_with_scenes():
    """The verdict's list names its protocol (images, groups, options); what each benchmark *is* comes from
    the data-source registry, which every entry must name (its maps are scored on exact object masks)."""
    from infsa_viz.data.sources import data_source
    from scripts.verdict_benchmarks import RETIRED, VERDICT_BENCHMARKS

    for entry in VERDICT_BENCHMARKS.values():
        source = data_source(entry.data)
        assert source.objects == "scenes" and "test" in source.splits, entry
        assert entry.n_images <= source.size and entry.greedy_images <= entry.n_images, entry
    assert not set(RETIRED) & set(VERDICT_BENCHMARKS)
