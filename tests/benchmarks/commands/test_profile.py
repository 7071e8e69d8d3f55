"""``python -m benchmarks profile``: one operator breakdown per case, from --case or a throughput report."""

from __future__ import annotations

import json


def _case(variant, resolution):
    return {"section": "model", "shape": "shipped", "variant": variant, "resolution": resolution, "status": "ok"}


def test_profile_command(bench_main, tmp_path, capsys):
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"cases": [_case("linear_infsa", 64), _case("softmax", 32)]}))
    out = tmp_path / "profile.json"
    assert bench_main("profile", "--bench", str(bench), "--top", "3", "--out", str(out), "--threads", "1") == 0
    report = json.loads(out.read_text())
    assert [(c["variant"], c["resolution"]) for c in report["cases"]] == [("softmax", 32), ("linear_infsa", 64)]
    assert report["protocol"]["threads"] == 1
    assert report["protocol"]["command"].startswith("python -m benchmarks profile --bench")
    assert bench_main("profile", "--case", "linear:64", "--out", str(out)) == 2
    assert "--case variant='linear'" in capsys.readouterr().err
    assert bench_main("profile", "--case", "softmax", "--out", str(out)) == 2
    assert bench_main("profile", "--out", str(out)) == 2


def test_profile_command_attention_layers_give_operator_slopes(bench_main, tmp_path, capsys):
    out = tmp_path / "profile.json"
    assert bench_main("profile", "--attention", "linear_infsa:256", "--attention", "linear_infsa:1024",
                      "--top", "5", "--out", str(out), "--threads", "1") == 0
    report = json.loads(out.read_text())
    assert [c["tokens"] for c in report["cases"]] == [256, 1024]
    slopes = report["op_slopes"]["attention/linear_infsa"]
    assert slopes["tokens"] == [256, 1024] and slopes["ops"]
    assert bench_main("profile", "--attention", "linear_infsa:0", "--out", str(out)) == 2
    assert "--attention='linear_infsa:0'" in capsys.readouterr().err
