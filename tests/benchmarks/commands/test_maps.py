"""``python -m benchmarks maps``: every case measured per size, failures recorded (speed not asserted)."""

from __future__ import annotations

import json

from benchmarks.maps import map_cases


def test_bench_maps_small_sizes(bench_main, tmp_path, capsys):
    out = tmp_path / "maps.json"
    # One process per case (a few seconds each), so three methods of three families (a graph method twice:
    # its native and its InfSA reading); the variant × side × method loop is tested with a fake process in
    # tests/benchmarks/test_maps.py, and every method at real size in tests/test_real_size.py.
    methods = ("attention", "visits", "saliency")
    assert bench_main("maps", "--variants", "linear_infsa", "--methods", ",".join(methods), "--sides", "32",
                      "--out", str(out), "--threads", "1") == 0
    report = json.loads(out.read_text())
    assert [(c["variant"], c["method"], c["options"], c["tokens"]) for c in report["cases"]] == [
        ("linear_infsa", m, o, 17) for m, o in map_cases() if m in methods
    ]
    assert len(report["cases"]) == 4 and report["protocol"]["methods"].endswith("(--methods)")
    assert all(c["status"] == "ok" and c["finite"] and c["peak_rss_bytes"] > 0 and c["warmup_seconds"] > 0
               for c in report["cases"]), [c for c in report["cases"] if c["status"] != "ok"]
    assert report["protocol"]["command"].startswith("python -m benchmarks maps --variants")
    assert capsys.readouterr().err.count("maps: ") == len(report["cases"])
    assert bench_main("maps", "--variants", "bogus", "--out", str(out)) == 2
    assert "--variants='bogus'" in capsys.readouterr().err
    assert bench_main("maps", "--methods", "bogus", "--out", str(out)) == 2
    assert "--methods='bogus'" in capsys.readouterr().err
    assert bench_main("maps", "--sides", "30", "--out", str(out)) == 2
    assert "--sides='30'" in capsys.readouterr().err
