from __future__ import annotations

import pytest

from infsa_viz.io import atomic_write, read_json, write_json


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "a" / "out.json"
    write_json(target, {"x": 1})
    write_json(target, {"x": 2})
    assert read_json(target) == {"x": 2}
    assert [p.name for p in target.parent.iterdir()] == ["out.json"]


def test_failed_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "f.txt"
    atomic_write(target, "old")
    with pytest.raises(TypeError):
        atomic_write(target, 123)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_read_json_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="file not found"):
        read_json(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="bad.json: not valid JSON"):
        read_json(tmp_path / "bad.json")


@pytest.mark.parametrize("text", ["=1+1", "+1", "-2", "@SUM(A1)", "\tx", "\rx", "=HYPERLINK(\"http://x\")"])
def test_csv_cells_that_start_like_a_formula_get_a_quote(text):
    from infsa_viz.io import csv_cell

    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["plain", "a=b", "", -0.5, 3, None, "[1, -2]"])
def test_other_csv_cells_stay_as_they_are(value):
    from infsa_viz.io import csv_cell

    assert csv_cell(value) == value


def test_an_output_that_is_in_or_holds_an_input_is_refused(tmp_path):
    from infsa_viz.io import refuse_overwriting_inputs

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    for out, source, how in ((model / "config.json", model / "config.json", "the input"),
                             (model / "new.json", model, "a file of the input"),
                             (tmp_path, model, "a folder holding the input")):
        with pytest.raises(ValueError, match=f"--out='.*' would overwrite {how} "):
            refuse_overwriting_inputs({"--out": str(out)}, [str(source)])
    link = tmp_path / "link.json"
    link.symlink_to(model / "config.json")
    with pytest.raises(ValueError, match="would overwrite the input"):  # a link to an input is that input
        refuse_overwriting_inputs({"--out": str(link)}, [str(model / "config.json")])
    refuse_overwriting_inputs({"--out": str(tmp_path / "elsewhere.json"), "--other": None}, [str(model), None, "test:0"])


def test_replace_folder_swaps_only_a_complete_folder(tmp_path):
    from infsa_viz.io import replace_folder

    target = tmp_path / "model"
    target.mkdir()
    (target / "weights").write_text("old")

    def failing(folder):
        (folder / "weights").write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        replace_folder(target, failing)
    assert (target / "weights").read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    assert replace_folder(target, lambda folder: (folder / "weights").write_text("new")) == 3
    assert (target / "weights").read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    replace_folder(tmp_path / "fresh", lambda folder: (folder / "a").write_text("x"))
    assert (tmp_path / "fresh" / "a").read_text() == "x"


def test_check_new_folder_refuses_a_model_unless_overwrite(tmp_path):
    from infsa_viz.io import check_new_folder

    (tmp_path / "m").mkdir()
    check_new_folder("--out", tmp_path / "m", overwrite=False)  # empty: fine
    (tmp_path / "m" / "config.json").write_text("{}")
    with pytest.raises(ValueError, match=r"--out='.*m' already holds config.json; .*--overwrite"):
        check_new_folder("--out", tmp_path / "m", overwrite=False)
    check_new_folder("--out", tmp_path / "m", overwrite=True)
    with pytest.raises(ValueError, match="is a file"):
        check_new_folder("--out", tmp_path / "m" / "config.json", overwrite=True)


def test_model_files_digest_changes_with_any_file_of_the_model(tmp_path):
    from infsa_viz.io import model_files_digest

    (tmp_path / "config.json").write_text('{"a": 1}')
    (tmp_path / "model.safetensors").write_bytes(b"123")
    first = model_files_digest(tmp_path)
    assert model_files_digest(tmp_path) == first
    (tmp_path / "config.json").write_text('{"a": 2}')
    assert model_files_digest(tmp_path) != first
    assert model_files_digest(tmp_path / "model.safetensors") != model_files_digest(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        model_files_digest(tmp_path / "missing")
