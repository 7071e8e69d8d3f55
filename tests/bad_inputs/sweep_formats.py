"""Hostile inputs of every registered model format, generated from :data:`infsa_viz.formats.FORMATS`.

A format forced on a path (``load_model(path, format=name)``, ``PATH?format=name``) skips
detection, so its own loader meets whatever the path holds. For every format registered when
:func:`format_cases` runs (a plugin's included), each path of :data:`WRONG_PATHS` forced as that
format must be refused with one line naming the path, by the library and by ``infsa-viz info``.
A format that declares a sample (:attr:`ModelFormat.sample`) also gets its sample with every file cut
to half (an interrupted download or copy), which must be refused with one line naming a file of it.
A new format needs no edit here; the options a format reads (:attr:`ModelFormat.options`) decide
whether the cases pass ``num_heads``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any, Callable

from tests.bad_inputs.cases import Case, Paths

#: Fixture name → its file name under ``formats/``: paths of no format, each forced as every format
#: (garbage bytes named .safetensors, a missing path, an empty folder, a folder whose config.json is
#: ``{}``, a pickle checkpoint).
WRONG_PATHS: dict[str, str] = {
    "wrong_garbage": "garbage.safetensors", "wrong_missing": "missing", "wrong_folder": "empty",
    "wrong_config": "config_only", "wrong_pickle": "model.pt",
}


def format_sweep_fixtures(root: Path, p: dict[str, Path]) -> None:
    """Write the :data:`WRONG_PATHS` under ``root/formats`` into ``p``."""
    folder = root / "formats"
    folder.mkdir()
    p.update({fixture: folder / file for fixture, file in WRONG_PATHS.items()})
    p["wrong_garbage"].write_bytes(b"\x01\xfe" * 64)
    p["wrong_folder"].mkdir()
    p["wrong_config"].mkdir()
    (p["wrong_config"] / "config.json").write_text("{}")
    p["wrong_pickle"].write_bytes(b"\x80\x04K\x01.")  # a pickle of the int 1


def _query(name: str) -> str:
    """``?format=name`` plus the options a state-dict format cannot do without."""
    from infsa_viz.formats import FORMATS

    return f"?format={name}" + ("&num_heads=2" if "num_heads" in FORMATS[name].options else "")


def _load(fixture: str, query: str) -> Callable[[Paths], Any]:
    from infsa_viz import load_model

    return lambda p: load_model(str(p[fixture]) + query)


def _truncated_sample(name: str, slug: str) -> Callable[[Paths], Any]:
    """Write ``name``'s sample under ``samples/<slug>``, cut every file of it to half, load it."""
    def call(p: Paths) -> Any:
        from infsa_viz import load_model
        from infsa_viz.formats import FORMATS

        folder = p["root"] / "samples" / slug
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        spec = FORMATS[name].sample(folder)
        for file in [f for f in folder.rglob("*") if f.is_file()]:
            data = file.read_bytes()
            file.write_bytes(data[:len(data) // 2])
        return load_model(spec)
    return call


def format_cases() -> list[Case]:
    """For every registered format, every :data:`WRONG_PATHS` forced as it (library), the garbage file
    forced as it (``infsa-viz info``) and, where it declares a sample, its sample cut short (library)."""
    from infsa_viz.formats import FORMATS

    cases = []
    for name in FORMATS:
        slug = re.sub(r"[^a-z0-9]+", "-", name.lower())
        for fixture, file in WRONG_PATHS.items():
            cases.append(Case(f"load-{fixture.removeprefix('wrong_')}-as-{slug}", "api", f"formats/{re.escape(file)}",
                              call=_load(fixture, _query(name))))
        cases.append(Case(f"info-garbage-as-{slug}", "cli", f"formats/{re.escape(WRONG_PATHS['wrong_garbage'])}",
                          argv=("info", "{wrong_garbage}" + _query(name))))
        if FORMATS[name].sample is not None:
            cases.append(Case(f"load-truncated-sample-as-{slug}", "api", f"samples/{slug}/",
                              call=_truncated_sample(name, slug)))
    return cases
