"""Resumable evaluation: exact round trip of records, the output lock, and a real SIGKILL + resume."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from infsa_viz.data import test_split
from infsa_viz.evaluation import EvalSettings, evaluate, score_images
from infsa_viz.evaluation.journal import Journal, OutputLock, _decode, _encode
from infsa_viz.model import VisionTransformer


def test_encode_decode_is_exact():
    values = {"a": np.array([[0.1, np.nan], [np.inf, -1e-300]], np.float64), "b": np.float32(1 / 3),
              "c": np.arange(3, dtype=np.float32) / 7, "d": (np.array([1, 2]), 0.1 + 0.2), "e": [None, True, "x"]}
    back = _decode(json.loads(json.dumps(_encode(values))))
    for key in ("a", "c"):
        assert back[key].dtype == values[key].dtype
        np.testing.assert_array_equal(back[key], values[key])
    assert back["b"] == values["b"] and type(back["b"]) is np.float32
    assert isinstance(back["d"], tuple) and back["d"][1] == 0.1 + 0.2
    assert back["e"] == values["e"]


def test_journal_returns_what_it_saved(tmp_path, make_config):
    model = VisionTransformer(make_config("pure_infsa", num_classes=10)).eval()
    data = test_split(4)
    records, result, parts = score_images(model, data, "visits", indices=[0, 1, 2, 3])
    journal = Journal(tmp_path / "j", {"run": 1})
    assert journal.load("m", "visits", [0, 1, 2, 3]) is None
    journal.save("m", "visits", [0, 1, 2, 3], records, result, parts)
    journal.close()
    got, summary, got_parts = Journal(tmp_path / "j", {"run": 1}).load("m", "visits", [0, 1, 2, 3])
    def same(x, y, field):
        if isinstance(x, dict):
            assert set(x) == set(y), field
            for key in x:
                same(x[key], y[key], f"{field}.{key}")
        elif isinstance(x, np.ndarray):
            assert x.dtype == y.dtype, field
            np.testing.assert_array_equal(x, y)
        elif isinstance(x, float) and np.isnan(x):
            assert np.isnan(y), field
        else:
            assert x == y, field

    for a, b in zip(records, got):
        for field in a.__dataclass_fields__:
            same(getattr(a, field), getattr(b, field), field)
    assert summary.options == {k: v for k, v in result.options.items() if not isinstance(v, (dict, tuple))}
    np.testing.assert_array_equal(got_parts["steps"][0], parts["steps"][0])


def _saved(tmp_path, make_config, fingerprint=None, **kwargs) -> Journal:
    model = VisionTransformer(make_config("softmax", num_classes=10)).eval()
    records, result, parts = score_images(model, test_split(2), "attention", indices=[0, 1])
    journal = Journal(tmp_path / "j", fingerprint or {"run": 1}, **kwargs)
    journal.save("m", "attention", [0, 1], records, result, parts)
    journal.close()
    return journal


def test_other_settings_start_another_set_and_keep_the_first(tmp_path, make_config):
    _saved(tmp_path, make_config, {"run": 1})
    with Journal(tmp_path / "j", {"run": 2}) as other:  # e.g. --n-images 9 after 8: nothing is wiped
        assert other.load("m", "attention", [0, 1]) is None
    with Journal(tmp_path / "j", {"run": 1}) as first:
        assert first.load("m", "attention", [0, 1]) is not None
    assert len([d for d in (tmp_path / "j").iterdir() if d.is_dir()]) == 2


def _user_files(folder):
    (folder / "sub").mkdir(parents=True)
    for name, text in (("notes.txt", "n"), ("results.csv", "a,b"), ("sub/thesis.tex", "\\section{}")):
        (folder / name).write_text(text)
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_folder_of_the_users_is_refused_and_left_untouched(tmp_path):
    files = _user_files(tmp_path / "mine")
    with pytest.raises(ValueError, match=r"mine' holds files this toolkit did not write \(notes.txt, results.csv, "
                                         r"sub/\); it is left as it is"):
        Journal(tmp_path / "mine", {"run": 1})
    assert {p: p.read_bytes() for p in (tmp_path / "mine").rglob("*") if p.is_file()} == files


def test_a_file_dropped_into_a_journal_is_refused_and_kept(tmp_path, make_config):
    _saved(tmp_path, make_config)
    (tmp_path / "j" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"holds files this toolkit did not write \(notes.txt\)"):
        Journal(tmp_path / "j", {"run": 2})
    assert (tmp_path / "j" / "notes.txt").read_text() == "mine"


def test_an_older_journal_is_refused_not_wiped(tmp_path):
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "run.json").write_text("{}")
    (tmp_path / "j" / ("0" * 24 + ".json")).write_text("{}")
    with pytest.raises(ValueError, match="is an older journal .* delete it or choose another folder"):
        Journal(tmp_path / "j", {"run": 1})
    assert (tmp_path / "j" / "run.json").is_file()


def test_runs_share_a_journal_and_none_removes_it_under_another(tmp_path, make_config, caplog):
    with Journal(tmp_path / "j", {"run": 1}) as running:  # a job using the journal (shared lock)
        other = _saved(tmp_path, make_config, {"run": 2})  # a second run, other settings: beside it
        other.remove()  # would delete the first job's journal: refused while it runs
        assert "kept: another evaluation is using it" in caplog.text
        assert (running.run_directory / "run.json").is_file() and (other.run_directory / "run.json").is_file()
    Journal(tmp_path / "j", {"run": 1}).remove()  # nobody else: removed
    assert not (tmp_path / "j").exists()


def test_remove_deletes_the_journals_files_only(tmp_path, make_config):
    (tmp_path / "notes.txt").write_text("beside")
    journal = _saved(tmp_path, make_config)
    (tmp_path / "j" / "later.txt").write_text("inside")  # appeared during the run
    journal.remove()
    assert (tmp_path / "notes.txt").read_text() == "beside" and (tmp_path / "j" / "later.txt").read_text() == "inside"
    assert sorted(p.name for p in (tmp_path / "j").iterdir()) == ["later.txt"]
    (tmp_path / "j" / "later.txt").unlink()
    _saved(tmp_path, make_config).remove()
    assert not (tmp_path / "j").exists()


def test_changing_one_image_recomputes_only_the_chunks_that_hold_it(tmp_path, make_config):
    models = [("m", VisionTransformer(make_config("softmax", num_classes=10)).eval())]
    data, protocol = test_split(6), EvalSettings(steps=4, chunk=2, select="all")
    with Journal(tmp_path / "j", {"run": 1}, data=data) as journal:
        evaluate(models, ["attention"], data, protocol=protocol, journal=journal)
    images = list(data.images)
    images[3] = np.zeros_like(images[3])  # same size, same name, other bytes
    changed = dataclasses.replace(data, images=np.stack(images) if isinstance(data.images, np.ndarray) else images)
    with Journal(tmp_path / "j", {"run": 1}, data=changed) as journal:
        result = evaluate(models, ["attention"], changed, protocol=protocol, journal=journal)
    assert journal.resumed == 2  # chunks [0, 1] and [4, 5]; [2, 3] recomputed
    assert json.dumps(result.rows, default=str) == json.dumps(
        evaluate(models, ["attention"], changed, protocol=protocol).rows, default=str)
    relabelled = dataclasses.replace(data, labels=np.where(np.arange(6) == 0, (data.labels + 1) % 10, data.labels))
    with Journal(tmp_path / "j", {"run": 1}, data=relabelled) as journal:
        evaluate(models, ["attention"], relabelled, protocol=protocol, journal=journal)
    assert journal.resumed == 2  # a label is an input too


def test_chunks_are_keyed_by_model_weights(tmp_path, make_config):
    model = VisionTransformer(make_config("softmax", num_classes=10)).eval()
    records, result, parts = score_images(model, test_split(2), "attention", indices=[0, 1])
    Journal(tmp_path / "j", {"run": 1}, models={"m": "aaa"}).save("m", "attention", [0, 1], records, result, parts)
    more = Journal(tmp_path / "j", {"run": 1}, models={"m": "aaa", "other": "ccc"})  # a model added: reused
    assert more.load("m", "attention", [0, 1]) is not None and more.load("other", "attention", [0, 1]) is None
    more.close()
    retrained = Journal(tmp_path / "j", {"run": 1}, models={"m": "bbb"})  # same name, new weights: recomputed
    assert retrained.load("m", "attention", [0, 1]) is None


def test_evaluate_with_journal_equals_without(tmp_path, make_config):
    models = [("m", VisionTransformer(make_config("softmax", num_classes=10)).eval())]
    data, protocol = test_split(6), EvalSettings(steps=4, chunk=2, select="all")
    plain = evaluate(models, ["attention"], data, protocol=protocol)
    with Journal(tmp_path / "j", {"run": 1}) as journal:
        evaluate(models, ["attention"], data, protocol=protocol, journal=journal)
    again = Journal(tmp_path / "j", {"run": 1})
    resumed = evaluate(models, ["attention"], data, protocol=protocol, journal=again)
    assert again.resumed == 3
    assert json.dumps(resumed.rows, default=str) == json.dumps(plain.rows, default=str)


def test_output_lock_refuses_a_second_run(tmp_path):
    with OutputLock(tmp_path / "r.json"):
        with pytest.raises(ValueError, match="another evaluation is writing"):
            with OutputLock(tmp_path / "r.json"):
                pass
    with OutputLock(tmp_path / "r.json"):  # released
        pass


def test_output_lock_under_a_file_is_one_clear_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="cannot write next to"):
        with OutputLock(tmp_path / "file" / "r.json"):
            pass


@pytest.mark.slow
def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path):
    from benchmarks.reliability import kill_and_resume

    result = kill_and_resume(tmp_path, n_images=12)  # 18 chunks: the kill lands between the 2nd and the 15th
    assert 0 < result["killed_after_chunks"] < result["chunks"] and not result["report_written_before_resume"]
    assert result["resumed_message"] is not None
    assert result["equal_json"] and result["equal_csv"] and result["equal_images_csv"]
    assert result["journal_removed"] and result["lock_released"] and result["user_file_kept"]


def _report_without_command(path) -> dict:
    record = json.loads(path.read_text())
    record["protocol"].pop("command")
    return record


def _linear(config: dict) -> dict:
    return {**config, "attention": "linear_infsa"}


def _normalised_otherwise(config: dict) -> dict:
    return {**config, "preprocessing": {**config["preprocessing"], "mean": [0.3], "std": [0.4]}}


@pytest.mark.parametrize("edit", [_linear, _normalised_otherwise])
def test_an_edited_config_under_journal_gives_the_fresh_runs_figures(tmp_path, make_config, edit):
    """Acceptance (issue 38): the chunk key covers the whole config, not the weights alone."""
    import torch

    from infsa_viz.cli import main
    from infsa_viz.model import save_model

    torch.manual_seed(1)
    model_dir = save_model(VisionTransformer(make_config("pure_infsa", num_classes=10)), tmp_path / "m")
    argv = ["evaluate", "--models", str(model_dir), "--methods", "attention", "--n-images", "4", "--chunk", "2",
            "--steps", "2", "--subsample", "0", "--road-images", "0", "--sanity-images", "0", "--select", "all"]
    journal = tmp_path / "journal"
    assert main([*argv, "--journal", str(journal), "--out", str(tmp_path / "before.json")]) == 0
    config = json.loads((model_dir / "config.json").read_text())
    (model_dir / "config.json").write_text(json.dumps(edit(config)))
    assert main([*argv, "--journal", str(journal), "--out", str(tmp_path / "journalled.json")]) == 0
    assert main([*argv, "--out", str(tmp_path / "fresh.json")]) == 0
    journalled, fresh = (_report_without_command(tmp_path / f"{n}.json") for n in ("journalled", "fresh"))
    before = _report_without_command(tmp_path / "before.json")
    assert journalled["results"] == fresh["results"]
    assert journalled["results"][0]["morf_aoc"] != before["results"][0]["morf_aoc"]  # the edit moved the figures
    if edit is _linear:
        assert journalled["results"][0]["variant"] == "linear_infsa"


def test_an_unchanged_model_reuses_its_chunks(tmp_path, make_config, caplog):
    from infsa_viz.cli import main
    from infsa_viz.model import save_model

    model_dir = save_model(VisionTransformer(make_config("softmax", num_classes=10)), tmp_path / "m")
    argv = ["evaluate", "--models", str(model_dir), "--methods", "attention", "--n-images", "4", "--chunk", "2",
            "--steps", "2", "--subsample", "0", "--road-images", "0", "--sanity-images", "0",
            "--journal", str(tmp_path / "journal")]
    assert main([*argv, "--out", str(tmp_path / "a.json")]) == 0
    with caplog.at_level("WARNING"):
        assert main([*argv, "--out", str(tmp_path / "b.json")]) == 0
    assert "resumed: 2 finished chunk(s)" in caplog.text


def test_the_chunk_key_holds_the_metric_versions_and_the_methods_defaults(tmp_path, monkeypatch, make_config):
    from infsa_viz.evaluation.journal import model_digest, run_fingerprint
    from infsa_viz.maps import METHODS
    from infsa_viz.metrics.registry import METRICS

    data, protocol = test_split(2), EvalSettings()
    before = run_fingerprint(data, protocol, 1)
    monkeypatch.setattr(type(METRICS["perturbation"]), "version", 2)
    assert run_fingerprint(data, protocol, 1) != before
    journal = Journal(tmp_path / "j", before, data=data)
    path = journal._path("m", "visits", [0, 1])
    monkeypatch.setattr(type(METHODS["visits"]), "defaults", {**METHODS["visits"].defaults, "tol": 1e-6})
    assert journal._path("m", "visits", [0, 1]) != path
    journal.close()
    model = VisionTransformer(make_config("softmax", num_classes=10))
    other = VisionTransformer(make_config("softmax", num_classes=10, class_names=tuple("abcdefghij")))
    other.load_state_dict(model.state_dict())
    assert model_digest(model) != model_digest(other)  # same weights, another config


def test_a_users_stray_run_json_is_not_called_an_older_journal(tmp_path):
    (tmp_path / "j").mkdir()
    (tmp_path / "j" / "run.json").write_text('{"my": "experiment"}')
    (tmp_path / "j" / "results.csv").write_text("mine")
    with pytest.raises(ValueError, match=r"holds files this toolkit did not write \(results.csv, run.json\)"):
        Journal(tmp_path / "j", {"run": 1})
    (tmp_path / "j" / "results.csv").unlink()
    with pytest.raises(ValueError, match=r"holds files this toolkit did not write \(run.json\)"):
        Journal(tmp_path / "j", {"run": 1})
    assert (tmp_path / "j" / "run.json").read_text() == '{"my": "experiment"}'


def _old_format(value):
    """A decoded chunk as journals wrote it before the explained class had one name (issue 46): records
    with ``scored``, perturbation protocols with ``score``."""
    if isinstance(value, dict):
        return {("scored" if k == "explained" and isinstance(v, int) else
                 "score" if k == "explained" else k): _old_format(v) for k, v in value.items()}
    return [_old_format(v) for v in value] if isinstance(value, list) else value


def test_a_chunk_written_before_the_explained_rename_is_read_back(tmp_path, make_config):
    journal = _saved(tmp_path, make_config)
    [chunk] = [p for p in journal.run_directory.glob("*.json") if p.name != "run.json"]
    new = _decode(json.loads(chunk.read_text()))
    chunk.write_text(json.dumps(_encode(_old_format(new))))
    text = chunk.read_text()
    assert '["scored", ' in text and '["score", "target"]' in text and '"explained"' not in text
    again = Journal(tmp_path / "j", {"run": 1})
    records, _, protocols = again.load("m", "attention", [0, 1])  # same file name and key: not recomputed
    assert again.resumed == 1 and [r.explained for r in records] == [r["explained"] for r in new["records"]]
    assert json.dumps(_encode(protocols)) == json.dumps(_encode(new["protocols"]))  # "score" read as "explained"


def test_migrate_chunk_renames_only_the_explained_class():
    from infsa_viz.evaluation.journal import migrate_chunk

    old = {"key": "k", "records": [{"model": "m", "target": None, "scored": 3}],
           "protocols": {"perturbation": {"score": "predicted", "steps": 4},
                         "insertion": {"score": "trapz(top-1 correct, f) / (f_max - f_min)"}}}
    assert migrate_chunk(old) == {"key": "k", "records": [{"model": "m", "target": None, "explained": 3}],
                                  "protocols": {"perturbation": {"explained": "predicted", "steps": 4},
                                                "insertion": {"score": "trapz(top-1 correct, f) / (f_max - f_min)"}}}
    assert migrate_chunk(migrate_chunk(old)) == migrate_chunk(old)
