"""The registry of generated data sources: a new kind of generator is one registration away from the
CLI, the evaluation and the app's class names."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np
import pytest
import torch

from infsa_viz.cli import main
from infsa_viz.data import BENCHMARKS, Benchmark, Generator, Scene, register_benchmark, test_split
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


@pytest.fixture
def squares(registries):
    return register_benchmark(Benchmark("squares", SquaresConfig(), 7, Preprocessing(mean=0.1, std=0.3),
                                        "toy: a bright square's quadrant", generator=SQUARES, classes=QUADRANTS))


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


def test_the_shipped_benchmarks_declare_their_classes():
    assert all(len(b.classes) == 10 for b in BENCHMARKS.values())
    assert {b.generator.name for b in BENCHMARKS.values()} == {"generate_cluttered", "generate_cued"}
