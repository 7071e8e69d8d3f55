"""The shipped models the app tests run on (``models/*/`` with a config and weights)."""

from __future__ import annotations

import json
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
