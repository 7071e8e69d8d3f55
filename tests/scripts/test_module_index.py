"""docs/reference.md names every module of the package (scripts/module_index.py)."""

from __future__ import annotations

from pathlib import Path

from scripts import module_index


def test_the_reference_names_every_module():
    assert module_index.main(["--check"]) == 0
    text = module_index.REFERENCE.read_text(encoding="utf-8")
    for path in module_index.PACKAGE.rglob("*.py"):
        assert f"`{path.relative_to(module_index.ROOT).as_posix()}`" in text


def test_a_module_without_a_docstring_is_named(tmp_path, monkeypatch):
    (tmp_path / "infsa_viz").mkdir()
    (tmp_path / "infsa_viz" / "bare.py").write_text("x = 1\n")
    monkeypatch.setattr(module_index, "ROOT", tmp_path)
    monkeypatch.setattr(module_index, "PACKAGE", tmp_path / "infsa_viz")
    try:
        module_index.index()
    except ValueError as error:
        assert "infsa_viz/bare.py has no docstring" in str(error)
    else:
        raise AssertionError("a module without a docstring was indexed")
    assert Path(module_index.__file__).name == "module_index.py"
