"""The fourth hostile-input sweep (issue 45): a case for every class of its findings.

Outputs over inputs (scripts' and commands' ``--out`` naming a model file, a part, a trained model
folder), stale or foreign stored results (parts of a retrained model, a journal chunk copied in),
plugins that raise ``SystemExit``/``KeyboardInterrupt`` or return maps of the wrong shape, weights
larger than the memory available (sparse files declaring gigabytes, run under the 3 GiB limit),
unbounded numbers, and reports read under another benchmark's name or summarised over nothing.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

import torch

from tests.bad_inputs.cases import ROOT, Case, Paths, app_with_plugins
from tests.bad_inputs.fixtures import TINY, _model

HUGE = str(10**12)
SEEDS = ["--benchmarks", "cluttered-digits", "--seeds", "1", "--seeds-dir", "{seeds}"]

PLUGIN = '''"""Hostile map methods (the fourth sweep): each misbehaves in one way."""
import torch
from infsa_viz.maps.base import MapMethod, register


class _Base(MapMethod):
    family = "baseline"
    description = "a hostile plugin method"
    cost = "none"


@register
class Exits(_Base):
    name = "plugin_exits"

    def _compute(self, forward, options):
        raise SystemExit(0)


@register
class Interrupts(_Base):
    name = "plugin_interrupts"

    def _compute(self, forward, options):
        raise KeyboardInterrupt


@register
class SmallMap(_Base):
    name = "plugin_small_map"

    def _compute(self, forward, options):
        return torch.ones(forward.inputs.shape[0], 3, 5), {}, None


@register
class FlatMap(_Base):
    name = "plugin_flat_map"

    def _compute(self, forward, options):
        return torch.ones(forward.inputs.shape[0], 36), {}, None
'''


# ----------------------------------------------------------------------------------------------
# Fixtures
# ----------------------------------------------------------------------------------------------

def _sparse_weights(path: Path, shapes: dict[str, tuple[int, ...]]) -> Path:
    """A valid safetensors file of F32 zeros (a sparse file: the data is a hole) with these shapes."""
    import math
    import struct

    header, offset = {}, 0
    for name, shape in shapes.items():
        n = 4 * math.prod(shape)
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(text)) + text)
        handle.truncate(8 + len(text) + offset)
    return path


def _meta_state(**config: Any) -> dict[str, tuple[int, ...]]:
    """Tensor name → shape of our ViT with this config, built on the meta device (nothing allocated)."""
    from infsa_viz.model import ViTConfig, VisionTransformer

    with torch.device("meta"):
        model = VisionTransformer(ViTConfig(**config))
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


BIG = dict(img_size=224, in_chans=3, patch_size=16, embed_dim=4096, depth=8, num_heads=16, num_classes=10,
           attention="softmax")  # 1.6 B parameters: 6.5 GB of float32 weights


def _part(model_dir: Path, benchmark: str, options: dict[str, Any], body: dict[str, Any], *,
          stale: bool = False) -> dict[str, Any]:
    from scripts.seed_runs import part_key

    key = part_key(model_dir, benchmark, options)
    if stale:
        key = {**key, "model_files": "0" * 64}
    return {"model": str(model_dir), "key": key, **body}


def fourth_sweep_fixtures(root: Path, p: dict[str, Path]) -> None:
    """The inputs of the fourth sweep (after the third's: ``p["seeds"]``, ``p["verdict_ok"]``)."""
    from scripts.meta_evaluation import DEFAULT_IMAGES, DEFAULT_ROAD_IMAGES, N_IMAGES, ROAD_IMAGES
    from scripts.morf_ceiling import N_IMAGES as MORF_IMAGES, SEARCH
    from scripts.seed_runs import explained
    from scripts.verdict import METHODS

    seed_model = p["seeds"] / "cluttered-digits" / "softmax-seed1"
    # A trained model folder (with its card) to be overwritten, and a copy for --overwrite.
    p["trained"] = _model(root, "trained", "softmax")
    (p["trained"] / "card.json").write_text(json.dumps({"variant": "softmax"}))
    p["trained_reference"] = shutil.copytree(p["trained"], root / "trained_reference")
    p["imported"] = _model(root, "imported", "softmax")  # no card: an imported model
    # Parts of the per-model scripts: a current one, a stale one (another model made it), a damaged
    # one, one whose figures hold no control.
    morf = {"n_images": MORF_IMAGES["cluttered-digits"], "maps": [*METHODS, "random"], "search": SEARCH,
            "target": explained("cluttered-digits")["target"]}
    n = MORF_IMAGES["cluttered-digits"]
    body = {"n_images": n, "correct": [1] * n, "maps": {m: [0.5] * n for m in morf["maps"]},
            "greedy_deletion": [0.9] * n, "beam_deletion": [0.95] * n,
            "cost": {"beam_forwards_per_image_mean": 1.0, "greedy_forwards_per_image": 1, "beam_seconds_per_image": 0.1},
            "protocol": {}}
    for name, part in (("morf_parts", _part(seed_model, "cluttered-digits", morf, body)),
                       ("morf_stale", _part(seed_model, "cluttered-digits", morf, body, stale=True)),
                       ("morf_damaged", _part(seed_model, "cluttered-digits", morf, {"n_images": 2, "maps": {}}))):
        p[name] = root / name
        (p[name] / "cluttered-digits").mkdir(parents=True)
        (p[name] / "cluttered-digits" / "softmax-seed1.json").write_text(json.dumps(part))
    meta = {"n_images": N_IMAGES.get("cluttered-digits", DEFAULT_IMAGES),
            "road_images": ROAD_IMAGES.get("cluttered-digits", DEFAULT_ROAD_IMAGES),
            "explained": explained("cluttered-digits")}
    figure = {"role": "metric", "monotone": True, "stable": True, "reactive": True, "trustworthy": True,
              "degradation_spearman": -1.0, "stability": 1.0}
    from scripts.meta_evaluation import ORACLES

    meta["oracles"] = list(ORACLES)
    figures = {"figures": {"x": figure}, "oracles": {o: {"figures": {"x": figure}} for o in ORACLES}}
    for name, part in (("meta_no_controls", _part(seed_model, "cluttered-digits", meta, figures)),
                       ("meta_stale", _part(seed_model, "cluttered-digits", meta, figures, stale=True))):
        p[name] = root / name
        (p[name] / "cluttered-digits").mkdir(parents=True)
        (p[name] / "cluttered-digits" / "softmax-seed1.json").write_text(json.dumps(part))
    # Cued-digits seed models for reliance.py: a good one, a damaged one, a folder holding only a card.
    p["seeds_cued"] = root / "seeds_cued"
    cued = p["seeds_cued"] / "cued-digits" / "p10"
    shutil.copytree(p["softmax"], cued / "softmax-seed1")
    (cued / "softmax-seed1" / "card.json").write_text("{}")
    p["seeds_cued_damaged"] = root / "seeds_cued_damaged"
    damaged = p["seeds_cued_damaged"] / "cued-digits" / "p10" / "softmax-seed1"
    shutil.copytree(p["softmax"], damaged)
    (damaged / "card.json").write_text("{}")
    (damaged / "model.safetensors").write_bytes(b"\0\1" * 64)
    p["seeds_cued_card_only"] = root / "seeds_cued_card_only"
    only = p["seeds_cued_card_only"] / "cued-digits" / "p10" / "softmax-seed1"
    only.mkdir(parents=True)
    (only / "card.json").write_text("{}")
    # A cluttered-digits report saved under the cued-digits name (and the cued seed models it names).
    p["verdict_mislabel"] = root / "verdict_mislabel"
    p["verdict_mislabel"].mkdir()
    shutil.copy(p["verdict_ok"] / "verdict-cluttered-digits.json", p["verdict_mislabel"] / "verdict-cued-digits.json")
    # Weights larger than the memory a 3 GiB address space leaves: ours and a timm state dict.
    p["sparse_ours"] = root / "sparse_ours"
    p["sparse_ours"].mkdir()
    from infsa_viz.model import ViTConfig

    (p["sparse_ours"] / "config.json").write_text(json.dumps(ViTConfig(**BIG).to_dict()))
    _sparse_weights(p["sparse_ours"] / "model.safetensors", _meta_state(**BIG))
    from infsa_viz.formats.timm import to_timm_state_dict
    from infsa_viz.model import VisionTransformer

    with torch.device("meta"):
        timm_shapes = {k: tuple(v.shape) for k, v in to_timm_state_dict(VisionTransformer(ViTConfig(**BIG))).items()}
    p["sparse_timm"] = _sparse_weights(root / "sparse_timm.safetensors", timm_shapes)
    p["hostile_plugin"] = root / "hostile_plugin.py"
    p["hostile_plugin"].write_text(PLUGIN)
    p["plugin_interrupt"] = root / "plugin_interrupt.py"
    p["plugin_interrupt"].write_text("raise KeyboardInterrupt\n")


# ----------------------------------------------------------------------------------------------
# Setups and checks
# ----------------------------------------------------------------------------------------------

@contextlib.contextmanager
def _hostile_plugin(paths: Paths):
    """The hostile plugin's methods registered for one case, removed after it."""
    from infsa_viz.maps import METHODS
    from infsa_viz.plugins import _module_name, load_plugins

    before = dict(METHODS)
    import sys

    problems = load_plugins([str(paths["hostile_plugin"])])
    assert not problems, problems
    try:
        yield
    finally:
        for name in set(METHODS) - set(before):
            del METHODS[name]
        sys.modules.pop(_module_name(str(paths["hostile_plugin"])), None)


def _same_files(folder: Path, reference: Path) -> str | None:
    for file in reference.iterdir():
        if not (folder / file.name).is_file() or (folder / file.name).read_bytes() != file.read_bytes():
            return f"{folder / file.name} changed"
    return None


def _untouched(name: str, reference: str) -> Any:
    """After a refusal: the input folder ``name`` still equals ``reference``'s files (nothing written over it)."""
    return lambda paths: _same_files(paths[name], paths[reference])


def _copied_chunk(paths: Paths) -> str | None:
    """A chunk filed under model b's key but made for model a is not resumed: it is recomputed."""
    from types import SimpleNamespace

    import numpy as np

    from infsa_viz.data import test_split
    from infsa_viz.evaluation.journal import Journal
    from infsa_viz.evaluation.records import ImageRecord

    data = test_split(2)
    folder = paths["root"] / "journal_copied"
    record = ImageRecord(model="a", variant="softmax", method="attention", index=0, name="test:0", label=1,
                         logits=np.zeros(10, np.float32), target=1, explained=1)
    with Journal(folder, {"run": 1}, models={"a": "digest-a", "b": "digest-b"}, data=data) as journal:
        journal.save("a", "attention", [0, 1], [record], SimpleNamespace(options={}, metadata={}), {})
        if journal.load("a", "attention", [0, 1]) is None:
            return "model a's own chunk was not resumed"
        shutil.copy(journal._path("a", "attention", [0, 1]), journal._path("b", "attention", [0, 1]))
        found = journal.load("b", "attention", [0, 1])
    return None if found is None else "the copied chunk was resumed as model b's"


def _overwrite_ok(paths: Paths) -> str | None:
    """``train --overwrite`` replaced the model: new weights, a card, nothing left beside it."""
    folder = paths["overwrite_me"]
    if (folder / "model.safetensors").read_bytes() == (paths["trained"] / "model.safetensors").read_bytes():
        return "the weights were not replaced"
    if not (folder / "card.json").is_file():
        return "no card"
    left = [e.name for e in folder.parent.iterdir() if e.name.startswith(f".{folder.name}.")]
    return f"left beside it: {left}" if left else None


@contextlib.contextmanager
def _overwrite_target(paths: Paths):
    target = paths["root"] / "overwrite_me"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(paths["trained"], target)
    paths["overwrite_me"] = target
    yield


def _plugin_interrupt_app(paths: Paths):
    return app_with_plugins(paths["plugin_interrupt"])


# ----------------------------------------------------------------------------------------------
# The cases
# ----------------------------------------------------------------------------------------------

def _cli_cases() -> list[Case]:
    def C(id: str, argv: list[str], match: str, **kwargs: Any) -> Case:  # noqa: N802
        return Case(id, "cli", match, argv=tuple(argv), **kwargs)

    seed_file = "{seeds}/cluttered-digits/softmax-seed1/"
    cued = ["--seeds-dir", "{seeds_cued}", "--seeds", "1"]
    explain = ["explain", "--model", "{model}", "--out", "{out}/x.png"]
    evaluate = ["evaluate", "--models", "{model}", "--n-images", "2", "--out", "{out}/r.json"]
    over = r"would overwrite (a file of )?the input"
    return [
        # 1-2. Outputs over inputs.
        C("morf-ceiling-out-is-a-model-config", [*SEEDS, "--out", seed_file + "config.json"], over,
          program="script:morf_ceiling"),
        C("morf-ceiling-out-is-its-part", [*SEEDS, "--parts", "{morf_parts}", "--out",
                                           "{morf_parts}/cluttered-digits/softmax-seed1.json"], over,
          program="script:morf_ceiling"),
        C("morf-ceiling-parts-are-the-seeds", [*SEEDS, "--parts", "{seeds}", "--out", "{out}/m.json"],
          r"--parts=.* would overwrite a folder holding the input", program="script:morf_ceiling"),
        C("meta-evaluation-out-is-the-weights", [*SEEDS, "--out", seed_file + "model.safetensors"], over,
          program="script:meta_evaluation"),
        C("reliance-out-is-a-model-config", [*cued, "--out", "{seeds_cued}/cued-digits/p10/softmax-seed1/config.json"],
          over, program="script:reliance"),
        C("reliance-out-is-a-card", [*cued, "--out", "{seeds_cued}/cued-digits/p10/softmax-seed1/card.json"], over,
          program="script:reliance"),
        C("eigencheck-out-is-a-model-config", ["eigencheck", "--model", "{model}", "--out", "{model}/config.json"], over),
        C("accuracy-out-is-a-model-config", ["accuracy", "--models", "{model}", "--out", "{model}/config.json"], over),
        C("compare-out-in-a-model-folder", ["compare", "--models", "{model}", "--out", "{model}/grid.png", "test:0"],
          r"would overwrite a file of the input"),
        C("train-out-is-a-trained-model", ["train", "--variant", "softmax", "--epochs", "1", "--out", "{trained}"],
          r"--out=.*trained' already holds card.json, config.json, model.safetensors; .* --overwrite",
          check=_untouched("trained", "trained_reference")),
        C("train-out-is-an-imported-model", ["train", "--variant", "softmax", "--epochs", "1", "--out", "{imported}"],
          r"--out=.*imported' already holds config.json, model.safetensors", check=_untouched("imported", "softmax")),
        C("train-out-is-the-init-model", ["train", "--init", "{imported}", "--epochs", "1", "--out", "{imported}",
                                          "--overwrite"], r"--out=.*imported' would overwrite the input"),
        C("import-timm-out-is-a-model", ["import-timm", "--num-heads", "2", "--out", "{imported}", "{timm_gray}"],
          r"--out=.*imported' already holds"),
        C("train-overwrite-replaces-atomically", ["train", "--variant", "softmax", "--epochs", "1", "--images-per-epoch",
                                                  "32", "--test-size", "16", "--batch-size", "16", "--overwrite",
                                                  "--out", "{root}/overwrite_me"], "", expect="ok",
          setup=_overwrite_target, check=_overwrite_ok, ci=False),
        C("benchmark-out-is-a-shipped-model", ["profile", "--out", str(ROOT / "models" / "softmax-vit4" / "config.json")],
          over, program="benchmarks"),
        # 3. Stale and foreign stored results.
        C("morf-ceiling-stale-part", [*SEEDS, "--parts", "{morf_stale}", "--summary-only", "--out", "{out}/m.json"],
          r"softmax-seed1.json: made by another model \(its weights, config or card changed\) .*--summary-only",
          program="script:morf_ceiling"),
        C("meta-evaluation-stale-part", [*SEEDS, "--parts", "{meta_stale}", "--summary-only", "--out", "{out}/m.json"],
          r"softmax-seed1.json: made by another model", program="script:meta_evaluation"),
        C("morf-ceiling-damaged-part", [*SEEDS, "--parts", "{morf_damaged}", "--summary-only", "--out", "{out}/m.json"],
          r"morf_damaged/cluttered-digits/softmax-seed1.json: not a MoRF-ceiling result",
          program="script:morf_ceiling"),
        # 4. Plugins.
        C("evaluate-plugin-system-exit", ["evaluate", "--models", "{model}", "--methods", "plugin_exits",
                                          "--n-images", "2", "--out", "{out}/r.json"],
          r"plugin '.*hostile_plugin.*' \(map method 'plugin_exits'\) failed: SystemExit: 0", setup=_hostile_plugin),
        C("evaluate-plugin-keyboard-interrupt", ["evaluate", "--models", "{model}", "--methods", "plugin_interrupts",
                                                 "--n-images", "2"],
          r"\(map method 'plugin_interrupts'\) failed: KeyboardInterrupt", setup=_hostile_plugin),
        C("explain-plugin-map-off-the-grid", [*explain, "--method", "plugin_small_map", "test:0"],
          r"map method 'plugin_small_map' returned maps of shape \(1, 3, 5\); expected \(1, 6, 6\)",
          setup=_hostile_plugin),
        C("explain-plugin-map-flat", [*explain, "--method", "plugin_flat_map", "test:0"],
          r"map method 'plugin_flat_map' returned maps of shape \(1, 36\); expected \(1, 6, 6\)",
          setup=_hostile_plugin),
        C("evaluate-plugin-map-off-the-grid", ["evaluate", "--models", "{model}", "--methods", "plugin_small_map",
                                               "--n-images", "2"], r"returned maps of shape \(2, 3, 5\)",
          setup=_hostile_plugin),
        # 5. Sizes before work.
        C("info-weights-over-memory-ours", ["info", "{sparse_ours}"],
          r"sparse_ours/model.safetensors: loading needs about [\d.,]+ GB .* over the [\d.,]+ [MG]B of memory available",
          memory=True),
        C("explain-weights-over-memory-timm", ["explain", "--model", "{sparse_timm}?num_heads=16", "--method",
                                               "attention", "--out", "{out}/x.png", "test:0"],
          r"sparse_timm.safetensors: loading needs about [\d.,]+ GB", memory=True),
        # 6. Unbounded numbers.
        C("explain-threads-huge", [*explain, "--method", "attention", "--threads", HUGE, "test:0"],
          r"--threads=1,000,000,000,000 is out of range; expected an integer in \[1, 1,024\]"),
        C("evaluate-threads-huge", [*evaluate, "--threads", HUGE], r"--threads=1,000,000,000,000 is out of range"),
        C("accuracy-threads-huge", ["accuracy", "--models", "{model}", "--threads", HUGE], r"--threads=1,000,000"),
        C("reliance-threads-huge", [*cued, "--threads", HUGE, "--out", "{out}/r.json"], r"--threads=1,000,000",
          program="script:reliance"),
        C("evaluate-seed-huge", [*evaluate, "--seed", str(10**30)], r"--seed=1,000,000,000,000,000,000,000,000,000,000 "
          r"is out of range; expected an integer in \[0, 4,294,967,295\]"),
        C("train-seed-huge", ["train", "--variant", "softmax", "--out", "{out}/t", "--seed", str(10**30)],
          r"--seed=1,000,000,000,000,000,000,000,000,000,000 is out of range"),
        C("train-lr-huge", ["train", "--variant", "softmax", "--out", "{out}/t", "--lr", "1e308"],
          r"--lr=1e\+308 is out of range; expected a number in \(0, 10\]"),
        C("train-lr-nan", ["train", "--variant", "softmax", "--out", "{out}/t", "--lr", "nan"], r"--lr='nan' is not finite"),
        C("train-image-size-on-a-benchmark", ["train", "--variant", "softmax", "--out", "{out}/t", "--image-size", "64"],
          r"--image-size=64 applies to folder data only; cluttered-digits fixes its own images"),
        C("reliance-damaged-model", ["--seeds-dir", "{seeds_cued_damaged}", "--out", "{out}/r.json"],
          r"softmax-seed1/model.safetensors: not a readable safetensors file", program="script:reliance"),
        C("reliance-folder-with-only-a-card", ["--seeds-dir", "{seeds_cued_card_only}", "--out", "{out}/r.json"],
          r"softmax-seed1", program="script:reliance"),
        # 7. Reports and their labels; summaries over nothing.
        C("verdict-report-under-another-benchmark", ["--benchmarks", "cued-digits", "--seeds-dir", "{seeds_cued}",
                                                     "--summary-only", "--metrics", "{verdict_mislabel}", "--docs",
                                                     "{docs_without_section}"],
          r"verdict-cued-digits.json: a report of 'cluttered-digits' data, read as 'cued-digits''s",
          program="script:verdict"),
        C("meta-evaluation-no-controls", [*SEEDS, "--parts", "{meta_no_controls}", "--summary-only", "--out",
                                          "{out}/m.json"],
          r"cluttered-digits: the parts of 1 model\(s\) hold no negative control figure", program="script:meta_evaluation"),
    ]


def _api_cases() -> list[Case]:
    from infsa_viz.weights import check_fits_memory

    A = lambda id, call, match: Case(id, "api", match, call=call)  # noqa: E731
    return [
        Case("journal-copied-chunk-is-recomputed", "api", "", call=_copied_chunk, expect="ok"),
        A("weights-over-a-budget", lambda p: check_fits_memory(p["sparse_ours"] / "model.safetensors", budget=1e9),
          r"loading needs about [\d.,]+ GB .* over the 1(\.0)? GB of memory available"),
        A("read-report-under-another-name", lambda p: __import__("infsa_viz.evaluation.writer", fromlist=["x"]).read_report(
            p["verdict_mislabel"] / "verdict-cued-digits.json", dataset="cued-digits"),
          r"a report of 'cluttered-digits' data, read as 'cued-digits''s"),
    ]


def _app_cases() -> list[Case]:
    return [Case("plugin-keyboard-interrupt", "app", r"plugin '.*plugin_interrupt.py' did not load: KeyboardInterrupt",
                 call=_plugin_interrupt_app)]


def fourth_sweep_cases() -> list[Case]:
    """Every case of the fourth sweep."""
    return _cli_cases() + _api_cases() + _app_cases()
