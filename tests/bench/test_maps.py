"""``infsa-viz bench-maps``: every method measured per size, failures recorded (speed not asserted)."""

from __future__ import annotations

import json

from infsa_viz.bench.maps import CASES
from infsa_viz.cli import main


def test_bench_maps_small_sizes(tmp_path, capsys):
    out = tmp_path / "maps.json"
    assert main(["bench-maps", "--variants", "softmax,linear_infsa", "--sides", "32", "--out", str(out),
                 "--threads", "1"]) == 0
    report = json.loads(out.read_text())
    assert [(c["variant"], c["method"]) for c in report["cases"]] == [
        (v, m) for v in ("softmax", "linear_infsa") for m, _ in CASES
    ]
    assert all(c["status"] == "ok" and c["finite"] and c["peak_rss_bytes"] > 0 and c["warmup_seconds"] > 0
               for c in report["cases"])
    assert main(["bench-maps", "--variants", "bogus", "--out", str(out)]) == 2
    assert "--variants='bogus'" in capsys.readouterr().err
    assert main(["bench-maps", "--sides", "30", "--out", str(out)]) == 2
    assert "--sides='30'" in capsys.readouterr().err
