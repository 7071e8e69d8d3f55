"""scripts/train_seeds.py: variants x seeds with a fixed data seed, then one evaluation reads them."""

from __future__ import annotations

import json
import re

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
    assert train_seeds.main(["--variants", "softmax,gauss", "--dry-run"]) == 2


@pytest.mark.parametrize("argv,match", [(["--variants", ","], "--variants names no variant"),
                                        (["--epochs", str(10**12)], r"--epochs=1,000,000,000,000 is invalid; expected "
                                                                    r"an integer >= 1 and <= 100,000"),
                                        (["--data-seed", "-1"], "--data-seed=-1 must be a non-negative integer")])
def test_bad_options_are_one_line_and_exit_2(tmp_path, capsys, argv, match):
    assert train_seeds.main([*argv, "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(match, err)
    assert not (tmp_path / "runs").exists()


def test_out_under_a_file_is_refused_up_front(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    assert train_seeds.main(["--out", str(tmp_path / "file" / "runs"), "--epochs", "1"]) == 2
    assert "is a file; expected a folder" in capsys.readouterr().err


def _runs_argv(runs) -> list[str]:
    return ["--benchmark", "cluttered-digits", "--variants", "softmax", "--seeds", "1", "--epochs", "1",
            "--images-per-epoch", "32", "--test-size", "16", "--threads", "1", "--out", str(runs)]


def test_a_second_run_on_one_out_is_refused(tmp_path, capsys):
    from infsa_viz.evaluation.journal import OutputLock

    runs = tmp_path / "runs"
    with OutputLock(runs / "train_seeds"):  # a run holding --out
        assert train_seeds.main(_runs_argv(runs)) == 2
    err = capsys.readouterr().err.strip()
    assert "another train_seeds.py run is writing" in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in runs.iterdir()) == []  # nothing trained; the lock went with its holder


@pytest.mark.parametrize("card", ["{}", "", "[1]", '{"variant": "softmax", "seed": 1, "test_accuracy": 0.5}'])
def test_a_damaged_card_is_not_a_finished_run(tmp_path, capsys, card):
    runs = tmp_path / "runs"
    (runs / "softmax-seed1").mkdir(parents=True)
    (runs / "softmax-seed1" / "card.json").write_text(card)
    assert train_seeds.main(_runs_argv(runs)) == 2
    err = capsys.readouterr().err.strip()
    assert "card.json" in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert (runs / "softmax-seed1" / "card.json").read_text() == card  # left as it was, nothing trained over it
    assert not (runs / "seeds.json").exists()


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
    assert [r["method"] for r in record["results"][:5]] == ["attention", "random", "edge", "intensity", "box_oracle"]
    (spread,) = [s for s in record["seeds"] if s["method"] == "attention"]
    assert spread["seeds"] == [1, 2] and spread["figures"]["morf_aoc"]["sd"] is not None
    quality = record["benchmark_quality"]["per_model"][str(runs / "softmax-seed1")]["box_pr_auc"]
    assert quality["oracle_minus_random"] > 0
    assert record["paired_tests"]["model_vs_model"] == []  # two seeds of one variant are not paired
