"""``python -m benchmarks reliability``: options are checked before the long parts run."""

from __future__ import annotations


def test_load_out_is_checked_up_front(bench_main, tmp_path, capsys):
    out = tmp_path / "reliability.json"
    assert bench_main("reliability", "--load-out", str(tmp_path / "aq.json"), "--out", str(out)) == 2
    assert "needs --load" in capsys.readouterr().err
    missing = tmp_path / "nope" / "aq.json"
    assert bench_main("reliability", "--load", "--load-out", str(missing), "--out", str(out)) == 2
    assert "its folder does not exist" in capsys.readouterr().err
    assert not out.exists()
