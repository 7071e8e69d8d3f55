"""Profiling engine: pick the cases from a throughput report, rank one forward's operators (times not asserted)."""

from __future__ import annotations

import pytest

from benchmarks.profile import largest_completed, profile_forward


def _case(variant, resolution, status, shape="shipped", section="model"):
    return {"section": section, "shape": shape, "variant": variant, "resolution": resolution, "status": status}


def test_largest_completed_picks_the_largest_ok_model_case_per_variant():
    report = {"cases": [
        _case("softmax", 224, "ok"), _case("softmax", 1024, "ok"), _case("softmax", 2048, "timeout"),
        _case("linear_infsa", 9216, "ok"), _case("linear_infsa", 9999, "ok", shape="tiny"),
        _case("pure_infsa", 4096, "ok", section="attention"), _case("pure_infsa", 512, "ok"),
    ]}
    assert largest_completed(report, shape="shipped") == {"softmax": 1024, "linear_infsa": 9216, "pure_infsa": 512}
    with pytest.raises(ValueError, match="shape='other'"):
        largest_completed(report, shape="other")


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
def test_profile_forward_ranks_operators_by_self_time():
    row = profile_forward("pure_infsa", 64, top=5)
    assert row["tokens"] == 65 and len(row["top_ops"]) == 5
    shares = [op["percent"] for op in row["top_ops"]]
    assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 100.05
    assert any("bmm" in op["name"] or "matmul" in op["name"] or "addmm" in op["name"] for op in row["top_ops"])
    with pytest.raises(ValueError, match="resolution=60"):
        profile_forward("softmax", 60)


def test_profile_of_one_attention_layer_per_forward():
    row = profile_forward("linear_infsa", tokens=256, top=4, min_seconds=0.01)
    assert (row["section"], row["tokens"], row["resolution"]) == ("attention", 256, None)
    assert row["forwards"] >= 1 and row["self_cpu_total_ms"] > 0
    with pytest.raises(ValueError, match="either resolution"):
        profile_forward("linear_infsa", 64, tokens=256)


def test_op_slopes_recover_each_operators_exponent():
    from benchmarks.profile import op_slopes

    def row(n):
        ops = [{"name": "linear", "self_cpu_ms": 1e-3 * n}, {"name": "square", "self_cpu_ms": 1e-6 * n**2}]
        return {"section": "attention", "variant": "linear_infsa", "tokens": n, "top_ops": ops,
                "self_cpu_total_ms": 1e-3 * n + 1e-6 * n**2, "wall_s": 1e-3 * n}

    slopes = op_slopes([row(1000), row(4000), row(16000)])["attention/linear_infsa"]
    assert slopes["ops"]["linear"]["slope"] == pytest.approx(1.0) and slopes["ops"]["square"]["slope"] == pytest.approx(2.0)
    assert list(slopes["ops"]) == ["square", "linear"]  # largest at the largest size first
    assert slopes["wall"] == pytest.approx(1.0) and slopes["tokens"] == [1000, 4000, 16000]
    assert op_slopes([row(1000)]) == {}
