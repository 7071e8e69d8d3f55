"""``infsa-viz evaluate``: report structure, protocol, CSV/HTML, torchrun equivalence, bad input."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest
import torch

from infsa_viz.cli import main
from infsa_viz.model import VisionTransformer, ViTConfig, save_model


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    dirs = []
    for variant in ("softmax", "pure_infsa"):
        torch.manual_seed(1)
        save_model(VisionTransformer(ViTConfig(attention=variant, embed_dim=16, depth=2, num_heads=2)), root / variant)
        dirs.append(str(root / variant))
    torch.manual_seed(1)
    save_model(VisionTransformer(ViTConfig(img_size=32, embed_dim=16, depth=1, num_heads=2)), root / "small")
    return dirs, str(root / "small")


ARGS = ["--methods", "attention,random", "--n-images", "12", "--chunk", "4", "--steps", "6", "--select", "all",
        "--subsample", "4", "--road-images", "2", "--road-steps", "3", "--sanity-images", "4"]


def test_report_has_rows_protocol_and_side_files(tmp_path, models):
    out = tmp_path / "r.json"
    assert main(["evaluate", "--models", ",".join(models[0]), *ARGS, "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert set(report) >= {"protocol", "dataset", "results"}
    assert report["protocol"]["settings"]["steps"] == 6 and report["protocol"]["command"].startswith("infsa-viz evaluate")
    assert report["dataset"]["name"] == "cluttered-digits" and report["dataset"]["n_images"] == 12
    rows = report["results"]
    assert [(r["variant"], r["method"]) for r in rows] == [
        ("softmax", "attention"), ("softmax", "random"), ("pure_infsa", "attention"), ("pure_infsa", "random")]
    for r in rows:
        for key in ("n_images", "n_scored", "accuracy", "morf_aoc", "lerf_auc", "aopc", "box_roc_auc",
                    "box_pr_auc", "pointing_game"):
            assert key in r
        assert r["n_images"] == 12 and r["n_scored"] == 12
        assert 0.0 <= r["box_roc_auc"] <= 1.0 and 0.0 <= r["pointing_game"] <= 1.0
        assert len(r["curves"]["morf_mean"]) == 7 and r["curves"]["morf_mean"][0] == pytest.approx(1.0)
        protocol = r["protocol"]  # each row carries the protocol it was computed with
        assert protocol["perturbation"]["baseline"] == "mean" and protocol["perturbation"]["steps"] == 6
        assert protocol["evaluation"]["target"] == "label" and "ground-truth" in protocol["evaluation"]["target_rule"]
        assert protocol["map"]["method"] == r["method"] and "options" in protocol["map"]
        assert {"box_auc", "pointing_game", "aggregation"} <= set(protocol)
        assert {"deletion_insertion", "positive_negative", "road", "class_switch", "mass", "complexity"} <= set(protocol)
        assert protocol["deletion_insertion"]["images"] == "index < 4" and protocol["road"]["images"] == "index < 2"
        assert r["n_subsample"] == 4 and r["n_road"] == 2 and r["sanity"]["n_images"] == 4
    assert report["protocol"]["settings"]["road_images"] == 2 and len(report["rankings"]) == 4
    with open(out.with_suffix(".csv")) as f:
        assert len(list(csv.DictReader(f))) == 4
    html = out.with_suffix(".html").read_text()
    assert 'src="plotly.min.js"' in html and (tmp_path / "plotly.min.js").is_file()


def test_same_seed_reproduces_the_report(tmp_path, models):
    for name in ("a", "b"):
        assert main(["evaluate", "--models", models[0][1], *ARGS, "--out", str(tmp_path / f"{name}.json")]) == 0
    a, b = (json.loads((tmp_path / f"{n}.json").read_text())["results"] for n in "ab")
    assert a == b


def test_a_named_journal_is_kept_and_reused_when_models_are_added(tmp_path, models, caplog):
    journal = tmp_path / "cache"
    first = ["evaluate", "--models", models[0][0], *ARGS, "--journal", str(journal)]
    assert main([*first, "--out", str(tmp_path / "one.json")]) == 0
    assert (journal / "journal.json").is_file()  # kept after the report
    both = ["evaluate", "--models", ",".join(models[0]), *ARGS]
    with caplog.at_level("WARNING"):
        assert main([*both, "--journal", str(journal), "--out", str(tmp_path / "cached.json")]) == 0
    assert "resumed: 6 finished chunk(s)" in caplog.text  # softmax's 3 chunks x 2 methods
    assert main([*both, "--out", str(tmp_path / "plain.json")]) == 0
    cached, plain = (json.loads((tmp_path / f"{n}.json").read_text())["results"] for n in ("cached", "plain"))
    assert cached == plain


@pytest.mark.slow
def test_torchrun_two_processes_match_a_single_process(tmp_path, models):
    single = tmp_path / "single.json"
    assert main(["evaluate", "--models", ",".join(models[0]), *ARGS, "--out", str(single)]) == 0
    multi = tmp_path / "multi.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "INFSA_VIZ_PROGRESS": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "infsa_viz.cli", "evaluate", "--models", ",".join(models[0]), *ARGS, "--out", str(multi)],
        capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    a, b = json.loads(single.read_text()), json.loads(multi.read_text())
    assert b["protocol"]["world_size"] == 2
    assert a["results"] == b["results"]


@pytest.mark.parametrize("extra,message", [
    (["--methods", "gradcam"], "method='gradcam'"),
    (["--boxes", "/tmp"], "--boxes applies to folder data only"),
    (["--out", "r.csv"], "must end in .json"),
    (["--n-images", "0"], "--n-images=0"),
    (["--journal", "j"], "--journal='j' needs --out"),
    (["--journal", __file__, "--out", "r.json"], "is a file; expected a folder"),
    (["--data", "imagenet"], "--data='imagenet'"),
])
def test_bad_input_exits_2(models, capsys, extra, message):
    assert main(["evaluate", "--models", models[0][0], "--n-images", "4", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_models_of_different_sizes_each_read_the_images_through_their_own_preprocessing(tmp_path, models):
    out = tmp_path / "r.json"
    assert main(["evaluate", "--models", f"{models[0][0]},{models[1]}", *ARGS, "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["results"]
    assert [r["protocol"]["perturbation"]["grid"] for r in rows] == [[6, 6], [6, 6], [4, 4], [4, 4]]  # 48 and 32 px


def test_target_option_and_per_image_records(tmp_path, models):
    """Gradient maps explain the label (default), the prediction or a fixed class; the choice is stored,
    and --per-image writes every record (logits, explained class, scores, validity)."""
    out = tmp_path / "r.json"
    base = ["evaluate", "--models", models[0][0], "--methods", "saliency,visits", "--n-images", "6", "--chunk", "3",
            "--steps", "3", "--per-image", "--metrics", "perturbation,box_auc"]
    for target in ("label", "predicted", "7"):
        assert main([*base, "--target", target, "--out", str(out)]) == 0
        rows = json.loads(out.read_text())["results"]
        assert rows[0]["protocol"]["evaluation"]["target"] == (int(target) if target.isdigit() else target)
        with open(out.with_suffix(".images.csv")) as f:
            records = list(csv.DictReader(f))
        assert len(records) == 12 and {r["method"] for r in records} == {"saliency", "visits"}
        saliency = [r for r in records if r["method"] == "saliency"]
        logits = [json.loads(r["logits"]) for r in saliency]
        expected = {"label": [r["label"] for r in saliency], "7": ["7"] * 6,
                    "predicted": [str(max(range(10), key=lambda c: z[c])) for z in logits]}[target]
        assert [r["target"] for r in saliency] == expected
        assert [r["explained"] for r in saliency] == expected  # the class a map explains is the class it is scored for
        visits = [r for r in records if r["method"] == "visits"]
        assert all(r["target"] == "" and r["validity"] in ("True", "False") for r in visits)
    visits_row = next(r for r in rows if r["method"] == "visits")
    assert 0.0 <= visits_row["chain_valid_rows"] <= 1.0 and visits_row["chain_valid_images"] is not None
    assert main([*base, "--target", "first", "--out", str(out)]) == 2


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
def test_the_estimate_comes_before_work_and_progress_after_each_chunk(tmp_path, models):
    """Issue 43: ``evaluate -v`` prints the job's estimate before any image is scored, then one line per finished
    chunk and method with the time left at that pace."""
    out = tmp_path / "r.json"
    done = subprocess.run([sys.executable, "-m", "infsa_viz", "evaluate", "-v", "--threads", "1", "--models", models[0][0],
                           "--methods", "attention,random", "--n-images", "4", "--chunk", "2", "--steps", "2",
                           "--metrics", "perturbation,box_auc", "--out", str(out)],
                          capture_output=True, text=True, timeout=600)  # its own stderr, as a user sees it
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    estimate = next(i for i, line in enumerate(lines) if "infsa-viz evaluate: estimate: about " in line)
    progress = [i for i, line in enumerate(lines) if " left)" in line and "on images " in line]
    assert len(progress) == 4 and estimate < progress[0]  # 2 chunks x 2 methods, each after the estimate
    assert "(1/4;" in lines[progress[0]] and "(4/4;" in lines[progress[-1]]
