"""``python -m benchmarks COMMAND …`` (from the repository root); see :data:`benchmarks.BENCH_COMMANDS`."""

from __future__ import annotations

import sys

from infsa_viz.cli import main

from . import BENCH_COMMANDS, PROG, READS

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], commands=BENCH_COMMANDS, prog=PROG, reads=READS))
