"""scripts/train_seeds.py: variants x seeds with a fixed data seed, then one evaluation reads them."""

from __future__ import annotations

import json

import pytest

from infsa_viz.cli import main as cli
from scripts import train_seeds


def test_dry_run_plans_every_variant_and_seed(tmp_path, capsys):
    assert train_seeds.main(["--dry-run", "--seeds", "1,2", "--out", str(tmp_path), "--epochs", "3"]) == 0
    err = capsys.readouterr().err
    commands = [line for line in err.splitlines() if line.startswith("infsa-viz train")]
    assert len(commands) == 6  # 3 variants x 2 seeds
    assert all("--data-seed 0" in c and "--data cluttered-digits-hard" in c and "--epochs 3" in c for c in commands)
    assert not any(tmp_path.iterdir())  # nothing trained, nothing written
    with pytest.raises(SystemExit):
        train_seeds.main(["--variants", "softmax,gauss", "--dry-run"])


@pytest.mark.slow
def test_two_seeds_train_and_evaluate_with_spread_and_headroom(tmp_path, capsys):
    runs = tmp_path / "runs"
    argv = ["--benchmark", "cluttered-digits", "--variants", "softmax", "--seeds", "1,2", "--epochs", "1",
            "--images-per-epoch", "32", "--test-size", "16", "--threads", "1", "--out", str(runs)]
    assert train_seeds.main(argv) == 0
    cards = [json.loads((runs / f"softmax-seed{s}" / "card.json").read_text()) for s in (1, 2)]
    assert [c["seed"] for c in cards] == [1, 2] and {c["recipe"]["data_seed"] for c in cards} == {0}
    manifest = json.loads((runs / "seeds.json").read_text())
    assert [r["seed"] for r in manifest["runs"]] == [1, 2]
    capsys.readouterr()
    assert train_seeds.main(argv) == 0  # finished runs are skipped
    assert capsys.readouterr().err.count("# done: ") == 2
    report = tmp_path / "r.json"
    models = f"{runs / 'softmax-seed1'},{runs / 'softmax-seed2'}"
    assert cli(["evaluate", "--models", models, "--methods", "attention", "--references", "--n-images", "8",
                "--steps", "2", "--select", "all", "--out", str(report)]) == 0
    record = json.loads(report.read_text())
    assert [r["method"] for r in record["results"][:3]] == ["attention", "random", "box_oracle"]
    (spread,) = [s for s in record["seeds"] if s["method"] == "attention"]
    assert spread["seeds"] == [1, 2] and spread["figures"]["morf_aoc"]["sd"] is not None
    quality = record["benchmark_quality"]["per_model"][str(runs / "softmax-seed1")]["box_pr_auc"]
    assert quality["oracle_minus_random"] > 0
    assert record["paired_tests"]["model_vs_model"] == []  # two seeds of one variant are not paired
