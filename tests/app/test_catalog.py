"""``app/catalog.py``: where models are found, what each path is, loading, class names."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from infsa_viz import VARIANTS, VisionTransformer, load_model, save_model


def test_discover_models_orders_by_variant_and_skips_incomplete(app, tmp_path, make_config):
    for variant in reversed(VARIANTS):
        save_model(VisionTransformer(make_config(variant)), tmp_path / f"m-{variant}")
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "config.json").write_text("{}")  # weights not written yet
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("not a model")
    found = app.catalog.discover_models(tmp_path)
    assert [e.variant for e in found] == list(VARIANTS)
    assert [e.name for e in found] == [f"m-{v}" for v in VARIANTS]
    assert all(e.label == f"{e.variant} · {e.name}" and Path(e.path).is_absolute() for e in found)
    newest = max(f.stat().st_mtime_ns for f in Path(found[0].path).iterdir())
    assert found[0].version == newest and found[0].format == "infsa-viz"  # a retrained model is a new cache key
    assert app.catalog.discover_models(tmp_path / "missing") == []
    with pytest.raises(ValueError, match="no weights"):
        app.catalog.model_entry(tmp_path / "training")
    with pytest.raises(ValueError, match="does not exist"):
        app.catalog.model_entry(tmp_path / "nope")


def test_model_roots_from_the_command_line_and_the_environment(app, tmp_path):
    roots = app.catalog.model_roots(["--models", "a", str(tmp_path)], {"INFSA_VIZ_MODELS": f"b{os.pathsep}c"})
    assert roots == [Path("a"), tmp_path, Path("b"), Path("c")]
    assert app.catalog.model_roots([], {}) == []


def test_find_models_lists_user_models_and_says_what_is_wrong(app, tmp_path, make_config):
    save_model(VisionTransformer(make_config("softmax")), tmp_path / "root" / "mine")
    (tmp_path / "root" / "empty").mkdir()
    alone = tmp_path / "alone"
    save_model(VisionTransformer(make_config("pure_infsa")), alone)  # a root that is itself a model
    found, problems = app.catalog.find_models([tmp_path / "root", alone, tmp_path / "missing"])
    names = [e.name for e in found]
    assert "mine" in names and "alone" in names
    assert next(e for e in found if e.name == "alone").variant == "pure_infsa"
    assert any("empty" in p and "config.json" in p for p in problems)
    assert any(p.endswith("missing: not a directory") for p in problems)


def test_a_state_dict_with_options_is_a_model_like_any_other(app, tmp_path, make_config):
    from safetensors.torch import save_file

    from infsa_viz.formats.timm import to_timm_state_dict

    model = VisionTransformer(make_config("softmax", num_classes=3, in_chans=3))
    save_file({k: v.contiguous() for k, v in to_timm_state_dict(model).items()}, tmp_path / "vit.safetensors")
    heads = model.config.num_heads
    entry = app.catalog.model_entry(f"{tmp_path / 'vit.safetensors'}?num_heads={heads}")
    assert (entry.format, entry.variant, entry.name) == ("timm", "softmax", "vit.safetensors")
    assert entry.path.endswith(f"?num_heads={heads}") and app.catalog.load_error(entry) is None
    assert app.catalog.class_names(entry) == ("class 0", "class 1", "class 2")


def test_short_names_are_unique(app):
    entries = [app.catalog.ModelEntry("/a/m", "m", 0, "infsa-viz"), app.catalog.ModelEntry("/b/m", "m", 0, "infsa-viz"),
               app.catalog.ModelEntry("/c/k", "k", 0, "infsa-viz")]
    assert app.catalog.short_names(entries) == {"/a/m": "/a/m", "/b/m": "/b/m", "/c/k": "k"}


def test_class_names_are_what_load_model_returns(app, own_models, shipped_models):
    from tests.app.conftest import FRUIT_CLASSES, PHOTO_CLASSES

    vit, deit = app.catalog.model_entry(own_models.vit), app.catalog.model_entry(own_models.deit)
    assert app.catalog.class_names(vit) == PHOTO_CLASSES == load_model(own_models.vit).config.class_names
    assert app.catalog.class_names(deit) == FRUIT_CLASSES
    assert (vit.format, vit.variant) == ("transformers", "softmax")
    shipped = app.catalog.model_entry(shipped_models[0].path)  # no names of its own: its benchmark's digits
    assert app.catalog.trained_on(shipped.path, shipped.version) == "cluttered-digits"
    assert app.catalog.class_names(shipped, app.inputs.benchmark_classes())[4] == "digit 4"
    assert app.catalog.class_names(shipped)[4] == "class 4"  # without the benchmarks' names


def test_a_model_that_does_not_load_gives_one_line(app, tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text(json.dumps({"attention": "softmax"}))
    (tmp_path / "bad" / "model.safetensors").write_bytes(b"not weights")
    entry = app.catalog.model_entry(tmp_path / "bad")
    error = app.catalog.load_error(entry)
    assert error and "\n" not in error
    assert app.catalog.class_names(entry) == () and app.catalog.loaded([entry]) == []
    with pytest.raises(ValueError, match="cannot load the model"):
        app.catalog.get_model(entry)


def test_a_model_with_a_damaged_config_is_listed_with_its_reason(app, tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{not json")
    entry = app.catalog.model_entry(tmp_path / "bad")
    assert (entry.format, entry.variant) == ("?", "?")
    assert "JSON" in app.catalog.load_error(entry)
