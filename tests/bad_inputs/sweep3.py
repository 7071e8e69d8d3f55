"""The third hostile-input sweep (issue 38): a case for every finding, as library, CLI and app cases.

Sizes estimated before work (a 2048 px model, a 1024 px evaluation, attention flow on 2,305 tokens,
absurd batch sizes, epochs, token counts and generator sizes) run through the CLI under the 3 GiB
address-space limit where they used to allocate; inputs that must be handled rather than refused (a
rotated-EXIF photo, an edited config under ``--journal``, file names that look like formulas, map
names that differ only in punctuation) are ``expect="ok"`` cases with a check of the result.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tests.bad_inputs.cases import APP, Case, Paths, app_with_plugins, _load
from tests.bad_inputs.fixtures import TINY, _hf, _model, _png

EVALUATE = ("evaluate", "--models", "{model}", "--methods", "attention", "--n-images", "2")


# ----------------------------------------------------------------------------------------------
# Fixtures
# ----------------------------------------------------------------------------------------------

def _sized(root: Path, name: str, **changes: Any) -> Path:
    """A valid model of another input size or patch (random weights; built, never trained)."""
    from infsa_viz.model import ViTConfig, VisionTransformer, save_model

    torch.manual_seed(0)
    return save_model(VisionTransformer(ViTConfig(**{**TINY, **changes})).eval(), root / name)


def third_sweep_fixtures(root: Path, p: dict[str, Path]) -> None:
    """The inputs of the third sweep (``p["out"]`` exists: some reports live under it)."""
    from tests.exif_files import encode, with_orientation

    p["big2048"] = _sized(root, "big2048", img_size=2048, attention="pure_infsa")
    p["k1024"] = _sized(root, "k1024", img_size=1024, attention="pure_infsa")
    p["patch1"] = _sized(root, "patch1", patch_size=1)
    # A config contradicting its card: trained as pure InfSA, config.json edited to Linear-InfSA.
    p["card_contradiction"] = _model(root, "card_contradiction", "pure_infsa")
    config = json.loads((p["card_contradiction"] / "config.json").read_text())
    (p["card_contradiction"] / "card.json").write_text(json.dumps({"variant": "pure_infsa",
                                                                    "recipe": {"model": config}}))
    (p["card_contradiction"] / "config.json").write_text(json.dumps({**config, "attention": "linear_infsa"}))
    # A phone photo stored sideways with its EXIF orientation, and the same photo turned upright.
    upright = ((np.arange(60)[:, None] * 3 + np.arange(40)[None, :] * 7) % 200).astype(np.uint8)
    upright[:6, :10] = 255
    p["photo_exif"] = root / "images" / "photo_exif6.png"
    p["photo_exif"].write_bytes(with_orientation(encode(np.rot90(upright, 1).copy(), ".png"), 6))
    p["photo_upright"] = root / "images" / "photo_upright.png"
    p["photo_upright"].write_bytes(encode(upright, ".png"))
    p["folder_exif"] = root / "folder_exif"
    (p["folder_exif"] / "3").mkdir(parents=True)
    shutil.copy(p["photo_exif"], p["folder_exif"] / "3" / "a.png")
    # transformers configs: model_type a list; num_labels contradicting the classifier's 10 rows.
    p["hf_model_type_list"] = _hf(root, "hf_model_type_list", model_type=["vit"])
    p["hf_num_labels"] = _hf(root, "hf_num_labels", num_labels=5)
    # Image names that a spreadsheet reads as formulas.
    p["folder_formula"] = root / "folder_formula"
    (p["folder_formula"] / "3").mkdir(parents=True)
    for name in ("=cmd", "+1", "-2", "@x"):
        (p["folder_formula"] / "3" / f"{name}.png").write_bytes(_png(np.full((48, 48), 90, np.uint8)))
    # A user's folder with their own run.json, named as a journal.
    p["stray_run_json"] = root / "stray_run_json"
    p["stray_run_json"].mkdir()
    (p["stray_run_json"] / "run.json").write_text('{"my": "experiment"}')
    # Seed models, damaged reports, cards and parts for the maintainer scripts.
    p["seeds"] = root / "seeds"
    shutil.copytree(p["softmax"], p["seeds"] / "cluttered-digits" / "softmax-seed1")
    for name, text in (("verdict_damaged", "{}"), ("verdict_empty", "")):
        p[name] = root / name
        p[name].mkdir()
        (p[name] / "verdict-cluttered-digits.json").write_text(text)
    p["meta_parts"] = root / "meta_parts"
    (p["meta_parts"] / "cluttered-digits").mkdir(parents=True)
    (p["meta_parts"] / "cluttered-digits" / "softmax-seed1.json").write_text('{"figures": 3}')
    for name, text in (("ts_card_empty_object", "{}"), ("ts_card_empty", "")):
        p[name] = root / name
        (p[name] / "softmax-seed1").mkdir(parents=True)
        (p[name] / "softmax-seed1" / "card.json").write_text(text)
    p["docs_without_section"] = root / "verdict.md"
    p["docs_without_section"].write_text("# Verdict\n\nno generated section here\n")
    # A valid verdict report (a real evaluation of the seed model) in a folder under out/, whose
    # verdict.json must not appear when the docs file is refused.
    from infsa_viz.cli import main

    p["verdict_ok"] = p["out"] / "verdict_ok"
    code = main(["evaluate", "--models", str(p["seeds"] / "cluttered-digits" / "softmax-seed1"), "--data",
                 "cluttered-digits", "--methods", "attention", "--references", "--n-images", "4", "--steps", "2",
                 "--subsample", "0", "--road-images", "0", "--sanity-images", "0",
                 "--out", str(p["verdict_ok"] / "verdict-cluttered-digits.json")])
    assert code == 0
    p["plugin_exit"] = root / "plugin_exit.py"
    p["plugin_exit"].write_text("raise SystemExit(3)\n")


# ----------------------------------------------------------------------------------------------
# Checks of the cases that must be handled, not refused
# ----------------------------------------------------------------------------------------------

def _exif_logits(paths: Paths) -> str | None:
    """After ``explain`` on the EXIF photo: the same on the physically rotated one gives the same logits."""
    from infsa_viz.cli import main

    folder = paths["root"] / "exif_out"
    if main(["explain", "--model", str(paths["model"]), "--method", "attention", "--out",
             str(folder / "photo_upright.png"), str(paths["photo_upright"])]) != 0:
        return "explain of the upright photo failed"
    logits = [json.loads((folder / f"{n}.json").read_text())["maps"][0]["logits"]
              for n in ("photo_exif", "photo_upright")]
    return None if logits[0] == logits[1] else f"logits differ: {logits[0][:3]} vs {logits[1][:3]}"


def _exif_folder(paths: Paths) -> str | None:
    from infsa_viz.data import FolderDataset
    from infsa_viz.images import read_image

    found = FolderDataset(paths["folder_exif"]).labelled().images[0]
    return None if np.array_equal(found, read_image(paths["photo_upright"])) else "the folder image is not upright"


def _journal_after_edit(paths: Paths) -> str | None:
    """An edited config under --journal gives the fresh run's figures."""
    from infsa_viz.cli import main

    work = paths["root"] / "journal_edit"
    model = shutil.copytree(paths["model"], work / "m")
    argv = ["evaluate", "--models", str(model), "--methods", "attention", "--n-images", "4", "--chunk", "2",
            "--steps", "2", "--subsample", "0", "--road-images", "0", "--sanity-images", "0", "--select", "all"]
    assert main([*argv, "--journal", str(work / "journal"), "--out", str(work / "a.json")]) == 0
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "attention": "linear_infsa"}))
    assert main([*argv, "--journal", str(work / "journal"), "--out", str(work / "b.json")]) == 0
    assert main([*argv, "--out", str(work / "fresh.json")]) == 0
    rows = [json.loads((work / f"{n}.json").read_text())["results"] for n in ("b", "fresh")]
    return None if rows[0] == rows[1] else "the journalled run's figures differ from a fresh run's"


def _formula_names(paths: Paths) -> str | None:
    """The per-image CSV of images named like formulas: no name cell starts like a formula."""
    out = paths["root"] / "formula_out" / "r.images.csv"
    names = [row["name"] for row in csv.DictReader(out.open())]
    bad = [n for n in names if n[:1] in "=+-@\t\r"]
    return None if len(names) == 4 and not bad else f"cells read as formulas: {bad}"


def _npz_names(paths: Paths) -> str | None:
    import importlib
    import io
    import sys

    sys.path.insert(0, str(APP.parent))
    try:
        exports = importlib.import_module("exports")
    finally:
        sys.path.remove(str(APP.parent))
    maps = {"softmax · attention": np.zeros((2, 2)), "softmax-attention": np.ones((2, 2)),
            "softmax/attention": np.full((2, 2), 2.0)}
    kept = np.load(io.BytesIO(exports.maps_npz(maps))).files
    return None if len(kept) == 3 else f"kept {len(kept)} of 3 maps: {kept}"


def _plugin_exit(paths: Paths):
    return app_with_plugins(paths["plugin_exit"])


def _hold_train_seeds_lock(paths: Paths):
    from infsa_viz.evaluation.journal import OutputLock

    return OutputLock(paths["root"] / "ts_locked" / "train_seeds")


# ----------------------------------------------------------------------------------------------
# The cases
# ----------------------------------------------------------------------------------------------

def _api_cases() -> list[Case]:
    from infsa_viz.data import ClutteredDigitsConfig, generate_scenes
    from infsa_viz.evaluation.journal import Journal
    from infsa_viz.formats import load_model

    A = lambda id, call, match: Case(id, "api", match, call=call)  # noqa: E731
    ok = lambda id, call, ci=True: Case(id, "api", "", call=call, expect="ok", ci=ci)  # noqa: E731
    return [
        A("cluttered-canvas-huge", lambda p: ClutteredDigitsConfig(canvas_size=200_000),
          r"canvas_size=200,000 is invalid; expected at most 8,192"),
        A("cluttered-distractors-huge", lambda p: ClutteredDigitsConfig(num_distractors=10**9),
          r"num_distractors=1,000,000,000 is invalid; expected at most 1,024"),
        A("generate-scenes-huge", lambda p: generate_scenes(10**12, split="test", seed=0),
          r"n=1,000,000,000,000 needs at least .* GB .*; expected at most [\d,]+"),
        A("load-config-contradicts-card", _load("card_contradiction"),
          r"card_contradiction/config.json: contradicts card.json, .*attention='linear_infsa' \(card variant "
          r"'pure_infsa'\)"),
        A("load-hf-model-type-list", lambda p: load_model(p["hf_model_type_list"]),
          r"hf_model_type_list/config.json: model_type=\['vit'\] is invalid; expected a string such as 'vit'"),
        A("load-hf-num-labels", lambda p: load_model(p["hf_num_labels"]),
          r"num_labels=5 contradicts the classifier, which has 10 rows"),
        A("journal-stray-run-json", lambda p: Journal(p["stray_run_json"], {"run": 1}),
          r"stray_run_json' holds files this toolkit did not write \(run.json\)"),
        ok("exif-folder-upright", _exif_folder),
        ok("app-npz-keeps-punctuation-twins", _npz_names),
        ok("journal-edited-config-is-recomputed", _journal_after_edit, ci=False),
    ]


def _cli_cases() -> list[Case]:
    def C(id: str, argv: list[str], match: str, **kwargs: Any) -> Case:  # noqa: N802
        return Case(id, "cli", match, argv=tuple(argv), **kwargs)

    out = "{out}/x.png"
    explain = lambda model, method: ["explain", "--model", "{" + model + "}", "--method", method, "--out", out]  # noqa: E731
    seeds = ["--benchmarks", "cluttered-digits", "--seeds-dir", "{seeds}"]
    verdict = [*seeds, "--summary-only", "--docs", "{docs_without_section}", "--metrics"]
    return [
        C("explain-2048-rollout", [*explain("big2048", "rollout"), "test:0"],
          r"method 'rollout' needs about [\d,.]+ GB for 1 image\(s\) of 65,537 tokens.*lower it with a smaller input",
          memory=True),
        C("explain-2048-attention-matrix-free", [*explain("big2048", "attention"), "test:0"], "", memory=True,
          expect="ok", ci=False),
        C("evaluate-1024-default-methods", ["evaluate", "--models", "{k1024}", "--n-images", "50"],
          r"model '.*k1024': .* needs about [\d,.]+ GB for \d+ image\(s\) of 16,385 tokens.*lower it with", memory=True),
        C("explain-attention-flow-2305-tokens", [*explain("patch1", "attention_flow"), "test:0"],
          r"method 'attention_flow' on 1 image\(s\) of 2,305 tokens.*max-flow work L·N³ per image .* over its bound",
          memory=True),
        C("eigencheck-1024-dense", ["eigencheck", "--model", "{k1024}", "--n-images", "4", "--out", "{out}/e.json"],
          r"eigencheck of '.*k1024' needs about [\d,.]+ GB for \d image\(s\) of 16,385 tokens", memory=True),
        C("train-batch-size-huge", ["train", "--variant", "softmax", "--out", "{out}/t", "--batch-size", str(10**12)],
          r"batch_size=1,000,000,000,000 needs at least .* GB \(one training step's activations", memory=True),
        C("train-epochs-huge", ["train", "--variant", "softmax", "--out", "{out}/t", "--epochs", str(10**12)],
          r"epochs=1,000,000,000,000 is invalid; expected an integer >= 1 and <= 100,000"),
        C("bench-profile-attention-tokens-huge", ["profile", "--attention", f"linear_infsa:{10**12}", "--out",
                                                  "{out}/p.json"],
          r"--attention: 1,000,000,000,000 needs at least .* GB .*; expected at most", program="benchmarks",
          memory=True),
        C("bench-profile-case-huge", ["profile", "--case", "softmax:8000000", "--out", "{out}/p.json"],
          r"--case: 8,000,000 needs at least .* GB", program="benchmarks"),
        C("train-seeds-epochs-huge", ["--epochs", str(10**12), "--out", "{out}/runs"],
          r"--epochs=1,000,000,000,000 is invalid; expected an integer >= 1 and <= 100,000", program="train_seeds"),
        C("train-seeds-variants-empty", ["--variants", ",", "--out", "{out}/runs"], r"--variants names no variant",
          program="train_seeds"),
        C("train-seeds-card-empty-object", ["--benchmark", "cluttered-digits", "--variants", "softmax", "--seeds", "1",
                                            "--epochs", "1", "--out", "{ts_card_empty_object}"],
          r"ts_card_empty_object/softmax-seed1/card.json: variant=None is invalid; a finished run's card holds str",
          program="train_seeds"),
        C("train-seeds-card-empty-file", ["--benchmark", "cluttered-digits", "--variants", "softmax", "--seeds", "1",
                                          "--epochs", "1", "--out", "{ts_card_empty}"],
          r"ts_card_empty/softmax-seed1/card.json: not valid JSON", program="train_seeds"),
        C("train-seeds-second-run", ["--benchmark", "cluttered-digits", "--variants", "softmax", "--seeds", "1",
                                     "--epochs", "1", "--out", "{root}/ts_locked"],
          r"another train_seeds.py run is writing .*ts_locked/train_seeds' \(lock .* is held\); wait for it",
          program="train_seeds", setup=_hold_train_seeds_lock),
        C("train-seeds-out-under-a-file", ["--epochs", "1", "--out", "{not_a_dir}/runs"],
          r"--out=.*file.txt/runs': .*file.txt' is a file; expected a folder", program="train_seeds"),
        C("meta-evaluation-absurd-seeds", [*seeds, "--seeds", "99999999", "--out", "{out}/meta.json"],
          r"--seeds=99999999: no seed model <variant>-seed<k> in", program="script:meta_evaluation"),
        C("meta-evaluation-damaged-part", [*seeds, "--seeds", "1", "--parts", "{meta_parts}", "--summary-only",
                                           "--out", "{out}/meta.json"],
          r"meta_parts/cluttered-digits/softmax-seed1.json: not a meta-evaluation result",
          program="script:meta_evaluation"),
        C("meta-evaluation-out-unwritable", [*seeds, "--seeds", "1", "--out", "{not_a_dir}/meta.json"],
          r"--out=.*file.txt/meta.json' cannot be written: .*file.txt' is a file", program="script:meta_evaluation"),
        C("verdict-summary-damaged-report", [*verdict, "{verdict_damaged}"],
          r"verdict_damaged/verdict-cluttered-digits.json: expected an evaluation report .*\['protocol', 'dataset', "
          r"'results'\] missing", program="script:verdict"),
        C("verdict-summary-empty-report", [*verdict, "{verdict_empty}"],
          r"verdict_empty/verdict-cluttered-digits.json: not valid JSON", program="script:verdict"),
        C("verdict-compare-damaged-report", ["--benchmarks", "cluttered-digits", "--metrics", "{verdict_ok}",
                                             "--compare", "{verdict_damaged}"],
          r"verdict_damaged/verdict-cluttered-digits.json: expected an evaluation report", program="script:verdict"),
        C("verdict-docs-without-section", [*verdict, "{verdict_ok}"],
          r"verdict.md has no single section 'verdict-tables'", program="script:verdict"),
        C("evaluate-metrics-empty", [*EVALUATE, "--metrics", ""], r"--metrics names no metric; expected some of"),
        C("evaluate-evidence-without-scenes", [*EVALUATE, "--metrics", "evidence", "--data", "folder:{folder_good}"],
          r"--metrics evidence: metric 'evidence' needs scene objects .* which the data lacks \(--data folder:"),
        C("evaluate-evidence-oracle-without-scenes", ["evaluate", "--models", "{model}", "--methods", "evidence_oracle",
                                                      "--n-images", "1", "--data", "folder:{folder_good}"],
          r"--methods evidence_oracle: method 'evidence_oracle' needs scene objects .*--data cluttered-digits"),
        C("explain-box-oracle-on-an-image", [*explain("model", "box_oracle"), "{png}"],
          r"method 'box_oracle' is a reference map .* score it with infsa-viz evaluate --methods box_oracle --data "
          r"cluttered-digits"),
        C("explain-evidence-oracle-on-an-image", [*explain("model", "evidence_oracle"), "{png}"],
          r"method 'evidence_oracle' is a reference map .*--data cluttered-digits"),
        C("evaluate-journal-stray-run-json", [*EVALUATE, "--journal", "{stray_run_json}", "--out", "{out}/r.json"],
          r"stray_run_json' holds files this toolkit did not write \(run.json\)"),
        C("explain-out-is-its-input", ["explain", "--model", "{model}", "--method", "attention", "--out", "{png}",
                                       "{png}"], r"--out=.*digit.png' would overwrite the input"),
        C("evaluate-out-is-a-model-file", ["evaluate", "--models", "{model}", "--n-images", "2", "--out",
                                           "{model}/config.json"],
          r"--out=.*model/config.json' would overwrite a file of the input"),
        C("info-hf-model-type-list", ["info", "{hf_model_type_list}"], r"model_type=\['vit'\] is invalid"),
        C("explain-config-contradicts-card", [*explain("card_contradiction", "attention"), "test:0"],
          r"contradicts card.json"),
        C("explain-exif-photo-is-upright", ["explain", "--model", "{model}", "--method", "attention", "--out",
                                            "{root}/exif_out/photo_exif.png", "{photo_exif}"], "", expect="ok",
          check=_exif_logits),
        C("evaluate-formula-names-escaped", ["evaluate", "--models", "{model}", "--methods", "attention", "--data",
                                             "folder:{folder_formula}", "--n-images", "4", "--steps", "2",
                                             "--subsample", "0", "--road-images", "0", "--sanity-images", "0",
                                             "--per-image", "--out", "{root}/formula_out/r.json"], "", expect="ok",
          check=_formula_names),
    ]


def _app_cases() -> list[Case]:
    return [Case("plugin-system-exit", "app", r"plugin '.*plugin_exit.py' did not load: SystemExit: 3",
                 call=_plugin_exit)]


def third_sweep_cases() -> list[Case]:
    """Every case of the third sweep."""
    return _api_cases() + _cli_cases() + _app_cases()
