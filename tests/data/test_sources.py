"""The registry of generated data sources: a new kind of generator (here toy squares, no digits) is one
registration away from every entry point: the resolver, the CLI (train, evaluate, eigencheck, explain,
compare), the evaluation and the maintainer scripts that take ``--benchmark(s)`` (train_seeds,
meta_evaluation, morf_ceiling). This module is the whole of what the new source needs; the app's pages
read it in tests/app/test_sources.py."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from infsa_viz.cli import main
from infsa_viz.data import BENCHMARKS, Benchmark, Generator, Scene, data_source, register_benchmark, test_split
from infsa_viz.evaluation import EvalSettings, evaluate
from infsa_viz.model import VisionTransformer, ViTConfig, save_model
from infsa_viz.preprocess import Preprocessing

QUADRANTS = ("top left", "top right", "bottom left", "bottom right")


@dataclass(frozen=True)
class SquaresConfig:
    """A toy kind of benchmark (no digits): one bright 8 px square whose quadrant is the class, and one
    dim 4 px square elsewhere on a black 24 px canvas."""

    size: int = 24

    def to_dict(self) -> dict:
        return asdict(self)

    def settings_hash(self) -> str:
        return f"squares-{self.size}"


def _square(rng: np.random.Generator, quadrant: int, side: int, value: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    half = size // 2
    x0 = (quadrant % 2) * half + int(rng.integers(0, half - side + 1))
    y0 = (quadrant // 2) * half + int(rng.integers(0, half - side + 1))
    return np.full((side, side), value, np.uint8), np.array([x0, y0, x0 + side, y0 + side])


def _scenes(config: SquaresConfig, n: int, seed: int, start: int = 0) -> tuple[np.ndarray, np.ndarray, list[Scene]]:
    black = np.zeros((config.size, config.size), np.uint8)
    images, labels, scenes = [], [], []
    for i in range(start, start + n):  # image i depends only on (seed, i)
        rng = np.random.default_rng([seed, i])
        target, other = rng.permutation(4)[:2]
        (a, box_a), (b, box_b) = _square(rng, target, 8, 250, config.size), _square(rng, other, 4, 90, config.size)
        scene = Scene(black, black, (a, b), np.stack([box_a, box_b]), np.array([target, other]))
        images.append(scene.intervene(()))
        labels.append(int(target))
        scenes.append(scene)
    return np.stack(images), np.asarray(labels, np.int64), scenes


SQUARES = Generator("generate_squares", _scenes,
                    lambda config, epoch, n, seed: _scenes(config, n, seed + 1000 * (epoch + 1))[:2],
                    "the bright square (positive); the dim square is the negative box", "the dim square's quadrant")


def register_squares() -> Benchmark:
    """The one registration a new data source needs."""
    return register_benchmark(Benchmark("squares", SquaresConfig(), 7, Preprocessing(mean=0.1, std=0.3),
                                        "toy: a bright square's quadrant", generator=SQUARES, classes=QUADRANTS))


@pytest.fixture
def squares(registries):
    return register_squares()


@pytest.fixture(scope="module")
def squares_models(tmp_path_factory):
    """squares registered for this module, and a softmax and a linear-InfSA model trained on it by
    ``scripts/train_seeds.py`` (``infsa-viz train --data squares`` inside) into ``<root>/squares/``."""
    from scripts import train_seeds

    saved = dict(BENCHMARKS)
    register_squares()
    root = tmp_path_factory.mktemp("seeds")
    try:
        assert train_seeds.main(["--benchmark", "squares", "--variants", "softmax,linear_infsa", "--seeds", "1",
                                 "--epochs", "1", "--images-per-epoch", "64", "--test-size", "32",
                                 "--out", str(root / "squares"), "--threads", "1"]) == 0
        yield root
    finally:
        BENCHMARKS.clear()
        BENCHMARKS.update(saved)


def _model(path=None) -> VisionTransformer:
    torch.manual_seed(0)
    model = VisionTransformer(ViTConfig(img_size=24, in_chans=1, patch_size=4, embed_dim=16, depth=1, num_heads=2,
                                        num_classes=4, class_names=QUADRANTS,
                                        preprocessing=Preprocessing(mean=0.1, std=0.3))).eval()
    if path is not None:
        save_model(model, path)
    return model


def test_a_registered_generator_of_another_kind_is_a_test_split(squares):
    data = test_split(5, benchmark="squares")
    assert data.images.shape == (5, 24, 24) and data.labels.tolist() == test_split(benchmark="squares").labels[:5].tolist()
    assert data.description["images"].startswith("generate_squares(split='test', seed=7)")
    assert data.description["boxes"] == SQUARES.boxes and len(data.negative_boxes[0]) == 1
    images, labels = squares.training_images(0, n=3, seed=1)
    assert images.shape == (3, 24, 24) and labels.shape == (3,)
    with pytest.raises(ValueError, match="registered twice"):
        register_benchmark(squares)


def test_a_registered_generator_runs_in_evaluate_with_scenes(squares):
    data = test_split(4, benchmark="squares")
    protocol = EvalSettings(steps=2, chunk=4, subsample=4, road_images=0, sanity_images=0,
                            metrics=["perturbation", "box_auc", "evidence", "funnybirds", "class_switch"])
    found = evaluate([("m", _model())], ["attention", "random"], data, protocol=protocol)
    row = found.rows[0]
    assert row["n_images"] == 4 and row["protocol"]["evidence"]["objects"] == ["target", "distractor_1", "background"]
    assert found.dataset["name"] == "squares"


def test_a_registered_generator_is_a_cli_data_source(squares, tmp_path):
    _model(tmp_path / "m")
    out = tmp_path / "r.json"
    code = main(["evaluate", "--models", str(tmp_path / "m"), "--data", "squares", "--methods", "attention",
                 "--n-images", "4", "--chunk", "4", "--steps", "2", "--metrics", "perturbation,box_auc",
                 "--out", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    assert report["dataset"]["name"] == "squares" and report["results"][0]["n_images"] == 4


def test_the_resolver_declares_the_new_kind(squares):
    source = data_source("squares")
    assert source.classes == QUADRANTS and source.preprocessing == squares.preprocessing
    assert source.objects == "scenes" and "train" in source.splits and not source.model_labels
    assert source.labelled(3).names == test_split(3, benchmark="squares").names


def test_train_seeds_trains_on_it_with_its_own_size_and_classes(squares_models):
    manifest = json.loads((squares_models / "squares" / "seeds.json").read_text())
    assert manifest["benchmark"] == "squares" and len(manifest["runs"]) == 2
    assert "--data squares" in manifest["evaluate"]
    for run in manifest["runs"]:
        card = json.loads((Path(run["out"]) / "card.json").read_text())
        config = json.loads((Path(run["out"]) / "config.json").read_text())
        assert card["data"]["name"] == "squares" and "generate_squares" in card["data"]["train"]
        assert (config["img_size"], config["in_chans"], config["num_classes"]) == (24, 1, 4)


def test_every_cli_command_that_reads_data_reads_it(squares_models, tmp_path):
    softmax, linear = (str(squares_models / "squares" / f"{v}-seed1") for v in ("softmax", "linear_infsa"))
    out = tmp_path / "r.json"
    assert main(["evaluate", "--models", f"{softmax},{linear}", "--data", "squares", "--methods", "attention",
                 "--references", "--n-images", "6", "--chunk", "6", "--steps", "2",
                 "--metrics", "perturbation,box_auc,evidence", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["dataset"]["name"] == "squares" and {r["n_images"] for r in report["results"]} == {6}
    assert main(["eigencheck", "--model", linear, "--data", "squares", "--n-images", "4",
                 "--out", str(tmp_path / "e.json")]) == 0
    assert json.loads((tmp_path / "e.json").read_text())["settings"]["data"] == "squares"
    assert main(["explain", "squares:3", "--model", softmax, "--method", "attention",
                 "--out", str(tmp_path / "x.png")]) == 0
    assert main(["compare", "squares:3", "--models", f"{softmax},{linear}", "--methods", "attention",
                 "--target", "label", "--out", str(tmp_path / "c.png")]) == 0
    assert main(["explain", "squares:5000", "--model", softmax, "--method", "attention",
                 "--out", str(tmp_path / "y.png")]) == 2


@pytest.mark.slow  # end to end: the fast loop (-m 'not slow') stays under 3 min
def test_the_seed_scripts_read_it(squares_models, tmp_path, monkeypatch):
    from scripts import meta_evaluation, morf_ceiling

    monkeypatch.setitem(meta_evaluation.N_IMAGES, "squares", 4)
    monkeypatch.setitem(meta_evaluation.ROAD_IMAGES, "squares", 1)
    common = ["--benchmarks", "squares", "--seeds", "1", "--seeds-dir", str(squares_models), "--threads", "1"]
    assert meta_evaluation.main([*common, "--parts", str(tmp_path / "meta"), "--out", str(tmp_path / "m.json")]) == 0
    meta = json.loads((tmp_path / "m.json").read_text())
    assert sorted(meta["models"]["squares"]) == ["linear_infsa-seed1", "softmax-seed1"]
    assert "evidence_mass_accuracy" in meta["summary"]["squares"]["figures"]
    monkeypatch.setitem(morf_ceiling.N_IMAGES, "squares", 2)
    monkeypatch.setattr(morf_ceiling, "SEARCH", {"width": 1, "expand": 2})
    monkeypatch.setattr(morf_ceiling, "ALT_SEARCH", {"width": 2, "expand": 1})
    assert morf_ceiling.main([*common, "--parts", str(tmp_path / "ceiling"), "--out", str(tmp_path / "c.json")]) == 0
    assert json.loads((tmp_path / "c.json").read_text())["summary"]["squares"]["pairs"] > 0


def test_the_shipped_benchmarks_declare_their_classes():
    shipped = [b for b in BENCHMARKS.values() if b.generator is not SQUARES]  # squares: registered by this module
    assert all(len(b.classes) == 10 for b in shipped)
    assert {b.generator.name for b in shipped} == {"generate_cluttered", "generate_cued"}
