"""Resumable evaluation: exact round trip of records, the output lock, and a real SIGKILL + resume."""

from __future__ import annotations

import json

import numpy as np
import pytest

from infsa_viz.data import test_split
from infsa_viz.evaluation import EvalSettings, evaluate, score_images
from infsa_viz.evaluation.journal import Journal, OutputLock, _decode, _encode
from infsa_viz.vit import VisionTransformer



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


def test_journal_of_another_run_is_discarded(tmp_path, caplog):
    Journal(tmp_path / "j", {"run": 1})
    (tmp_path / "j" / "chunk.json").write_text("{}")
    Journal(tmp_path / "j", {"run": 2})
    assert not (tmp_path / "j" / "chunk.json").exists() and "another run" in caplog.text


def test_chunks_are_keyed_by_model_weights(tmp_path, make_config):
    model = VisionTransformer(make_config("softmax", num_classes=10)).eval()
    records, result, parts = score_images(model, test_split(2), "attention", indices=[0, 1])
    Journal(tmp_path / "j", {"run": 1}, models={"m": "aaa"}).save("m", "attention", [0, 1], records, result, parts)
    more = Journal(tmp_path / "j", {"run": 1}, models={"m": "aaa", "other": "ccc"})  # a model added: reused
    assert more.load("m", "attention", [0, 1]) is not None and more.load("other", "attention", [0, 1]) is None
    retrained = Journal(tmp_path / "j", {"run": 1}, models={"m": "bbb"})  # same name, new weights: recomputed
    assert retrained.load("m", "attention", [0, 1]) is None


def test_evaluate_with_journal_equals_without(tmp_path, make_config):
    models = [("m", VisionTransformer(make_config("softmax", num_classes=10)).eval())]
    data, protocol = test_split(6), EvalSettings(steps=4, chunk=2, select="all")
    plain = evaluate(models, ["attention"], data, protocol=protocol)
    journal = Journal(tmp_path / "j", {"run": 1})
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

    result = kill_and_resume(tmp_path)
    assert 0 < result["killed_after_chunks"] < result["chunks"] and not result["report_written_before_resume"]
    assert result["resumed_message"] is not None
    assert result["equal_json"] and result["equal_csv"] and result["equal_images_csv"]
    assert result["journal_removed"] and result["lock_released"]
