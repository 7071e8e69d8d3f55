"""The one writer of evaluation results: JSON record, CSV table, per-image CSV, HTML."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from infsa_viz.data import LabelledImages
from infsa_viz.evaluation import TABLE_COLUMNS, EvalSettings, evaluate, records_csv, write_evaluation
from infsa_viz.model import VisionTransformer


def _evaluation(make_config):
    model = VisionTransformer(make_config("linear_infsa")).eval()
    rng = np.random.default_rng(1)
    data = LabelledImages(images=rng.integers(0, 256, (3, 16, 16), dtype=np.uint8), labels=np.array([0, 1, 2]),
                          boxes=[np.array([[0, 0, 8, 8]])] * 3, names=["a", "b", "c"], description={"name": "t"})
    return evaluate([("m", model)], ["visits", "saliency"], data, protocol=EvalSettings(steps=2, select="all"))


def test_json_csv_per_image_csv_and_html(tmp_path, make_config):
    result = _evaluation(make_config)
    out = tmp_path / "r.json"
    paths = write_evaluation(result, out, command="infsa-viz evaluate …", per_image=True)
    assert [p.name for p in paths] == ["r.json", "r.csv", "r.images.csv", "r.html"]
    record = json.loads(out.read_text())
    assert record["protocol"]["command"] == "infsa-viz evaluate …" and record["dataset"] == {"name": "t"}
    assert [r["method"] for r in record["results"]] == ["visits", "saliency"]
    assert all("protocol" in r and "curves" in r and "morf_aoc_ci" in r for r in record["results"])
    # the engine's evaluation holds no statistics: infsa_viz.stats.with_comparisons adds them (tests/stats)
    assert not {"paired_tests", "benchmark_quality", "seeds", "verdict"} & set(record)
    with open(out.with_suffix(".csv")) as f:
        table = list(csv.DictReader(f))
    assert list(table[0]) == list(TABLE_COLUMNS) and len(table) == 2
    with open(out.with_suffix(".images.csv")) as f:
        images = list(csv.DictReader(f))
    assert len(images) == 6 and [r["name"] for r in images[:3]] == ["a", "b", "c"]
    assert len(json.loads(images[0]["logits"])) == 3 and images[0]["target"] == "" and images[3]["target"] == "0"
    assert images[0]["distractor_roc_auc"] == ""  # undefined: no negative boxes
    assert 'src="plotly.min.js"' in out.with_suffix(".html").read_text() and (tmp_path / "plotly.min.js").is_file()
    assert records_csv([]) == "\n"
    with pytest.raises(ValueError, match="must end in .json"):
        write_evaluation(result, tmp_path / "r.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plotly.min.js", "r.csv", "r.html", "r.images.csv", "r.json"]


def test_image_names_that_look_like_formulas_are_escaped_in_the_per_image_csv():
    import csv
    import io

    from infsa_viz.evaluation import records_csv
    from infsa_viz.evaluation.records import ImageRecord

    records = [ImageRecord(model="=m", variant="softmax", method="attention", index=i, name=name, label=1,
                           logits=np.array([-1.0, 2.0]), target=None, explained=1, figures={"morf_aoc": -0.5},
                           curves={}, map_min=-1.0, map_max=1.0, map_mass=2.0, validity=None)
               for i, name in enumerate(("=cmd|' /C calc'!A0", "+1.png", "-2.png", "@x.png", "ok.png"))]
    rows = list(csv.DictReader(io.StringIO(records_csv(records))))
    assert [r["name"] for r in rows] == ["'=cmd|' /C calc'!A0", "'+1.png", "'-2.png", "'@x.png", "ok.png"]
    assert rows[0]["model"] == "'=m" and float(rows[0]["morf_aoc"]) == -0.5  # numbers are not touched


def test_read_report_names_what_a_damaged_report_lacks(tmp_path):
    from infsa_viz.evaluation.writer import read_report

    path = tmp_path / "r.json"
    for text, match in (("", "not valid JSON"), ("[]", "expected an evaluation report .*got list"),
                        ("{}", r"\['protocol', 'dataset', 'results'\] missing"),
                        ('{"protocol": {}, "dataset": {}, "results": [{"model": "m"}]}', r"results\[0\] is not")):
        path.write_text(text)
        with pytest.raises(ValueError, match=match):
            read_report(path)
    path.write_text('{"results": []}')
    assert read_report(path, parts=("results",)) == {"results": []}
