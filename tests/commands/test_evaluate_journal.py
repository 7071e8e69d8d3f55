"""A user's files beside (or mistaken for) a journal survive every ``evaluate`` path (issue 30).

Paths: a new run, changed settings, changed data, a second concurrent run, kill and resume (the
last in ``tests/evaluation/test_journal.py`` via ``benchmarks.reliability.kill_and_resume``, and
here with a user's folder as the journal).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from infsa_viz.cli import main
from infsa_viz.evaluation.journal import Journal
from infsa_viz.model import VisionTransformer, ViTConfig, save_model

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def work(tmp_path):
    """A model, a class-folder data set of 8 images, and a user's files in ``work/``."""
    torch.manual_seed(2)
    save_model(VisionTransformer(ViTConfig(embed_dim=16, depth=1, num_heads=2)), tmp_path / "model")
    rng = np.random.default_rng(0)
    for i in range(8):
        folder = tmp_path / "data" / str(i % 2)
        folder.mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(folder / f"{i}.png"), rng.integers(0, 256, (48, 48), dtype=np.uint8))
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    for name in ("notes.txt", "results.csv", "sub/thesis.tex"):
        (work / name).write_text(f"user's {name}")
    return tmp_path


def _user_files(work: Path) -> dict[str, str]:
    """The user's files in ``work`` (what the runs write there, reports and journals, left out)."""
    return {str(p.relative_to(work)): p.read_text() for p in sorted(work.rglob("*"))
            if p.is_file() and p.relative_to(work).parts[0] in ("notes.txt", "results.csv", "sub")}


def _evaluate(root: Path, *extra: str) -> list[str]:
    return ["evaluate", "--models", str(root / "model"), "--methods", "attention", "--data",
            f"folder:{root / 'data'}", "--chunk", "2", "--steps", "3", "--sanity-images", "0", "--subsample", "0",
            "--road-images", "0", *extra]


def test_a_users_folder_named_as_the_journal_is_refused_untouched(work, capsys):
    before = _user_files(work / "work")
    assert main(_evaluate(work, "--journal", str(work / "work"), "--out", str(work / "out" / "r.json"))) == 2
    assert "holds files this toolkit did not write (notes.txt, results.csv, sub/)" in capsys.readouterr().err
    assert _user_files(work / "work") == before and not (work / "out" / "r.json").exists()


def test_user_files_beside_a_journal_survive_new_changed_and_concurrent_runs(work, caplog):
    files, cache = _user_files(work / "work"), work / "work" / "cache"
    named = ("--journal", str(cache), "--out", str(work / "work" / "r.json"))
    assert main(_evaluate(work, *named)) == 0  # a new run
    assert main(_evaluate(work, "--steps", "4", *named)) == 0  # changed settings: another keyed set
    assert len([d for d in cache.iterdir() if d.is_dir()]) == 2
    black = work / "data" / "1" / "3.png"  # changed data: one image of the chunk [2, 3]
    cv2.imwrite(str(black), np.zeros((48, 48), np.uint8))
    with caplog.at_level(logging.WARNING):
        assert main(_evaluate(work, *named)) == 0
    assert "resumed: 3 finished chunk(s)" in caplog.text  # 4 chunks of 2 images, one recomputed
    with Journal(cache, {"held": True}) as running:  # a second run while another uses the journal
        assert main(_evaluate(work, *named)) == 0
        assert (running.run_directory / "run.json").is_file()
    default = work / "work" / "r2.json.journal"
    with Journal(default, {"held": True}) as running:  # the default journal is not removed under a running job
        assert main(_evaluate(work, "--out", str(work / "work" / "r2.json"))) == 0
        assert (running.run_directory / "run.json").is_file()
    assert main(_evaluate(work, "--out", str(work / "work" / "r2.json"))) == 0  # nobody else: removed
    assert not default.exists()
    assert _user_files(work / "work") == files


@pytest.mark.slow
def test_kill_and_resume_with_a_users_folder_beside(work):
    files = _user_files(work / "work")
    argv = [sys.executable, "-m", "infsa_viz", *_evaluate(work, "--methods", "attention,visits", "--out",
                                                          str(work / "work" / "r.json"))]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    journal = work / "work" / "r.json.journal"
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline and len(list(journal.glob("*/*.json"))) < 3:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _user_files(work / "work") == files
    again = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert _user_files(work / "work") == files and not journal.exists()
