"""The epoch checkpoint that makes training resumable: model, AdamW state and progress.

After every epoch :func:`~infsa_viz.train.loop.train` writes ``checkpoint/`` in its output directory
atomically (``state.safetensors`` + ``progress.json``, no pickle); resuming reads it back, so a
resumed run gives the same result as an uninterrupted one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ..io import atomic_write, read_json, write_json
from ..model.vit import VisionTransformer

__all__ = ["CHECKPOINT_DIR", "load_checkpoint", "save_checkpoint"]

CHECKPOINT_DIR = "checkpoint"


def save_checkpoint(out: Path, model: VisionTransformer, opt: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """Write the model, the AdamW moments and steps, and ``state`` (epoch, history, ...) to ``out/checkpoint/``."""
    from safetensors.torch import save

    names = {id(p): n for n, p in model.named_parameters()}
    tensors: dict[str, Tensor] = {f"model.{k}": v.detach().contiguous() for k, v in model.state_dict().items()}
    steps: dict[str, float] = {}
    for group in opt.param_groups:
        for p in group["params"]:
            s = opt.state.get(p)
            if s:
                name = names[id(p)]
                tensors[f"exp_avg.{name}"] = s["exp_avg"].contiguous()
                tensors[f"exp_avg_sq.{name}"] = s["exp_avg_sq"].contiguous()
                steps[name] = float(s["step"])
    ckpt = out / CHECKPOINT_DIR
    ckpt.mkdir(parents=True, exist_ok=True)
    atomic_write(ckpt / "state.safetensors", save(tensors))
    write_json(ckpt / "progress.json", {**state, "adam_steps": steps})


def load_checkpoint(out: Path, model: VisionTransformer, opt: torch.optim.Optimizer) -> dict[str, Any]:
    """Load ``out/checkpoint/`` into ``model`` and ``opt``; returns the saved progress state."""
    from safetensors.torch import load_file

    ckpt = out / CHECKPOINT_DIR
    state = read_json(ckpt / "progress.json")
    tensors = load_file(str(ckpt / "state.safetensors"))
    model.load_state_dict({k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")})
    params = dict(model.named_parameters())
    for name, step in state.pop("adam_steps").items():
        opt.state[params[name]] = {
            "step": torch.tensor(step),
            "exp_avg": tensors[f"exp_avg.{name}"],
            "exp_avg_sq": tensors[f"exp_avg_sq.{name}"],
        }
    return state
