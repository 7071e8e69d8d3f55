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
    assert record["paired_tests"]["method_vs_method"] and set(record["benchmark_quality"]["per_model"]) == {"m"}
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
