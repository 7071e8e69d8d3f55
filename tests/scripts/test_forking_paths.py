"""scripts/forking_paths.py on a hand-made sensitivity record: every (seed pair, protocol) choice counted."""

from __future__ import annotations

from infsa_viz.stats.sensitivity import protocol_choices
from scripts.forking_paths import LARGE_GAP, forking_paths, forking_tables


def _record(attention: dict[tuple[str, int], list[float]], random: float = 50.0) -> dict:
    """Two protocols (ours and the next), two seeds; attention scores per (variant, seed) and protocol."""
    choices = [c.to_dict() for c in protocol_choices()[:2]]
    models = [{"variant": v, "seed": s, "scores": {"attention": [[x, 10] for x in values],
                                                   "random": [[random, 10]] * 2}}
              for (v, s), values in attention.items()]
    return {"protocol": {"paper": {"softmax": 42.6, "pure_infsa": 71.7, "linear_infsa": 76.0}}, "choices": choices,
            "models": models}


def test_each_seed_pair_and_protocol_is_one_choice():
    # seed 0: Linear - softmax = +25 then -1; seed 1: +1 (pure below softmax) then +2 (pure above Linear)
    record = _record({("softmax", 0): [50.0, 60.0], ("pure_infsa", 0): [60.0, 50.0], ("linear_infsa", 0): [75.0, 59.0],
                      ("softmax", 1): [60.0, 60.0], ("pure_infsa", 1): [55.0, 70.0], ("linear_infsa", 1): [61.0, 62.0]},
                     random=40.0)
    paths = forking_paths(record)
    assert paths["seeds"] == [0, 1] and [r["gaps"] for r in paths["rows"]] == [{0: 25.0, 1: 1.0}, {0: -1.0, 1: 2.0}]
    assert [r["ordering"] for r in paths["rows"]] == [{0: True, 1: False}, {0: False, 1: False}]
    assert paths["same_seed"] == {"choices": 4, "linear_above": 3, "large": 1, "max_gap": 25.0, "ordering": 1}
    # every Linear seed against every softmax seed: 2 x 2 pairs x 2 protocols
    assert paths["any_pair"]["choices"] == 8 and paths["any_pair"]["large"] == 1 and LARGE_GAP == 20.0
    tables = forking_tables(record)
    assert "| seed 0 (Linear-InfSA seed 0 vs softmax seed 0) | 1 | 1 | 1 | 1 | +25.0 (" in tables["forking-paths"]
    assert "3 of 4 (75.0 %)" in tables["forking-paths"]
    grid = tables["forking-paths-grid"].splitlines()
    assert grid[0].startswith("<details>") and grid[-1] == "</details>"
    assert grid[4].endswith("| +25.0 ✓✓ ‡ | +1.0 ✓ |")  # the largest gap first
