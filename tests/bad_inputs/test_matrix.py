"""The bad-input matrix (see ``cases.py``): every hostile input gets one clear line, exit 2 / ValueError."""

from __future__ import annotations

import pytest

import re

from tests.bad_inputs.cases import all_cases, run_case
from tests.bad_inputs.fixtures import build
from tests.bad_inputs.sweep_formats import WRONG_PATHS

CASES = all_cases()

#: A model format in a module of its own, as a user's plugin would register it.
TOY_FORMAT = """
import json
from pathlib import Path

from infsa_viz.formats import ModelFormat, register_format
from infsa_viz.model import VisionTransformer, ViTConfig


def _load(path, options):
    try:
        return VisionTransformer(ViTConfig.from_dict(json.loads(Path(path).read_text())))
    except (OSError, ValueError) as error:
        raise ValueError(f"{path}: not a .toyfmt JSON config ({type(error).__name__})") from None


def _sample(folder):
    config = ViTConfig(img_size=16, in_chans=1, patch_size=4, embed_dim=16, depth=1, num_heads=2, num_classes=3)
    (folder / "m.toyfmt").write_text(json.dumps(config.to_dict()))
    return str(folder / "m.toyfmt")


register_format(ModelFormat("toy-tmp", detect=lambda c: c.path.suffix == ".toyfmt", load=_load, sample=_sample,
                            expects="a .toyfmt JSON config"))
"""


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    return build(tmp_path_factory.mktemp("hostile"))


def test_the_matrix_is_large_enough():
    assert len(CASES) >= 60


def formats_without_a_bomb(paths) -> list[str]:
    """The registered formats that no declared-size bomb (``info-bomb-*``, run under the memory limit) is
    detected as: each bomb's model is detected, so the formats come from the registry, not a list."""
    from infsa_viz.formats import FORMATS, detect

    bombs = [c for c in CASES if c.memory and c.id.startswith("info-bomb-")]
    covered = {detect(paths[re.match(r"\{(\w+)\}", c.argv[1]).group(1)]) for c in bombs}
    return [name for name in FORMATS if name not in covered]


def test_every_reader_has_a_declared_size_bomb_under_the_memory_limit(paths):
    assert formats_without_a_bomb(paths) == []


def test_a_format_registered_by_a_plugin_is_swept_with_no_other_edit(paths, tmp_path, registries):
    from infsa_viz.formats import FORMATS, load_model
    from infsa_viz.plugins import load_plugins

    (tmp_path / "toy_format.py").write_text(TOY_FORMAT)
    assert load_plugins([str(tmp_path / "toy_format.py")]) == [] and "toy-tmp" in FORMATS
    cases = [c for c in all_cases() if c.id.endswith("-as-toy-tmp")]
    assert sorted(c.surface for c in cases) == ["api"] * (len(WRONG_PATHS) + 1) + ["cli"]  # + its sample cut short
    assert load_model(FORMATS["toy-tmp"].sample(tmp_path)).config.depth == 1  # the sample is a model
    for case in cases:
        outcome = run_case(case, paths)
        assert outcome.passed, f"{case.id}: {outcome.why}: {outcome.message!r}"
    assert formats_without_a_bomb(paths) == ["toy-tmp"]  # the matrix asks for its declared-size bomb


def _marks(case) -> list:
    marks = [pytest.mark.slow] if case.memory else []
    if not case.ci:  # covered by a faster unit test; the reliability benchmark runs it
        marks.append(pytest.mark.skip(reason="benchmark only: python -m benchmarks reliability"))
    if case.pending:  # another engineer's change; not run (a memory case would only wait for the allocator)
        marks.append(pytest.mark.xfail(reason=case.pending, run=False, strict=True))
    return marks


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c.surface}-{c.id}", marks=_marks(c)) for c in CASES])
def test_case(case, paths):
    outcome = run_case(case, paths)
    assert outcome.passed, f"{case.id}: {outcome.why}: {outcome.message!r}"
