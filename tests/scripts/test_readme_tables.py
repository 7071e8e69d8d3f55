"""Every table the README shows is the one scripts/readme_tables.py makes from metrics/ now."""

from __future__ import annotations

from scripts import readme_tables


def test_readme_tables_match_the_committed_reports(capsys):
    assert readme_tables.main(["--check"]) == 0, capsys.readouterr().err
