"""Adding a map method, a reference map, a metric and a model format is one module
(examples/toy_plugin.py): the evaluation's report, the CLI's choices and the docs see all four."""

from __future__ import annotations

import json

TINY = {"img_size": 48, "in_chans": 1, "patch_size": 16, "embed_dim": 16, "depth": 1, "num_heads": 2,
        "num_classes": 10}


def _toy_model(tmp_path):
    path = tmp_path / "m.toyvit"
    path.write_text(json.dumps({"config": TINY, "seed": 1}))
    return path


def test_a_plugin_module_reaches_the_evaluation_report(tmp_path, toy_plugin):
    from infsa_viz.cli import main

    out = tmp_path / "r.json"
    argv = ["evaluate", "--models", str(_toy_model(tmp_path)), "--methods", "centre_bias,attention", "--references",
            "--metrics", "perturbation,box_auc,map_peak", "--n-images", "4", "--steps", "2", "--sanity-images", "0",
            "--out", str(out)]
    assert main(argv) == 0
    report = json.loads(out.read_text())
    rows = {r["method"]: r for r in report["results"]}
    assert {"centre_bias", "attention", "random", "centre_oracle", "box_oracle"} <= set(rows)  # references by role
    assert all(r["map_peak"] is not None and "map_peak" in r["protocol"] for r in rows.values())
    assert rows["centre_oracle"]["box_pr_auc"] > rows["random"]["box_pr_auc"]  # an oracle that read the boxes
    assert report["protocol"]["settings"]["metrics"] == ["perturbation", "box_auc", "map_peak"]
    assert rows["attention"]["protocol"]["map"]["variant"] == "softmax"
    with open(out.with_suffix(".csv")) as f:
        assert "map_peak" in f.readline().split(",")


def test_a_plugin_module_reaches_the_cli_choices_and_help(tmp_path, toy_plugin, capsys):
    from infsa_viz.cli import main

    assert main(["evaluate", "--help"]) == 0
    help_text = capsys.readouterr().out
    assert "map_peak" in help_text and "centre_bias" in help_text
    assert main(["info", str(_toy_model(tmp_path))]) == 0 and json.loads(capsys.readouterr().out)["format"] == "toy"
    assert main(["explain", "--model", str(_toy_model(tmp_path)), "--method", "centre_bias", "--out",
                 str(tmp_path / "x.png"), "test:0"]) == 0


def test_a_plugin_module_reaches_the_metric_docs(toy_plugin):
    from scripts import metric_docs

    text = metric_docs.document()
    assert "### map_peak (complexity)" in text and "`centre_oracle` | ceiling" in text


def test_a_plugin_module_reaches_the_app(tmp_path, monkeypatch, registries):
    """``streamlit run app -- --plugins FILE`` (here INFSA_VIZ_PLUGINS), with no change to the app: the
    method is offered and drawn; the metric is a column of Side by side's figures table (its label
    from its declaration, its value for every model) and in the glossary; a model of the new format
    is listed and explained beside the shipped ones; the reference map is in the glossary."""
    import sys
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parents[1]
    before = set(sys.modules)
    monkeypatch.setenv("INFSA_VIZ_PLUGINS", str(root / "examples" / "toy_plugin.py"))
    monkeypatch.setenv("INFSA_VIZ_MODELS", str(_toy_model(tmp_path)))
    try:
        at = AppTest.from_file(str(root / "app" / "streamlit_app.py"), default_timeout=240).run()
        assert not at.exception, [e.value for e in at.exception]
        offered = [o.split(" ")[0] for o in at.selectbox(key="method").options]
        assert "centre_bias" in offered and "centre_oracle" not in offered  # a reference map reads the truth
        toy = next(o for o in at.multiselect(key="models").options if o.endswith("m.toyvit"))
        assert at.multiselect(key="models").format_func(toy) == "softmax · m.toyvit"  # its loaded config's variant
        captions = [i.caption for image in at.image for i in image.proto.imgs]
        assert "softmax · m.toyvit" in captions and not at.error, [e.value for e in at.error]  # listed and explained
        (table,) = [m.value for m in at.markdown if m.value.startswith("| model | ")]
        header, _, *rows = table.splitlines()
        assert header.split(" | ")[-1] == "map peak |"  # the plugin's figure, by its declared label
        peaks = {r.split(" | ")[0].lstrip("| "): r.split(" | ")[-1].rstrip(" |") for r in rows}
        assert "softmax · m.toyvit" in peaks and all(0 < float(v) <= 1 for v in peaks.values())
        at.selectbox(key="method").select("centre_bias").run()
        assert not at.exception, [e.value for e in at.exception]
        at.switch_page("views/glossary.py").run()
        text = "\n".join(m.value for m in at.markdown)
        assert "| map peak | map_peak |" in text and "| centre_oracle | reference | ceiling |" in text
    finally:
        for name in set(sys.modules) - before:
            if name.startswith("infsa_viz_plugin_"):
                del sys.modules[name]

