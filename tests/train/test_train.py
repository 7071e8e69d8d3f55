"""Training: the CLI smoke run, model card, resume == uninterrupted, rho learns."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
import torch
from torch.testing import assert_close

from infsa_viz.cli import main
from infsa_viz.formats import load_model
from infsa_viz.model import ViTConfig
from infsa_viz.preprocess import Preprocessing
from infsa_viz.train import TrainConfig, TrainData, train, training_report

SMALL = dict(img_size=48, patch_size=8, embed_dim=16, depth=1, num_heads=2)


def synthetic_data(fail_at_epoch: int | None = None) -> TrainData:
    """Two classes: bright left half vs bright right half, plus noise."""

    def make(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        g = torch.Generator().manual_seed(seed)
        labels = torch.randint(0, 2, (n,), generator=g)
        images = torch.randn(n, 1, 48, 48, generator=g) * 0.3
        images[labels == 0, :, :, :24] += 1.0
        images[labels == 1, :, :, 24:] += 1.0
        return images, labels

    def epoch(index: int, n: int, seed: int):
        if index == fail_at_epoch:
            raise KeyboardInterrupt
        return make(n, seed * 100 + index)

    return TrainData(epoch=epoch, test=make(64, 999), description={"name": "synthetic"},
                     in_chans=1, img_size=48, num_classes=2, preprocessing=Preprocessing())


def recipe(variant: str, epochs: int = 2) -> TrainConfig:
    return TrainConfig(model=ViTConfig(attention=variant, num_classes=2, **SMALL), epochs=epochs,
                       images_per_epoch=128, batch_size=16, lr=3e-3, test_size=64, warmup_epochs=0.25)


def test_cli_smoke_run_writes_a_model_card(tmp_path, capsys):
    out = tmp_path / "m"
    code = main(["train", "--variant", "linear_infsa", "--out", str(out), "--epochs", "1",
                 "--images-per-epoch", "64", "--test-size", "32", "--batch-size", "32", "--threads", "1"])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["card.json", "config.json", "model.safetensors"]
    card = json.loads((out / "card.json").read_text())
    for key in ("variant", "parameters", "command", "seed", "epochs", "train_seconds", "threads",
                "test_accuracy", "rho_init", "rho_final", "data"):
        assert key in card
    assert card["variant"] == "linear_infsa" and card["data"]["name"] == "cluttered-digits"
    assert len(card["data"]["settings_hash"]) == 16
    assert card["command"].startswith("infsa-viz train --variant linear_infsa")
    assert load_model(out).config.attention == "linear_infsa"
    # the report re-evaluates the saved model and agrees with the card
    report = training_report([out])
    assert report["results"][0]["test_accuracy"] == pytest.approx(card["test_accuracy"], abs=1e-6)
    # a second run into the same directory is refused, not overwritten
    assert main(["train", "--variant", "softmax", "--out", str(out), "--epochs", "1"]) == 2
    err = capsys.readouterr().err
    assert "already holds card.json, config.json, model.safetensors" in err and "--overwrite" in err


@pytest.mark.parametrize("variant", ["pure_infsa", "linear_infsa"])
def test_rho_is_learned_and_reported(tmp_path, variant):
    card = train(recipe(variant, epochs=4), tmp_path, data=synthetic_data())
    assert card["rho_init"] == [[0.5, 0.5]]
    assert card["rho_final"] != card["rho_init"]
    assert card["test_accuracy"] > 0.9  # the synthetic task is easy


def test_resume_after_interruption_equals_an_uninterrupted_run(tmp_path):
    straight = tmp_path / "straight"
    train(recipe("pure_infsa"), straight, data=synthetic_data())
    broken = tmp_path / "broken"
    with pytest.raises(KeyboardInterrupt):
        train(recipe("pure_infsa"), broken, data=synthetic_data(fail_at_epoch=1))
    assert (broken / "checkpoint" / "progress.json").is_file()
    assert not (broken / "card.json").exists()
    with pytest.raises(ValueError, match="use --resume"):
        train(recipe("pure_infsa"), broken, data=synthetic_data())
    train(recipe("pure_infsa"), broken, data=synthetic_data(), resume=True)
    a, b = load_model(straight), load_model(broken)
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values()):
        assert_close(p, q, msg=name)
    with pytest.raises(ValueError, match="no checkpoint"):
        train(recipe("pure_infsa"), tmp_path / "empty", data=synthetic_data(), resume=True)


def test_variants_share_the_recipe_and_initial_weights_except_attention():
    """Matched recipe: same seed → identical non-attention initial weights across variants."""
    torch.manual_seed(0)
    from infsa_viz.model import VisionTransformer

    states = []
    for variant in ("softmax", "pure_infsa"):
        torch.manual_seed(0)
        states.append(VisionTransformer(ViTConfig(attention=variant, **SMALL)).state_dict())
    for name, tensor in states[0].items():
        assert_close(tensor, states[1][name])


def test_folder_data_trains(tmp_path):
    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        for cls, side in (("left", 0), ("right", 1)):
            folder = tmp_path / "data" / split / cls
            folder.mkdir(parents=True)
            for i in range(6):
                img = (rng.random((32, 32, 3)) * 60).astype(np.uint8)
                img[:, side * 16 : side * 16 + 16] += 150
                cv2.imwrite(str(folder / f"{i}.png"), img)
    out = tmp_path / "m"
    code = main(["train", "--variant", "softmax", "--out", str(out), "--data", f"folder:{tmp_path / 'data'}",
                 "--image-size", "32", "--epochs", "1", "--batch-size", "4"])
    assert code == 0
    config = load_model(out).config
    assert (config.img_size, config.in_chans, config.num_classes) == (32, 3, 2)
    assert main(["train", "--variant", "softmax", "--out", str(tmp_path / "x"), "--data", "folder:/nope"]) == 2
    assert main(["train", "--variant", "softmax", "--out", str(tmp_path / "x"), "--data", "imagenet"]) == 2


@pytest.mark.slow
def test_torchrun_ddp_training_matches_single_process(tmp_path):
    """2 gloo ranks split each batch: same global batch, so nearly the same weights."""
    import os
    import subprocess
    import sys

    argv = ["train", "--variant", "pure_infsa", "--epochs", "1", "--images-per-epoch", "128",
            "--test-size", "32", "--batch-size", "32"]
    assert main([*argv, "--out", str(tmp_path / "single")]) == 0
    env = {**os.environ, "OMP_NUM_THREADS": "1", "INFSA_VIZ_PROGRESS": "0"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                           "-m", "infsa_viz.cli", *argv, "--out", str(tmp_path / "ddp")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    card = json.loads((tmp_path / "ddp" / "card.json").read_text())
    assert card["world_size"] == 2
    a, b = load_model(tmp_path / "single"), load_model(tmp_path / "ddp")
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values()):
        assert_close(p, q, atol=2e-4, rtol=1e-3, msg=name)


def test_fine_tuning_starts_from_the_initial_model_with_a_fresh_head_for_new_classes(tmp_path):
    from infsa_viz import load_model as load_any
    from infsa_viz.formats import swap_attention

    source = ViTConfig(attention="softmax", num_classes=5, class_names=tuple("abcde"), preprocessing=Preprocessing(),
                       **SMALL)
    init = swap_attention(VisionTransformerOf(source), "pure_infsa", rho_init=0.3)
    config = TrainConfig(model=init.config, epochs=1, images_per_epoch=32, batch_size=16, lr=1e-12, test_size=64)
    card = train(config, tmp_path / "m", data=synthetic_data(), init=init)
    tuned = load_any(tmp_path / "m")
    assert tuned.config.num_classes == 2 and tuned.config.class_names is None  # synthetic data names no class
    assert card["init"]["converted_from"] == "softmax" and source.attention == "softmax"
    for name, tensor in init.state_dict().items():
        if not name.startswith("head."):  # lr 1e-12: every shared weight is still the initial one
            assert_close(tuned.state_dict()[name], tensor, atol=1e-8, rtol=0)
    assert tuned.rho_values()[0] == pytest.approx([0.3, 0.3], abs=1e-6)
    wrong = TrainConfig(model=init.config.replace(embed_dim=32), epochs=1, images_per_epoch=32, batch_size=16)
    with pytest.raises(ValueError, match="init"):
        train(wrong, tmp_path / "w", data=synthetic_data(), init=init)


def VisionTransformerOf(config):
    from infsa_viz import VisionTransformer

    torch.manual_seed(1)
    return VisionTransformer(config).eval()


def test_cli_fine_tunes_a_transformers_vit_swapped_to_pure_infsa(tmp_path):
    transformers = pytest.importorskip("transformers")
    config = transformers.ViTConfig(image_size=32, patch_size=8, hidden_size=16, num_hidden_layers=1,
                                    num_attention_heads=2, intermediate_size=32)
    transformers.ViTForImageClassification(config).save_pretrained(tmp_path / "hf")
    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        for cls in ("left", "right"):
            (tmp_path / "data" / split / cls).mkdir(parents=True)
            for i in range(4):
                cv2.imwrite(str(tmp_path / "data" / split / cls / f"{i}.png"),
                            rng.integers(0, 256, (40, 50, 3), dtype=np.uint8))
    out = tmp_path / "tuned"
    assert main(["train", "--init", f"{tmp_path / 'hf'}?convert_to=pure_infsa", "--out", str(out), "--data",
                 f"folder:{tmp_path / 'data'}", "--epochs", "1", "--batch-size", "4"]) == 0
    tuned = load_model(out).config
    assert (tuned.attention, tuned.num_classes, tuned.class_names, tuned.norm_eps) == (
        "pure_infsa", 2, ("left", "right"), 1e-12)
    assert json.loads((out / "card.json").read_text())["init"]["format"] == "transformers"
    assert main(["train", "--out", str(tmp_path / "x")]) == 2


def test_a_fixed_data_seed_leaves_only_init_and_order_to_the_seed(tmp_path):
    """Seeds of one variant with ``data_seed`` fixed see the same images; weights start apart."""
    seen: list[int] = []
    base = synthetic_data()

    def epoch(index: int, n: int, seed: int):
        seen.append(seed)
        return base.epoch(index, n, seed)

    data = TrainData(epoch=epoch, test=base.test, description=base.description, in_chans=1, img_size=48,
                     num_classes=2, preprocessing=Preprocessing())
    inits = []
    for seed in (1, 2):
        config = TrainConfig(**{**recipe("softmax", epochs=1).to_dict(), "model": recipe("softmax").model,
                                "seed": seed, "data_seed": 7})
        torch.manual_seed(seed)
        from infsa_viz.model import VisionTransformer

        inits.append(VisionTransformer(config.model).state_dict()["head.weight"].clone())
        card = train(config, tmp_path / f"s{seed}", data=data)
        assert card["recipe"]["data_seed"] == 7 and card["seed"] == seed
    assert seen == [7, 7]
    assert not torch.equal(inits[0], inits[1])
    assert TrainConfig().stream_seed == 0 and TrainConfig(seed=3).stream_seed == 3
    with pytest.raises(ValueError, match="data_seed"):
        TrainConfig(data_seed=-1)
