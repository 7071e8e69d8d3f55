r"""The module index of ``docs/reference.md``: every module of ``infsa_viz`` and what it holds
(maintainer script).

    python scripts/module_index.py            # rewrite the index section of docs/reference.md
    python scripts/module_index.py --check    # exit 1 if a module is missing from it or it is stale

Each row is a module's path and the first sentence of its docstring, so the index says what each
module's author says it holds. ``tests/scripts/test_module_index.py`` runs the check: a module added
to the package without a row (or a docstring) fails the suite, and one command writes the row.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file (python scripts/x.py): make "scripts" importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from infsa_viz.cli import script_main  # noqa: E402
from scripts.doc_sections import read_section, write_section

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "infsa_viz"
REFERENCE = ROOT / "docs" / "reference.md"
SECTION = "module-index"
#: Longest description kept (the first sentence, cut at a word).
WIDTH = 110


def summary(path: Path) -> str:
    """The first sentence of a module's docstring (``ValueError`` naming a module without one)."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not doc:
        raise ValueError(f"{path.relative_to(ROOT)} has no docstring; the module index reads its first sentence")
    text = " ".join(doc.strip().split("\n\n")[0].split())
    first = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0].rstrip(".")
    if len(first) > WIDTH:
        first = first[:WIDTH].rsplit(" ", 1)[0] + " …"
    return first.replace("|", "/")


def index() -> str:
    """The markdown table: every module of the package, in path order."""
    rows = [f"| `{p.relative_to(ROOT).as_posix()}` | {summary(p)} |" for p in sorted(PACKAGE.rglob("*.py"))]
    return "\n".join(["| module | what it holds |", "|---|---|", *rows])


@script_main("module_index.py")
def main(argv: list[str] | None = None) -> int:
    from infsa_viz.cli import script_parser

    parser = script_parser("module_index.py", __doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the index in docs/reference.md is stale")
    args = parser.parse_args(argv)
    wanted = index()
    if args.check:
        if read_section(REFERENCE, SECTION) != wanted:
            print(f"{REFERENCE.relative_to(ROOT)}: the module index is stale; run python scripts/module_index.py",
                  file=sys.stderr)
            return 1
        return 0
    write_section(REFERENCE, SECTION, wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main())
