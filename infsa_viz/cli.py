"""The ``infsa-viz`` command line: ``main(argv) -> int``.

Each subcommand lives in ``infsa_viz/commands/<name>.py`` and defines
``add_arguments(parser)`` and ``run(args) -> int``; its one-line help lives in :data:`COMMANDS`,
and a module is imported only when its command runs, so ``infsa-viz --help`` stays fast.
Library ``ValueError``s become one line on stderr and exit code 2; other failures exit 1 with
one line (``--debug`` shows the traceback). The benchmarks (``python -m benchmarks``) reuse
:func:`main` with their own command table.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
import os
import sys
import traceback
from typing import Callable, Sequence

from ._version import __version__

__all__ = ["COMMANDS", "build_parser", "check_outputs", "main", "script_main", "script_parser"]

#: Subcommand name → (module path, one-line help). Help text lives here so --help imports nothing.
COMMANDS: dict[str, tuple[str, str]] = {
    "info": ("infsa_viz.commands.info", "describe a saved model directory (config, parameters, rho, card)"),
    "train": ("infsa_viz.commands.train", "train one attention variant with the matched recipe"),
    "accuracy": ("infsa_viz.commands.accuracy", "re-evaluate trained models on their test split"),
    "evaluate": ("infsa_viz.commands.evaluate", "score explanation maps: MoRF/LeRF, box ROC/PR-AUC, pointing game"),
    "eigencheck": ("infsa_viz.commands.eigencheck", "cosine of Linear-InfSA's estimate vs the dense Perron vector"),
    "import-timm": ("infsa_viz.commands.import_timm", "import a timm ViT state dict (.safetensors) as any variant"),
    "explain": ("infsa_viz.commands.explain", "overlay one model's map on an image (PNG)"),
    "compare": ("infsa_viz.commands.compare", "overlay several models' maps on one image, one colour scale"),
}

PROG = "infsa-viz"

#: Options of any command (the CLI's and the benchmarks') that name what it writes, and what it reads:
#: the output rule (:func:`check_outputs`) compares them before a command runs. ``--load-from`` of the
#: reliability benchmark is not an input here: it names the report being replaced on purpose, read whole
#: before anything is written.
OUTPUT_OPTIONS: dict[str, str] = {"out": "--out", "load_out": "--load-out", "journal": "--journal",
                                  "save_model": "--save-model"}
INPUT_OPTIONS: tuple[str, ...] = ("model", "models", "init", "image", "weights", "data", "boxes", "classes")


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line on stderr and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _common() -> argparse.ArgumentParser:
    from .commands.lists import threads

    common = _Parser(add_help=False)
    common.add_argument("--threads", type=threads(), default=None, metavar="T",
                        help="torch CPU threads (default: torch's choice)")
    common.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    common.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    return common


def build_parser(load_arguments: str | None = None, *, commands: dict[str, tuple[str, str]] = COMMANDS,
                 prog: str = PROG) -> argparse.ArgumentParser:
    """Build the parser; only the subcommand named by ``load_arguments`` imports its module."""
    parser = _Parser(prog=prog, description="Interpretability for InfSA vision transformers.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    common = _common()
    for name, (module_path, help_text) in commands.items():
        command = sub.add_parser(name, help=help_text, description=help_text, parents=[common])
        if name == load_arguments:
            importlib.import_module(module_path).add_arguments(command)
    return parser


def check_outputs(outputs: dict[str, object], inputs: Sequence[object]) -> None:
    """The output rule of every command and script (:func:`infsa_viz.io.refuse_overwriting_inputs`):
    no output is, lies inside, or holds an input. ``None`` entries are skipped; a model spec's
    ``?options`` and a ``folder:`` data prefix are dropped; a list or tuple is several inputs.

    Raises:
        ValueError: one line naming the option, the output and the input.
    """
    from .data.layouts import FOLDER_PREFIX
    from .io import refuse_overwriting_inputs

    paths: list[str] = []
    for entry in inputs:
        for item in entry if isinstance(entry, (list, tuple)) else (entry,):
            if item is None or item == "":
                continue
            text = str(item).removeprefix(FOLDER_PREFIX)
            paths.append(text.split("?", 1)[0])
    refuse_overwriting_inputs({k: None if v is None else str(v) for k, v in outputs.items()}, paths)


def _declared_paths(args: argparse.Namespace) -> tuple[dict[str, object], list[object]]:
    """The outputs and inputs a parsed command names through :data:`OUTPUT_OPTIONS` / :data:`INPUT_OPTIONS`."""
    outputs = {flag: getattr(args, name) for name, flag in OUTPUT_OPTIONS.items() if getattr(args, name, None)}
    inputs = [getattr(args, name) for name in INPUT_OPTIONS if isinstance(getattr(args, name, None), (str, list, tuple))]
    return outputs, inputs


def main(argv: Sequence[str] | None = None, *, commands: dict[str, tuple[str, str]] = COMMANDS,
         prog: str = PROG, reads: Sequence[str] = ()) -> int:
    """Run the CLI; returns the process exit code.

    Args:
        argv: arguments (default ``sys.argv[1:]``).
        commands: subcommand name → (module path, one-line help); default the ``infsa-viz`` ones.
        prog: the program name in messages.
        reads: paths every command of the program reads whatever its options (the benchmarks' shipped
            models); no output may overwrite them.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    name = next((a for a in argv if a in commands), None)
    parser = build_parser(load_arguments=name, commands=commands, prog=prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version, usage errors
        return int(stop.code or 0)
    args.argv = argv
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format=f"{prog}: %(message)s", stream=sys.stderr)

    def run() -> int:
        outputs, inputs = _declared_paths(args)
        check_outputs(outputs, [*inputs, *reads])  # before anything is read or computed
        if args.threads is not None:
            import torch

            torch.set_num_threads(args.threads)
        return int(importlib.import_module(commands[args.command][0]).run(args) or 0)

    return _one_line(run, f"{prog} {args.command}", debug=args.debug)


def _one_line(run: Callable[[], int], who: str, *, debug: bool) -> int:
    """``run()``'s exit code; a ``ValueError`` (bad input) is one line on stderr and 2, an interruption
    130, any other failure one line and 1 (the traceback only with ``debug``)."""
    try:
        return run()
    except ValueError as err:
        if debug:
            traceback.print_exc()
        print(f"{who}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{who}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - the CLI's last line of defence
        if debug:
            traceback.print_exc()
        print(f"{who}: failed: {type(err).__name__}: {err}", file=sys.stderr)
        return 1


def script_parser(prog: str, description: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of a maintainer script (``scripts/``): usage errors are one line and exit 2."""
    return _Parser(prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter)


def script_main(prog: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Decorator of a maintainer script's ``main(argv) -> int``: its errors as the CLI's (one line on
    stderr; bad input, a ``ValueError``, exits 2; any other failure 1; a traceback only with
    ``INFSA_VIZ_DEBUG=1``); argparse's exits become the returned code."""
    def wrap(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def guarded(argv: Sequence[str] | None = None) -> int:
            try:
                return _one_line(lambda: main(argv), prog, debug=os.environ.get("INFSA_VIZ_DEBUG") == "1")
            except SystemExit as stop:  # argparse: --help, or a usage error already printed in one line
                return stop.code if isinstance(stop.code, int) else 2

        return guarded

    return wrap


if __name__ == "__main__":  # python -m infsa_viz.cli (torchrun uses this)
    sys.exit(main())
