"""What the app tests run on: the shipped models (``models/*/`` with a config and weights), a
researcher's own two transformers models built here (:func:`build_own_models`), real backbones (a
DINOv2 with registers, a whole CLIP model with its tokenizer: ``backbones``), and the app's modules for
unit tests (``app``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from infsa_viz import VARIANTS

MODELS_DIR = Path(__file__).resolve().parents[2] / "models"


class ShippedModel(NamedTuple):
    path: str
    name: str
    variant: str

    @property
    def label(self) -> str:
        """The app's caption of the model's overlay."""
        return f"{self.variant} · {self.name}"


@pytest.fixture(scope="session")
def shipped_models() -> list[ShippedModel]:
    """The models under ``models/`` in the app's order (variant, then name); skips without any."""
    found = [ShippedModel(str(c.parent.resolve()), c.parent.name, json.loads(c.read_text())["attention"])
             for c in MODELS_DIR.glob("*/config.json") if (c.parent / "model.safetensors").is_file()]
    if not found:
        pytest.skip(f"no trained model under {MODELS_DIR} yet")
    order = {v: i for i, v in enumerate(VARIANTS)}
    return sorted(found, key=lambda m: (order.get(m.variant, len(order)), m.name))


#: Class names of the photo models built for the tests (a user's own, not digits).
PHOTO_CLASSES = ("person", "bicycle", "car", "dog", "cat", "bird")
FRUIT_CLASSES = ("apple", "pear", "plum")
IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


class OwnModels(NamedTuple):
    root: Path  # holds both
    vit: Path  # 6 classes, 224 px, the usual ImageNet processor: shortest edge 256, centre crop 224
    deit: Path  # DeiT with distillation token and head, 64 px (centre crop 64 of 73)


@pytest.fixture(scope="session")
def own_models(tmp_path_factory) -> OwnModels:
    """:func:`build_own_models` once per session (skipped without transformers)."""
    pytest.importorskip("transformers")
    return build_own_models(tmp_path_factory.mktemp("own-models"))


def build_own_models(root: Path) -> OwnModels:
    """Two transformers image classifiers as a researcher brings them (random weights,
    ``save_pretrained``, a preprocessor config; nothing downloaded), under ``root``."""
    import torch
    import transformers

    small = dict(num_channels=3, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                 attn_implementation="eager")
    torch.manual_seed(0)
    for directory, config_class, architecture, names, size, processor in (
        ("photo-vit6", transformers.ViTConfig, "ViTForImageClassification", PHOTO_CLASSES, 224,
         {"image_processor_type": "ViTImageProcessor", "do_resize": True, "size": {"shortest_edge": 256},
          "resample": 3, "do_center_crop": True, "crop_size": {"height": 224, "width": 224}}),
        ("fruit-deit64", transformers.DeiTConfig, "DeiTForImageClassificationWithTeacher", FRUIT_CLASSES, 64,
         {"image_processor_type": "DeiTImageProcessor", "do_resize": True, "size": {"height": 73, "width": 73},
          "resample": 3, "do_center_crop": True, "crop_size": {"height": 64, "width": 64}}),
    ):
        config = config_class(image_size=size, patch_size=16 if size == 224 else 8, **small,
                              id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)})
        model = getattr(transformers, architecture)(config).eval()
        with torch.no_grad():  # spread the logits, so predictions differ from image to image
            for p in model.parameters():
                p.mul_(4.0)
        model.save_pretrained(root / directory)
        (root / directory / "preprocessor_config.json").write_text(json.dumps({
            **processor, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
            "image_mean": IMAGENET_MEAN, "image_std": IMAGENET_STD}))
    return OwnModels(root, root / "photo-vit6", root / "fruit-deit64")


@pytest.fixture(scope="session")
def backbones(tmp_path_factory):
    """A folder holding ``dino-registers`` (4 registers, 2 × 2 patches, 5 classes) and ``clip`` (a whole
    CLIP model and its tokenizer)."""
    pytest.importorskip("transformers")
    from tests.formats.test_backbones import build_backbone
    from tests.test_zero_shot import build_clip

    root = tmp_path_factory.mktemp("backbones")
    build_backbone(root / "dino-registers", "dinov2-registers-classifier")
    build_clip(root / "clip")
    return root


APP_DIR = Path(__file__).resolve().parents[2] / "app"
#: The app's modules a test may import (they import each other as siblings, as Streamlit runs them).
APP_MODULES = ("targets", "safe", "catalog", "access", "inputs", "compute", "draw", "exports", "urlstate",
               "options", "tokens", "warmup", "charts", "plugins", "intervene", "slicing", "randomise", "zeroshot")


@pytest.fixture(scope="module")
def app():
    """The app's modules (``app.catalog``, ``app.draw``, …) imported with ``app/`` on the path for
    this test module only; the app sets one intra-op thread for the process, so the other tests
    get theirs back afterwards."""
    import importlib
    import types

    import torch

    threads = torch.get_num_threads()
    before = {name: sys.modules.pop(name) for name in (*APP_MODULES, "sidebar") if name in sys.modules}
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(APP_DIR))
        try:
            yield types.SimpleNamespace(**{name: importlib.import_module(name) for name in APP_MODULES})
        finally:  # the app's own imports (AppTest runs it in this process) come back as they were
            for name in (*APP_MODULES, "sidebar"):
                sys.modules.pop(name, None)
            sys.modules.update(before)
            torch.set_num_threads(threads)
