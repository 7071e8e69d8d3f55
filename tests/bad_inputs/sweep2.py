"""The second hostile-input sweep (issue 30): cases for every finding, as library, CLI and app cases.

Declared-size bombs for every reader (ours, transformers, timm, torchvision, official InfSA) run
through the CLI under the 3 GiB address-space limit (``memory=True``): each must be refused from
its header and names before a module is built.
"""

from __future__ import annotations

from typing import Any, Callable

from tests.bad_inputs.cases import Case, Paths, _app_model, _app_upload, _load

#: Fixture name → (model spec suffix, message) of the reader bombs and crashes.
READER_CASES: dict[str, tuple[str, str]] = {
    "ours_zero_blocks": ("", r"ours_zero_blocks/model.safetensors: weights do not match config.json: missing"),
    "ours_far_block": ("", r"ours_far_block/model.safetensors: config.json asks for depth=2, the weights hold 3 blocks"),
    "ours_wide": ("", r"tensor 'cls_token' has shape \(1, 1, 16\), config.json implies \(1, 1, 65536\)"),
    "ours_bool": ("", r"ours_bool/model.safetensors: tensor 'head.bias' has dtype BOOL; expected floating-point"),
    "ours_complex": ("", r"tensor 'head.bias' has dtype C64; expected floating-point"),
    "ours_mlp_huge": ("", r"ours_mlp_huge/config.json: mlp_ratio=1e\+300 gives an MLP width of .* expected 1 to"),
    "ours_nested": ("", r"ours_nested/config.json: JSON nested too deeply"),
    "timm_wide": ("?num_heads=2", r"timm_wide.safetensors: tensor 'cls_token' has shape \(1, 1, 16\), .*\(1, 1, 65536\)"),
    "timm_far_block": ("?num_heads=2", r"timm_far_block.safetensors: block index 100000 with 3 blocks"),
    "timm_no_blocks": ("?num_heads=2", r"timm_no_blocks.safetensors: no transformer block"),
    "timm_missing_mlp": ("?num_heads=2", r"timm_missing_mlp.safetensors: .*missing \['blocks.1.mlp.fc2.weight'\]"),
    "timm_bool": ("?num_heads=2", r"timm_bool.safetensors: tensor 'head.bias' has dtype BOOL"),
    "timm_int": ("?num_heads=2", r"timm_int.safetensors: tensor 'head.bias' has dtype I64"),
    "timm_lying": ("?num_heads=2", r"timm_lying.safetensors: .*data_offsets \[0, 40000000000\] do not lie within"),
    "tv_far_layer": ("?num_heads=2", r"tv_far_layer.safetensors: block index 200000 with 3 blocks"),
    "tv_wide": ("?num_heads=2", r"tv_wide.safetensors: tensor 'cls_token' has shape \(1, 1, 16\), .*\(1, 1, 65536\)"),
    "tv_bool": ("?num_heads=2", r"tv_bool.safetensors: tensor 'heads.head.bias' has dtype BOOL"),
    "official_wide": ("?num_heads=2&variant=pure_infsa", r"official_wide.safetensors: tensor 'cls_token' has shape"),
    "official_far_layer": ("?num_heads=2&variant=pure_infsa", r"official_far_layer.safetensors: block index 200000"),
    "hf_wide": ("", r"hf_wide/model.safetensors: tensor 'cls_token' has shape \(1, 1, 16\), .*config.json implies"),
    "hf_deep": ("", r"hf_deep/model.safetensors: .*config.json asks for depth=100000, the weights hold 2 blocks"),
    "hf_hidden_zero": ("", r"hf_hidden_zero/config.json: hidden_size=0 is invalid; expected an integer"),
    "hf_hidden_text": ("", r"hf_hidden_text/config.json: hidden_size='32' is invalid; expected an integer"),
    "hf_mlp_huge": ("", r"hf_mlp_huge/config.json: intermediate_size=1e\+300 is invalid"),
    "hf_eps_text": ("", r"hf_eps_text/config.json: layer_norm_eps='abc' is invalid; expected a number"),
    "hf_rescale_zero": ("", r"hf_rescale_zero/preprocessor_config.json: rescale_factor=0 is invalid"),
    "hf_mean_null": ("", r"hf_mean_null/preprocessor_config.json: image_mean=None is invalid"),
    "hf_std_text": ("", r"hf_std_text/preprocessor_config.json: image_std=\['abc'\] is invalid"),
    "hf_nested": ("", r"hf_nested/config.json: JSON nested too deeply"),
    "hf_processor_loop": ("", r"hf_processor_loop/preprocessor_config.json: cannot be read .*link loop"),
    "hf_self_index": ("", r"model.safetensors.index.json: weight_map names shard 'model.safetensors.index.json'"),
    "hf_bool": ("", r"hf_bool/model.safetensors: tensor 'classifier.bias' has dtype BOOL"),
}
#: The declared-size bombs of each reader, run under the address-space limit.
BOMBS = ("ours_zero_blocks", "ours_far_block", "ours_wide", "timm_wide", "timm_far_block", "tv_wide", "tv_far_layer",
         "official_wide", "official_far_layer", "hf_wide", "hf_deep")


def _spec(name: str) -> str:
    return "{" + name + "}" + READER_CASES[name][0]


def _load_spec(name: str) -> Callable[[Paths], Any]:
    from infsa_viz import load_model

    return lambda p: load_model(str(p[name]) + READER_CASES[name][0])


def _decode(name: str) -> Callable[[Paths], Any]:
    from infsa_viz.images import read_image

    return lambda p: read_image(p[name])


def _folder(name: str, **kwargs: Any) -> Callable[[Paths], Any]:
    from infsa_viz.data import FolderDataset

    return lambda p: FolderDataset(p[name], **kwargs).labelled()


def _journal(name: str) -> Callable[[Paths], Any]:
    from infsa_viz.evaluation.journal import Journal

    return lambda p: Journal(p[name], {"run": 1})


def _api_cases() -> list[Case]:
    from infsa_viz.formats import detect
    from infsa_viz.train import TrainConfig

    A = lambda id, call, match: Case(id, "api", match, call=call)  # noqa: E731
    cases = [A(f"load-{name.replace('_', '-')}", _load_spec(name), match) for name, (_, match) in READER_CASES.items()]
    return cases + [
        A("image-rgba16-decoded-bytes", _decode("rgba16_png"),
          r"rgba16.png: 5000x4000 pixels x 4 channels x 2 byte\(s\) decode to 160,000,000 bytes, over the limit"),
        A("folder-rgba16-decoded-bytes", _folder("folder_rgba16"), r"a.png: 5000x4000 pixels x 4 channels x 2 byte"),
        A("folder-index-beyond-classes", _folder("folder_index_beyond", num_classes=10),
          r"folder_index_beyond: class folder '12' names class 12; the model has 10 classes \(0..9\)"),
        A("folder-names-not-the-models", _folder("folder_names", classes=["zero", "one", "two"]),
          r"class folders \['cat', 'dog'\] are neither the model's class names"),
        A("journal-users-folder", _journal("user_folder"),
          r"user_folder' holds files this toolkit did not write \(notes.txt, results.csv, sub/\)"),
        A("detect-no-format", lambda p: detect(p["gif"]), r"anim.gif' is neither a model directory .*formats tried"),
        A("train-images-per-epoch-huge", lambda p: TrainConfig(images_per_epoch=10**12),
          r"images_per_epoch=1,000,000,000,000 needs at least .* GB .*; expected at most"),
        A("load-gif-as-model", _load("gif"), r"anim.gif' is neither a model directory"),
    ]


def _cli_cases() -> list[Case]:
    def C(id: str, argv: list[str], match: str, **kwargs: Any) -> Case:  # noqa: N802
        return Case(id, "cli", match, argv=tuple(argv), **kwargs)

    out = "{out}/x.png"
    evaluate = ["evaluate", "--models", "{model}", "--methods", "attention", "--n-images", "2"]
    cases = [C(f"info-bomb-{name.replace('_', '-')}", ["info", _spec(name)], READER_CASES[name][1], memory=True)
             for name in BOMBS]
    return cases + [
        C("explain-bool-weights", ["explain", "--model", "{ours_bool}", "--method", "attention", "--out", out, "test:0"],
          r"tensor 'head.bias' has dtype BOOL"),
        C("explain-complex-weights", ["explain", "--model", "{ours_complex}", "--method", "attention", "--out", out,
                                      "test:0"], r"tensor 'head.bias' has dtype C64"),
        C("explain-rgba16", ["explain", "--model", "{model}", "--method", "attention", "--out", out, "{rgba16_png}"],
          r"rgba16.png: 5000x4000 pixels x 4 channels x 2 byte\(s\) decode to", memory=True),
        C("explain-out-is-folder", ["explain", "--model", "{model}", "--method", "attention", "--out", "{dir_out}",
                                    "test:0"], r"argument --out: .*dir_out.json' is an existing folder"),
        C("evaluate-out-is-folder", [*evaluate, "--out", "{dir_out}"], r"argument --out: .* is an existing folder"),
        C("evaluate-journal-users-folder", [*evaluate, "--journal", "{user_folder}", "--out", "{out}/r.json"],
          r"user_folder' holds files this toolkit did not write \(notes.txt, results.csv, sub/\)"),
        C("evaluate-folder-index-beyond", [*evaluate, "--data", "folder:{folder_index_beyond}"],
          r"class folder '12' names class 12; the model has 10 classes"),
        C("evaluate-classes-not-the-folders", [*evaluate, "--data", "folder:{folder_names}", "--classes",
                                               "{classes_file}"], r"class folders \['cat', 'dog'\] are neither"),
        C("evaluate-classes-on-a-benchmark", [*evaluate, "--classes", "{classes_file}"],
          r"--classes applies to folder data only"),
        C("info-nested-config", ["info", "{ours_nested}"], r"config.json: JSON nested too deeply"),
        C("info-self-index", ["info", "{hf_self_index}"], r"weight_map names shard 'model.safetensors.index.json'"),
        C("import-timm-gray-without-mean", ["import-timm", "{timm_gray}", "--num-heads", "2", "--out", "{out}/t"],
          r"timm_gray.safetensors: patch_embed.proj.weight takes 1 input channel\(s\); .*pass --mean and --std"),
        C("import-timm-bool", ["import-timm", "{timm_bool}", "--num-heads", "2", "--out", "{out}/t"],
          r"tensor 'head.bias' has dtype BOOL"),
        C("train-images-per-epoch-huge", ["train", "--variant", "softmax", "--out", "{out}/t", "--images-per-epoch",
                                          str(10**12)], r"images_per_epoch=1,000,000,000,000 needs at least"),
        C("train-seeds-threads-negative", ["--threads", "-1", "--dry-run"], r"--threads=-1 must be a positive integer",
          program="train_seeds"),
        C("train-seeds-images-per-epoch-huge", ["--images-per-epoch", str(10**12), "--dry-run"],
          r"--images-per-epoch=1,000,000,000,000 needs at least .*; expected at most", program="train_seeds"),
        C("bench-maps-sides-huge", ["maps", "--sides", "1000000", "--out", "{out}/m.json"],
          r"--sides: 1,000,000 needs at least .* GB .*; expected at most", program="benchmarks"),
        C("bench-throughput-resolutions-huge", ["throughput", "--resolutions", "100000", "--out", "{out}/t.json"],
          r"--resolutions: 100,000 needs at least .*; expected at most", program="benchmarks"),
        C("bench-throughput-attention-tokens-huge", ["throughput", "--sections", "attention", "--attention-tokens",
                                                     str(10**12), "--out", "{out}/t.json"],
          r"--attention-tokens: 1,000,000,000,000 needs at least .*; expected at most", program="benchmarks"),
        *[C(f"evaluate-{option[2:]}-huge", [*evaluate, option, str(10**9), "--out", "{out}/r.json"],
            rf"{option}=1000000000 is invalid; expected an integer >= \d+ and <= \d+", memory=True)
          for option in ("--steps", "--insertion-steps", "--road-steps")],
    ]


def _app_cases() -> list[Case]:
    P = lambda id, call, match: Case(id, "app", match, call=call)  # noqa: E731
    return [
        P("upload-rgba16", _app_upload("rgba16_png"), r"rgba16.png: 5000x4000 pixels x 4 channels x 2 byte"),
        P("model-ours_nested-side-by-side", _app_model("ours_nested", None), r"config.json: JSON nested too deeply"),
        P("model-ours_bool-side-by-side", _app_model("ours_bool", None), r"has dtype BOOL"),
        P("model-ours_zero_blocks-side-by-side", _app_model("ours_zero_blocks", None), r"weights do not match"),
    ]


def second_sweep_cases() -> list[Case]:
    """Every case of the second sweep."""
    return _api_cases() + _cli_cases() + _app_cases()
