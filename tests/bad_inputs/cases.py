"""The bad-input matrix: every hostile input we know of, per surface, with the one line it must give.

A case passes when the entry point refuses the input with the expected exception (library:
``ValueError``/``TypeError``; CLI: exit code 2) and one line naming the input and what was
expected, with no traceback and no new file in the output folder; or, for a case that ``expect``s
``"ok"`` (an input that must be handled correctly, not refused), when the entry point succeeds and
its ``check`` finds the result right. Cases marked ``memory`` run in a subprocess under a 3 GiB
address-space limit: the refusal must come before any big allocation.
``tests/bad_inputs/test_matrix.py`` runs them in CI; ``python -m benchmarks reliability`` runs
them again and records the counts in ``metrics/reliability.json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

MEMORY_LIMIT = 3 << 30  # bytes of address space for `memory` cases
TIME_LIMIT = 300  # seconds a `memory` case's child may run
ROOT = Path(__file__).resolve().parents[2]

Paths = dict[str, Path]


@dataclass(frozen=True)
class Case:
    """One hostile input.

    Attributes:
        id: short unique name.
        surface: ``"cli"``, ``"api"`` or ``"app"``.
        match: regex the one-line message must contain.
        argv: CLI arguments (``{name}`` is replaced by ``str(paths[name])``).
        call: library call taking the fixture paths.
        error: expected exception of a library call.
        memory: run in a subprocess under :data:`MEMORY_LIMIT`.
        setup: a context manager factory run around the case (e.g. holding a lock).
        program: the CLI program of a ``cli`` case: ``"infsa-viz"``, ``"benchmarks"`` (``python -m
            benchmarks``), ``"train_seeds"`` (``scripts/train_seeds.py``) or ``"script:NAME"`` (the
            ``main`` of ``scripts/NAME.py``); see :func:`program`.
        pending: why the case cannot pass yet (another engineer's change); tests mark it xfail,
            the reliability benchmark counts it apart.
        expect: ``"refused"`` (default) or ``"ok"``: the input is valid or must be handled (a rotated
            photo, a name that looks like a formula) and the entry point must succeed (CLI: exit 0;
            library: ``call`` returns ``None`` or the reason it is wrong).
        check: ``check(paths) -> reason | None`` after the entry point ran: for ``"ok"`` cases, whether the
            result is right; for refused CLI cases, e.g. that the input is untouched.
        ci: run by the test suite (``tests/bad_inputs/test_matrix.py``); ``False``: too slow for CI,
            run by ``python -m benchmarks reliability`` only (covered by a faster unit test).
    """

    id: str
    surface: str
    match: str
    argv: tuple[str, ...] = ()
    call: Callable[[Paths], Any] | None = None
    error: tuple[type[BaseException], ...] = (ValueError,)
    memory: bool = False
    setup: Callable[[Paths], Any] | None = field(default=None, compare=False)
    program: str = "infsa-viz"
    pending: str | None = None
    expect: str = "refused"
    check: Callable[[Paths], str | None] | None = field(default=None, compare=False)
    ci: bool = True


@dataclass(frozen=True)
class Outcome:
    """What a case gave: passed or not, its message, why it failed, and (``memory`` cases) the
    child's peak resident memory in MiB."""

    passed: bool
    message: str
    why: str = ""
    peak_mib: float | None = None


def _format(argv: tuple[str, ...], paths: Paths) -> list[str]:
    return [re.sub(r"\{(\w+)\}", lambda m: str(paths[m.group(1)]), a) for a in argv]


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


def _check_message(case: Case, message: str, traceback_seen: bool) -> Outcome:
    lines = [line for line in message.strip().splitlines() if line.strip()]
    if traceback_seen or any("Traceback" in line for line in lines):
        return Outcome(False, message, "traceback shown")
    if len(lines) != 1:
        return Outcome(False, message, f"{len(lines)} lines instead of one")
    if not re.search(case.match, lines[0]):
        return Outcome(False, message, f"message does not match {case.match!r}")
    return Outcome(True, lines[0])


def program(name: str) -> Callable[[list[str]], int]:
    """A CLI program as ``argv → exit code``: ``"infsa-viz"``, ``"benchmarks"``, ``"train_seeds"`` or
    ``"script:NAME"`` (``scripts/NAME.py``)."""
    import importlib

    from infsa_viz.cli import main

    if name == "infsa-viz":
        return main
    if name == "benchmarks":
        from benchmarks import BENCH_COMMANDS, PROG, READS

        return lambda argv: main(argv, commands=BENCH_COMMANDS, prog=PROG, reads=READS)
    if name.startswith("script:"):
        return importlib.import_module(f"scripts.{name[len('script:'):]}").main
    from scripts.train_seeds import main as train_seeds

    def run(argv: list[str]) -> int:
        try:
            return train_seeds(argv)
        except SystemExit as stop:  # argparse's own exit
            return int(stop.code or 0)

    return run


def _run_cli(case: Case, paths: Paths) -> Outcome:
    argv = _format(case.argv, paths)
    peak = None
    if case.memory:
        rc, err, peak = _run_limited(case, argv)
    else:
        buf = io.StringIO()
        with contextlib.redirect_stderr(buf), contextlib.redirect_stdout(io.StringIO()):
            rc = program(case.program)(argv)
        err = buf.getvalue()
    if case.expect == "ok":
        if rc != 0:
            return Outcome(False, err.strip()[-500:], f"exit code {rc}, expected 0", peak)
        reason = case.check(paths) if case.check else None
        return Outcome(reason is None, "handled correctly" if reason is None else reason, reason or "", peak)
    # warnings logged, and the estimate announced, before the error are not the error line
    err = "\n".join(line for line in err.splitlines()
                    if not (line.startswith(("infsa-viz: ", "python -m benchmarks: ")) or ": estimate: " in line)
                    or "error:" in line)
    if rc != 2:
        return Outcome(False, err, f"exit code {rc}, expected 2", peak)
    outcome = dataclasses.replace(_check_message(case, err, False), peak_mib=peak)
    reason = case.check(paths) if outcome.passed and case.check else None  # e.g. the input is untouched
    return dataclasses.replace(outcome, passed=False, why=reason) if reason else outcome


def limited_main(name: str, peak_file: str) -> None:
    """The child of a ``memory`` case: run ``program(name)`` on ``sys.argv[1:]``, record the peak, exit."""
    from benchmarks.worker import peak_rss_bytes

    try:
        code = program(name)(sys.argv[1:])
    finally:  # its own peak since exec (a child's ru_maxrss would count the parent's pages at fork)
        Path(peak_file).write_text(str(round(peak_rss_bytes() / 2**20, 1)))
    sys.exit(code)


def _run_limited(case: Case, argv: list[str]) -> tuple[int, str, float | None]:
    """Run a CLI case in a child under :data:`MEMORY_LIMIT` of address space (:data:`TIME_LIMIT` s at most):
    its exit code, stderr and peak resident memory in MiB."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        peak = Path(tmp) / "peak"
        code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({0}, {0})); "
                "from tests.bad_inputs.cases import limited_main; limited_main({1!r}, {2!r})"
                ).format(MEMORY_LIMIT, case.program, str(peak))
        proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT,
                              timeout=TIME_LIMIT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        return proc.returncode, proc.stderr, float(peak.read_text()) if peak.is_file() else None


def _run_api(case: Case, paths: Paths) -> Outcome:
    if case.memory:
        raise NotImplementedError("memory-limited library cases are run through the CLI")
    if case.expect == "ok":
        try:
            reason = case.call(paths)
        except Exception as err:  # noqa: BLE001 - any exception is the finding
            return Outcome(False, f"{type(err).__name__}: {err}", "raised on an input it must handle")
        return Outcome(reason is None, "handled correctly" if reason is None else str(reason), reason or "")
    try:
        case.call(paths)
    except case.error as err:
        return _check_message(case, str(err), False)
    except Exception as err:  # noqa: BLE001 - the wrong exception is the finding
        return Outcome(False, f"{type(err).__name__}: {err}", f"raised {type(err).__name__}, expected "
                       f"{'/'.join(e.__name__ for e in case.error)}")
    return Outcome(False, "", "accepted the input")


def _as_read(markdown: str) -> str:
    """Error markdown as the reader sees it: CommonMark shows a backslash-escaped punctuation
    character as itself (the app escapes every outside text, :func:`app.safe.md`)."""
    return re.sub(r"\\([!-/:-@[-`{-~])", r"\1", markdown)


def _run_app(case: Case, paths: Paths) -> Outcome:
    """Drive the Streamlit app (AppTest): no exception, and one ``st.error`` line matching."""
    try:
        at = case.call(paths)
    except Exception as err:  # noqa: BLE001 - an uncaught exception in the harness is the finding
        return Outcome(False, f"{type(err).__name__}: {err}", "the app run raised")
    if at.exception:
        return Outcome(False, at.exception[0].value, "uncaught exception on the page")
    shown = [_as_read(e.value) for e in at.error]
    errors = [text for text in shown if re.search(case.match, text)]
    if len(errors) != 1:
        return Outcome(False, " | ".join(shown), f"{len(errors)} matching error lines")
    if "\n" in errors[0].strip() or "Traceback" in errors[0]:
        return Outcome(False, errors[0], "the error is not one line")
    return Outcome(True, errors[0])


def run_case(case: Case, paths: Paths) -> Outcome:
    """Run one case; its :class:`Outcome` (also fails if a file appeared in the output folder)."""
    before = _files(paths["out"])
    context = case.setup(paths) if case.setup else contextlib.nullcontext()
    run = {"cli": _run_cli, "api": _run_api, "app": _run_app}[case.surface]
    with context:
        outcome = run(case, paths)
    created = _files(paths["out"]) - before
    if outcome.passed and created and case.expect == "refused":
        return Outcome(False, outcome.message, f"left files behind: {sorted(str(p.name) for p in created)[:3]}",
                       outcome.peak_mib)
    return outcome


def _hold_lock(paths: Paths):
    from infsa_viz.evaluation.journal import OutputLock

    return OutputLock(paths["out"] / "locked.json")


# ----------------------------------------------------------------------------------------------
# The library API
# ----------------------------------------------------------------------------------------------

def _model(paths: Paths, name: str = "model"):
    from infsa_viz import load_model

    return load_model(paths[name])


def _load(name: str) -> Callable[[Paths], Any]:
    return lambda p: _model(p, name)


def _decode(name: str) -> Callable[[Paths], Any]:
    from infsa_viz.images import read_image

    return lambda p: read_image(p[name])


def _attribute(method: str, **options) -> Callable[[Paths], Any]:
    from infsa_viz.maps import attribute_images

    return lambda p: attribute_images(_model(p), torch.zeros(1, 1, 48, 48), method, **options)


def _forward(x: Callable[[], torch.Tensor]) -> Callable[[Paths], Any]:
    return lambda p: _model(p)(x())


def _spectral(fn: str, *args, **kwargs) -> Callable[[Paths], Any]:
    import infsa_viz.spectral as spectral

    return lambda p: getattr(spectral, fn)(*[a() if callable(a) else a for a in args], **kwargs)


def _evaluate(models: bool = True, methods: tuple[str, ...] = ("attention",)) -> Callable[[Paths], Any]:
    from infsa_viz.data import test_split
    from infsa_viz.evaluation import evaluate

    return lambda p: evaluate([("m", _model(p))] if models else [], list(methods), test_split(2))


def _folder(name: str, **kwargs) -> Callable[[Paths], Any]:
    from infsa_viz.data import FolderDataset

    return lambda p: FolderDataset(p[name], **{k: p[v] for k, v in kwargs.items()}).labelled()


def _voc(name: str) -> Callable[[Paths], Any]:
    from infsa_viz.data.folder import parse_voc_boxes

    return lambda p: parse_voc_boxes(p[name] / "a.xml")


def _boxes(box) -> Callable[[Paths], Any]:
    from infsa_viz.metrics import box_auc

    return lambda p: box_auc(torch.rand(1, 6, 6), [np.array([box], float)], image_size=48)


def _preprocessing(**kwargs) -> Callable[[Paths], Any]:
    from infsa_viz import Preprocessing

    return lambda p: Preprocessing(**kwargs)


def _prepare(images) -> Callable[[Paths], Any]:
    from infsa_viz import prepare

    return lambda p: prepare(_model(p), images())


def _protocol(**kwargs) -> Callable[[Paths], Any]:
    from infsa_viz.evaluation import EvalSettings

    return lambda p: EvalSettings(**kwargs)


def _cluttered(**kwargs) -> Callable[[Paths], Any]:
    from infsa_viz.data import generate_cluttered

    return lambda p: generate_cluttered(**kwargs)


def _split(n: int) -> Callable[[Paths], Any]:
    from infsa_viz.data import test_split

    return lambda p: test_split(n)


NAN_IMAGE = lambda: torch.full((1, 1, 48, 48), float("nan"))  # noqa: E731
HUGE_IMAGE = lambda: torch.full((1, 1, 48, 48), 1e30)  # noqa: E731
NAN_QK = lambda: torch.full((2, 5, 4), float("nan"))  # noqa: E731


def _api_cases() -> list[Case]:
    A = lambda id, call, match, error=(ValueError,): Case(id, "api", match, call=call, error=error)  # noqa: E731
    return [
        A("load-missing-dir", _load("unicode_missing"), r"ünïcödé 模型.*does not exist"),
        A("load-malformed-config", _load("config_malformed"), r"config.json: not valid JSON"),
        A("load-config-not-object", _load("config_list"), r"config.json: expected a JSON object"),
        A("load-config-unknown-key", _load("config_unknown_key"), r"unknown keys \['colour'\]"),
        A("load-config-negative-depth", _load("config_negative_depth"), r"depth=-3 must be a positive integer"),
        A("load-config-heads", _load("config_heads"), r"num_heads=3 must divide embed_dim=16"),
        A("load-config-huge", _load("config_huge"), r"asks for depth=100000, the weights hold 2 blocks"),
        A("load-config-wider", _load("config_wider"), r"tensor 'cls_token' has shape \(1, 1, 16\), config.json implies"),
        A("load-no-weights", _load("no_weights"), r"model.safetensors: missing weights file"),
        A("load-garbage-weights", _load("weights_garbage"), r"not a readable safetensors file"),
        A("load-truncated-weights", _load("weights_truncated"), r"not a readable safetensors file"),
        A("load-nan-weights", _load("weights_nan"), r"tensor 'blocks.0.attn.qkv.weight' holds 1 NaN/Inf"),
        A("load-missing-tensor", _load("weights_missing_tensor"), r"missing \['head.bias'\]"),
        A("load-card-mismatch", _load("card_mismatch"), r"differs from the model card"),
        A("load-file-not-dir", _load("not_a_dir"), r"file.txt. is neither a model directory nor a .safetensors state dict"),
        A("image-empty", _decode("empty_png"), r"empty.png: the file is empty"),
        A("image-text", _decode("text_png"), r"text.png: not a readable image"),
        A("image-bomb", _decode("bomb_png"), r"bomb.png: 25000x25000 pixels is over the limit"),
        A("image-truncated-jpeg", _decode("truncated_jpg"), r"cut.jpg: not a readable image"),
        A("image-gif", _decode("gif"), r"anim.gif: not a readable image \(expected PNG, JPEG or BMP"),
        A("image-missing", _decode("unicode_missing"), r"ünïcödé 模型' does not exist"),
        A("model-int-input", _forward(lambda: torch.zeros(1, 1, 48, 48, dtype=torch.int64)),
          r"images of type torch.int64 must be a floating-point tensor", (TypeError,)),
        A("model-bool-input", _forward(lambda: torch.zeros(1, 1, 48, 48, dtype=torch.bool)),
          r"images of type torch.bool must be a floating-point tensor", (TypeError,)),
        A("model-nan-input", _forward(NAN_IMAGE), r"images \[0\] hold NaN or Inf pixels"),
        A("model-huge-input", _forward(HUGE_IMAGE), r"model: logits of images \[0\] are NaN/Inf"),
        A("model-wrong-channels", _forward(lambda: torch.zeros(1, 3, 48, 48)), r"must be \(B, 1, H, W\)"),
        A("model-odd-size", _forward(lambda: torch.zeros(1, 1, 47, 48)), r"multiples of patch_size=8"),
        A("map-unknown-method", lambda p: _attribute("saliencyy")(p), r"saliencyy"),
        A("map-unknown-option", _attribute("attention", colour=1), r"colour"),
        A("map-bad-layer", _attribute("attention", layer=9), r"layer"),
        A("map-bad-head", _attribute("attention", head=7), r"head"),
        A("map-target-not-applicable", _attribute("visits", target=1), r"does not explain a class"),
        A("map-negative-gamma", _attribute("visits", gamma=-0.5), r"gamma"),
        A("perron-zero", _spectral("perron_vector", lambda: torch.zeros(2, 4, 4), method="power"),
          r"all zero at batch index.*no Perron vector exists"),
        A("perron-empty", _spectral("perron_vector", lambda: torch.zeros(0, 0)), r"no tokens"),
        A("perron-nan", _spectral("perron_vector", lambda: torch.full((3, 3), float("nan"))), r"NaN or Inf"),
        A("visits-margin", _spectral("expected_visits", lambda: torch.full((4, 4), 0.25), 1 - 1e-5),
          r"needs gamma·ρ\(A\) <= 1 - 0.00035"),
        A("visits-gamma-one", _spectral("expected_visits", lambda: torch.full((4, 4), 0.25, dtype=torch.float64), 1.0),
          r"gamma"),
        A("affinity-shapes", lambda p: __import__("infsa_viz").infsa_affinity(torch.randn(2, 5, 8), torch.randn(2, 5, 4)),
          r"q has shape \(2, 5, 8\) and k \(2, 5, 4\)"),
        A("evaluate-no-models", _evaluate(models=False), r"models is empty"),
        A("evaluate-no-methods", _evaluate(methods=()), r"methods is empty"),
        A("evaluate-unknown-method", _evaluate(methods=("nope",)), r"nope"),
        A("protocol-chunk-zero", _protocol(chunk=0), r"chunk=0"),
        A("protocol-steps-zero", _protocol(steps=0), r"steps=0"),
        A("protocol-bad-target", _protocol(target=-2), r"target=-2 is invalid"),
        A("folder-empty-image", _folder("folder_empty_image"), r"b.png: the file is empty"),
        A("folder-bomb-image", _folder("folder_bomb"), r"b.png: 15000x15000 pixels is over the limit"),
        A("folder-garbage-image", _folder("folder_garbage"), r"b.png: not a readable image"),
        A("folder-no-classes", _folder("folder_no_classes"), r"folder_no_classes"),
        A("voc-billion-laughs", _voc("xml_laughs"), r"a.xml"),
        A("voc-external-entity", _voc("xml_external"), r"a.xml"),
        A("voc-malformed", _voc("xml_malformed"), r"a.xml"),
        A("box-inverted", _boxes([20, 20, 10, 10]), r"expected x0 <= x1 and y0 <= y1"),
        A("box-nan", _boxes([np.nan, 0, 10, 10]), r"box"),
        A("preprocessing-zero-std", _preprocessing(mean=(0.5,), std=(0.0,)), r"std"),
        A("preprocessing-bad-resize", _preprocessing(mean=(0.5,), std=(0.2,), resize="squash"), r"resize='squash'"),
        A("prepare-float-image", _prepare(lambda: [np.zeros((48, 48), np.float32)]), r"expected a uint8 numpy array",
          (TypeError,)),
        A("prepare-empty-image", _prepare(lambda: [np.zeros((0, 48), np.uint8)]), r"image"),
        A("cluttered-negative-n", _cluttered(n=-1, split="test", seed=0), r"n=-1"),
        A("test-split-too-many", _split(10**9), r"1000000000"),
    ]


def _cli_cases() -> list[Case]:
    C = lambda id, argv, match, memory=False, setup=None: Case(id, "cli", match, argv=tuple(argv), memory=memory,  # noqa: E731
                                                              setup=setup)
    out = "{out}/x.png"
    explain = ("explain", "--model", "{model}", "--method", "attention", "--out", out)
    evaluate = ("evaluate", "--models", "{model}", "--methods", "attention", "--n-images", "2", "--out", "{out}/r.json")
    return [
        C("info-missing", ["info", "{unicode_missing}"], r"ünïcödé 模型.*does not exist"),
        C("info-malformed-config", ["info", "{config_malformed}"], r"not valid JSON"),
        C("info-garbage-weights", ["info", "{weights_garbage}"], r"not a readable safetensors file"),
        C("info-nan-weights", ["info", "{weights_nan}"], r"weights_nan/model.safetensors: tensor .* NaN/Inf"),
        C("info-huge-config", ["info", "{config_huge}"], r"asks for depth=100000", memory=True),
        C("explain-nan-weights", ["explain", "--model", "{weights_nan}", "--method", "attention", "--out", out, "test:0"],
          r"weights_nan.*NaN/Inf"),
        C("explain-huge-config", ["explain", "--model", "{config_huge}", "--method", "attention", "--out", out, "test:0"],
          r"asks for depth=100000", memory=True),
        C("explain-bomb", [*explain, "{bomb_png}"], r"25000x25000 pixels is over the limit", memory=True),
        C("explain-empty-image", [*explain, "{empty_png}"], r"empty.png: the file is empty"),
        C("explain-text-image", [*explain, "{text_png}"], r"text.png: not a readable image"),
        C("explain-truncated-jpeg", [*explain, "{truncated_jpg}"], r"cut.jpg: not a readable image"),
        C("explain-missing-image", [*explain, "{unicode_missing}"], r"does not exist"),
        C("explain-test-index", [*explain, "test:999999"], r"999999"),
        C("explain-unknown-method", ["explain", "--model", "{model}", "--method", "nope", "--out", out, "test:0"], r"nope"),
        C("explain-bad-layer", [*explain, "--layer", "9", "test:0"], r"layer"),
        C("explain-bad-head", [*explain, "--head", "7", "test:0"], r"head"),
        C("explain-bad-target", [*explain, "--target", "99", "test:0"], r"--target=99 is not a class of"),
        C("explain-bad-alpha", [*explain, "--alpha", "2", "test:0"], r"alpha"),
        C("explain-out-under-file", ["explain", "--model", "{model}", "--method", "attention", "--out",
                                     "{not_a_dir}/x.png", "test:0"], r"cannot write"),
        C("explain-unknown-option", [*explain, "--colour", "red", "test:0"], r"unrecognized arguments: --colour"),
        C("compare-unknown-method", ["compare", "--models", "{model}", "--methods", "nope", "--out", out, "test:0"], r"nope"),
        C("compare-missing-model", ["compare", "--models", "{model},{unicode_missing}", "--out", out, "test:0"],
          r"does not exist"),
        C("evaluate-no-methods", ["evaluate", "--models", "{model}", "--methods", "", "--n-images", "2"], r"method"),
        C("evaluate-chunk-zero", [*evaluate, "--chunk", "0"], r"chunk=0"),
        C("evaluate-steps-zero", [*evaluate, "--steps", "0"], r"steps=0"),
        C("evaluate-n-images-zero", ["evaluate", "--models", "{model}", "--n-images", "0"], r"--n-images=0"),
        C("evaluate-n-images-huge", ["evaluate", "--models", "{model}", "--n-images", "999999999"],
          r"--n-images=999999999", memory=True),
        C("evaluate-bad-data", [*evaluate, "--data", "imagenet"], r"--data='imagenet'"),
        C("evaluate-missing-folder", [*evaluate, "--data", "folder:{unicode_missing}"], r"ünïcödé"),
        C("evaluate-folder-empty-image", [*evaluate, "--data", "folder:{folder_empty_image}"], r"b.png: the file is empty"),
        C("evaluate-folder-bomb", [*evaluate, "--data", "folder:{folder_bomb}"], r"15000x15000 pixels", memory=True),
        C("evaluate-xml-laughs", [*evaluate, "--data", "folder:{folder_good}", "--boxes", "{xml_laughs}"], r"a.xml"),
        C("evaluate-xml-external", [*evaluate, "--data", "folder:{folder_good}", "--boxes", "{xml_external}"], r"a.xml"),
        C("evaluate-out-not-json", ["evaluate", "--models", "{model}", "--n-images", "2", "--out", "{out}/r.txt"],
          r"must end in .json"),
        C("evaluate-out-under-file", ["evaluate", "--models", "{model}", "--methods", "attention", "--n-images", "2",
                                      "--out", "{not_a_dir}/r.json"], r"cannot write"),
        C("evaluate-locked", ["evaluate", "--models", "{model}", "--methods", "attention", "--n-images", "2", "--out",
                              "{out}/locked.json"], r"another evaluation is writing", setup=_hold_lock),
        C("evaluate-bad-target", [*evaluate, "--target", "x"], r"--target='x' is invalid; expected 'label', 'predicted', 'top K'"),
        C("eigencheck-batch-zero", ["eigencheck", "--model", "{model}", "--batch-size", "0", "--out", "{out}/e.json"],
          r"batch"),
        C("eigencheck-n-images-zero", ["eigencheck", "--model", "{model}", "--n-images", "0", "--out", "{out}/e.json"],
          r"n-images|n_images"),
        C("eigencheck-bad-layers", ["eigencheck", "--model", "{model}", "--layers", "9", "--out", "{out}/e.json"], r"layer"),
        C("accuracy-missing-model", ["accuracy", "--models", "{unicode_missing}"], r"does not exist"),
        C("train-epochs-zero", ["train", "--variant", "softmax", "--out", "{out}/t", "--epochs", "0"], r"epochs"),
        C("import-timm-garbage", ["import-timm", "--num-heads", "2", "--out", "{out}/t", "{timm_garbage}"],
          r"not a readable safetensors file|timm.safetensors"),
        C("threads-zero", ["info", "{model}", "--threads", "0"], r"--threads=0 is out of range"),
        C("unknown-command-option", ["info", "{model}", "--frobnicate"], r"unrecognized arguments"),
    ]


APP = ROOT / "app" / "streamlit_app.py"


def _app_upload(name: str, as_name: str | None = None) -> Callable[[Paths], Any]:
    def run(paths: Paths):
        from streamlit.testing.v1 import AppTest

        at = AppTest.from_file(str(APP), default_timeout=120).run()
        at.radio(key="image_set").set_value("upload").run()
        upload = (as_name or paths[name].name, paths[name].read_bytes(), "image/png")
        return at.file_uploader(key="upload").set_value(upload).run()

    return run


@contextlib.contextmanager
def _user_models(paths: Paths, name: str):
    import os

    old = os.environ.get("INFSA_VIZ_MODELS")
    os.environ["INFSA_VIZ_MODELS"] = str(paths[name])
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("INFSA_VIZ_MODELS", None)
        else:
            os.environ["INFSA_VIZ_MODELS"] = old


def _app_model(name: str, page: str | None) -> Callable[[Paths], Any]:
    def run(paths: Paths):
        from streamlit.testing.v1 import AppTest

        with _user_models(paths, name):
            at = AppTest.from_file(str(APP), default_timeout=120).run()
            at.multiselect(key="models").select(str(paths[name].resolve())).run()
            if page is not None:
                at.switch_page(f"views/{page}.py").run()
            return at

    return run


def _app_cases() -> list[Case]:
    P = lambda id, call, match: Case(id, "app", match, call=call)  # noqa: E731
    cases = [
        P("upload-empty", _app_upload("empty_png"), r"empty.png: the file is empty"),
        P("upload-text", _app_upload("text_png"), r"text.png: not a readable image"),
        P("upload-bomb", _app_upload("bomb_png"), r"25000x25000 pixels is over the limit"),
        P("upload-truncated-jpeg", _app_upload("truncated_jpg"), r"cut.jpg: not a readable image"),
        P("upload-gif-as-png", _app_upload("gif", "anim.png"), r"anim.png: not a readable image"),
    ]
    for model, match in (("weights_nan", r"NaN/Inf"), ("config_huge", r"asks for depth=100000"),
                         ("weights_garbage", r"not a readable safetensors file"),
                         ("config_malformed", r"not valid JSON")):
        for page in (None, "spectral", "curves", "attention"):
            cases.append(P(f"model-{model}-{page or 'side-by-side'}", _app_model(model, page), match))
    return cases


def all_cases() -> list[Case]:
    """Every case: library API, CLI and app, the second to fourth sweeps' (``sweep2.py`` … ``sweep4.py``) and
    those of every registered model format (``sweep_formats.py``, read from the registry when called) included."""
    from tests.bad_inputs.sweep2 import second_sweep_cases

    from tests.bad_inputs.sweep3 import third_sweep_cases
    from tests.bad_inputs.sweep4 import fourth_sweep_cases
    from tests.bad_inputs.sweep_formats import format_cases

    cases = (_api_cases() + _cli_cases() + _app_cases() + second_sweep_cases() + third_sweep_cases()
             + fourth_sweep_cases() + format_cases())
    ids = [(c.surface, c.id) for c in cases]
    if len(ids) != len(set(ids)):
        raise RuntimeError("duplicate case ids")
    return cases


def app_with_plugins(plugins: Path):
    """The app run once (AppTest) with ``INFSA_VIZ_PLUGINS`` naming ``plugins``; the variable restored."""
    import os

    from streamlit.testing.v1 import AppTest

    old = os.environ.get("INFSA_VIZ_PLUGINS")
    os.environ["INFSA_VIZ_PLUGINS"] = str(plugins)
    try:
        return AppTest.from_file(str(APP), default_timeout=120).run()
    finally:
        if old is None:
            os.environ.pop("INFSA_VIZ_PLUGINS", None)
        else:
            os.environ["INFSA_VIZ_PLUGINS"] = old
