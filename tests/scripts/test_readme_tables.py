"""Every table the README and docs/ show is the one scripts/readme_tables.py makes from metrics/ now."""

from __future__ import annotations

from scripts import readme_tables


def test_readme_tables_match_the_committed_reports(capsys):
    assert readme_tables.main(["--check"]) == 0, capsys.readouterr().err


def test_every_table_has_one_home_and_is_only_there():
    assert set(readme_tables.HOMES) == set(readme_tables.TABLES)
    files = set(readme_tables.HOMES.values())
    assert files <= {"README.md", "docs/reference.md", "docs/benchmarks.md", "docs/verdict.md", "docs/cued.md",
                     "docs/models.md"}
    for name, make in readme_tables.TABLES.items():
        holders = [f for f in files if make() in (readme_tables.ROOT / f).read_text(encoding="utf-8")]
        assert holders == [readme_tables.HOMES[name]], (name, holders)


def test_check_fails_when_a_table_drifts(tmp_path, monkeypatch, capsys):
    for f in set(readme_tables.HOMES.values()):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text((readme_tables.ROOT / f).read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(readme_tables, "ROOT", tmp_path)
    assert readme_tables.main(["--check"]) == 0
    bench = tmp_path / "docs" / "benchmarks.md"
    bench.write_text(bench.read_text(encoding="utf-8").replace(readme_tables.map_cost_table(), "gone"), encoding="utf-8")
    assert readme_tables.main(["--check"]) == 1
    assert "map cost (docs/benchmarks.md)" in capsys.readouterr().err
