"""python -m benchmarks backbones: every map and both metrics timed beside the floor, with the estimate."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from benchmarks import backbones
from benchmarks.backbones import Case, backbone_cost


@pytest.fixture
def photos(tmp_path):
    """A VOC folder as labelme ships it: JPEGImages, Annotations, class_names.txt."""
    (tmp_path / "JPEGImages").mkdir()
    (tmp_path / "Annotations").mkdir()
    (tmp_path / "class_names.txt").write_text("_background_\ncat\ndog\n")
    rng = np.random.default_rng(0)
    for i, (h, w) in enumerate([(40, 50), (36, 30)]):
        cv2.imwrite(str(tmp_path / "JPEGImages" / f"p{i}.jpg"), rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        (tmp_path / "Annotations" / f"p{i}.xml").write_text(
            f"<annotation><size><width>{w}</width><height>{h}</height><depth>3</depth></size><object><name>cat</name>"
            f"<bndbox><xmin>2</xmin><ymin>3</ymin><xmax>{w // 2}</xmax><ymax>{h - 2}</ymax></bndbox></object>"
            "</annotation>")
    return tmp_path


def test_every_map_is_timed_beside_the_softmax_floor_with_the_estimate(photos, monkeypatch):
    monkeypatch.setitem(backbones.CASES, "tiny", Case("tiny", dict(img_size=32, in_chans=3, patch_size=8, embed_dim=16,
                                                                   depth=2, num_heads=2)))
    report = backbone_cost("tiny", variants=["linear_infsa"], methods=["attention", "visits", "saliency"],
                           data=f"folder:{photos}", n_images=2, steps=4, against=("uniform", 4))
    assert report["protocol"]["variants"] == ["softmax", "linear_infsa"] and report["protocol"]["steps"] == 4
    assert report["protocol"]["step_grid"] == "auto" and "uniform grid of 4 steps" in report["protocol"]["fractions"]
    for variant, entry in report["variants"].items():
        assert entry["n_images"] == 2 and entry["tokens"] == 17
        assert entry["step_fractions"] == [0.0, 0.25, 0.5, 0.75, 1.0]
        assert [r["method"] for r in entry["rows"]] == ["attention", "visits", "saliency"]
        for row in entry["rows"]:
            assert set(row["seconds_per_image"]) == {"map", "morf_lerf", "box_auc", "total"} and row["valid"]
            assert all(v > 0 for v in row["seconds_per_image"].values())
            # 16 patches: auto keeps the uniform grid, so the engine's figures (copies shared between maps) equal
            # a fresh run of perturbation_curves on the same map
            np.testing.assert_allclose(row["morf_aoc"], row["morf_aoc_against"], rtol=0, atol=1e-9)
            assert row["morf_lerf_against"] > 0 and row["x_against"] > 0
        assert entry["estimate"]["passes"] > 0 and entry["estimate_over_measured"] > 0
    floor = report["variants"]["softmax"]["rows"][0]
    assert floor["x_floor"]["map"] == 1.0


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
def test_the_linalg_matrix_tells_a_pass_from_a_failure_and_a_hang(monkeypatch):
    """Each case in its own interpreter: a passing call, a failing one and one that outlives its limit."""
    from benchmarks import linalg

    monkeypatch.setitem(linalg.OPS, "fails", "torch.linalg.solve(M[:, :2], b)")
    monkeypatch.setitem(linalg.OPS, "sleeps", "time.sleep(60)")
    report = linalg.linalg_matrix(ops=["helper_solve", "fails"], batches=[2], sizes=[8], threads=[2],
                                  dtypes=["float64"], repeats=1, timeout=300)
    results = {r["op"]: r for r in report["cases"]}
    assert results["helper_solve"]["result"] == "ok" and results["helper_solve"]["seconds"] >= 0
    assert results["fails"]["result"] == "error" and "must be batches of square matrices" in results["fails"]["note"]
    hang = linalg.linalg_matrix(ops=["sleeps"], batches=[2], sizes=[8], threads=[2], dtypes=["float64"], repeats=1,
                                timeout=5)["cases"][0]
    assert hang["result"] == "hang" and hang["seconds"] is None
