"""Matched training of the three attention variants: same data stream, seed and recipe.

The variants differ only in ``ViTConfig.attention``. Training is epoch-resumable: after every
epoch the model, the AdamW state and the progress are written atomically to ``checkpoint/`` in
the output directory (safetensors + JSON, no pickle), and ``resume=True`` continues from there
with the same result as an uninterrupted run (data and shuffling are functions of (seed, epoch)).

This module holds the loop, :func:`train`. The recipe is :class:`~infsa_viz.train.recipe.TrainConfig`,
the data sources :mod:`infsa_viz.train.data`, the checkpoint :mod:`infsa_viz.train.checkpoint`, and
scoring, cards and the accuracy report :mod:`infsa_viz.train.report`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import platform
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..distributed import Dist
from ..io import write_json
from ..model.files import WEIGHTS_FILE, save_model
from ..model.vit import VisionTransformer, count_parameters
from ..progress import progress
from ..weights import file_sha256
from .checkpoint import CHECKPOINT_DIR, load_checkpoint, save_checkpoint
from .data import TrainData, benchmark_data
from .recipe import TrainConfig
from .report import CARD_FILE, accuracy

__all__ = ["train"]

log = logging.getLogger(__name__)


def _param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (decay if param.dim() >= 2 and "pos_embed" not in name else no_decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _lr_at(step: int, total: int, warmup: int, peak: float) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress_ = (step - warmup) / max(1, total - warmup)
    return 0.5 * peak * (1.0 + math.cos(math.pi * min(1.0, progress_)))


def train(
    config: TrainConfig,
    out: str | Path,
    *,
    data: TrainData | None = None,
    resume: bool = False,
    command: str | None = None,
    dist: Dist | None = None,
    init: VisionTransformer | None = None,
) -> dict[str, Any]:
    """Train one model and write the model card directory ``out``.

    With ``init`` (a model from :func:`infsa_viz.load_model`, e.g. a transformers ViT whose
    attention was swapped to an InfSA variant) training fine-tunes it: ``config.model`` must be
    ``init.config`` up to the class count, the data must be in ``init``'s input format (see
    ``model_input`` of :func:`folder_data`), and a head for a different class count starts fresh
    (seeded); every other weight, ``ρ`` included, starts from ``init``.

    ``out`` receives ``config.json``, ``model.safetensors``, ``card.json`` (and ``checkpoint/``
    while training; removed at the end). Returns the card.

    Under torchrun (``dist`` with several ranks) the model is wrapped in
    ``DistributedDataParallel`` and every optimiser step's batch of ``batch_size`` images is split
    across the ranks, so the global batch, the data stream and the schedule are those of the
    single-process recipe (gradients are averaged over ranks; with equal shares that is the
    full-batch mean). Only rank 0 writes files.

    Raises:
        ValueError: if ``out`` already holds a finished or partial run and ``resume`` is false,
            or if ``resume`` is true but there is nothing (compatible) to resume.
    """
    out = Path(out)
    dist = dist or Dist()
    if config.batch_size % dist.world_size:
        raise ValueError(f"batch_size={config.batch_size} must be divisible by the {dist.world_size} ranks")
    data = data or benchmark_data(config.test_size)
    names = config.model.class_names
    if init is not None:  # the labels are the data's classes now: their names, else the initial model's
        classes = data.description.get("classes")
        names = tuple(classes) if classes and len(classes) == data.num_classes else (
            init.config.class_names if init.config.num_classes == data.num_classes else None)
    elif names is not None and len(names) != data.num_classes:
        names = None
    fitted = config.model.replace(in_chans=data.in_chans, img_size=data.img_size, num_classes=data.num_classes,
                                  preprocessing=data.preprocessing, class_names=names)
    if init is not None and fitted != init.config.replace(num_classes=data.num_classes, class_names=names):
        raise ValueError("init: the recipe's model config differs from the initial model's; build the "
                         "recipe from init.config (and the data in its input format)")
    if fitted != config.model:
        config = dataclasses.replace(config, model=fitted)
    has_ckpt = (out / CHECKPOINT_DIR / "progress.json").is_file()
    if resume and not has_ckpt:
        raise ValueError(f"--resume: {out} holds no checkpoint to resume")
    if not resume and (has_ckpt or (out / CARD_FILE).is_file()):
        raise ValueError(f"--out {out} already holds a training run; use --resume or another directory")

    torch.manual_seed(config.seed)
    model = VisionTransformer(config.model)
    if init is not None:
        start = {k: v for k, v in init.state_dict().items()
                 if init.config.num_classes == config.model.num_classes or not k.startswith(("head.", "head_dist."))}
        model.load_state_dict(start, strict=False)
    model.set_fused_attention(False)  # same function; SDPA's CPU backward is much slower here
    opt = torch.optim.AdamW(_param_groups(model, config.weight_decay), lr=config.lr, betas=(0.9, 0.999))
    steps_per_epoch = math.ceil(config.images_per_epoch / config.batch_size)
    total_steps = steps_per_epoch * config.epochs
    warmup = max(1, int(config.warmup_epochs * steps_per_epoch))
    rho_init = model.rho_values()
    state: dict[str, Any] = {"epoch": 0, "history": [], "seconds": 0.0, "cpu_seconds": 0.0, "rho_init": rho_init}
    if resume:
        state = load_checkpoint(out, model, opt)
        if TrainConfig.from_dict(state["config"]) != config:
            raise ValueError(f"--resume: the checkpoint in {out} was made with a different recipe")
        log.info("resuming %s after epoch %d", out, state["epoch"])
    state["config"] = config.to_dict()
    net: nn.Module = model
    if dist.enabled:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model)

    test_images, test_labels = data.test
    for epoch in range(state["epoch"], config.epochs):
        t0, c0 = time.perf_counter(), time.process_time()
        images, labels = data.epoch(epoch, config.images_per_epoch, config.stream_seed)
        order = torch.randperm(len(images), generator=torch.Generator().manual_seed(config.seed * 1000 + epoch))
        model.train()
        loss_sum, correct, seen = 0.0, 0, 0
        desc = f"{config.model.attention} epoch {epoch + 1}/{config.epochs}" if dist.is_main else None
        bar = progress(range(steps_per_epoch), desc=desc, unit="step")
        for i in bar:
            idx = order[i * config.batch_size : (i + 1) * config.batch_size][dist.rank :: dist.world_size]
            for group in opt.param_groups:
                group["lr"] = _lr_at(epoch * steps_per_epoch + i, total_steps, warmup, config.lr)
            logits = net(images[idx])
            loss = F.cross_entropy(logits, labels[idx], label_smoothing=config.label_smoothing)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            loss_sum += float(loss.detach()) * len(idx)
            correct += int((logits.argmax(-1) == labels[idx]).sum())
            seen += len(idx)
        seconds = time.perf_counter() - t0
        cpu_seconds = time.process_time() - c0
        test_acc = accuracy(model, test_images, test_labels)
        state["history"].append({
            "epoch": epoch + 1,
            "train_loss": round(loss_sum / seen, 5),  # this rank's share under torchrun
            "train_accuracy": round(correct / seen, 5),
            "test_accuracy": round(test_acc, 5),
            "seconds": round(seconds, 2),
            "cpu_seconds": round(cpu_seconds, 2),
            "rho": model.rho_values(),
        })
        state["seconds"] += seconds
        state["cpu_seconds"] = state.get("cpu_seconds", 0.0) + cpu_seconds
        state["epoch"] = epoch + 1
        log.info("epoch %d: loss %.4f, test accuracy %.4f", epoch + 1, loss_sum / seen, test_acc)
        if dist.is_main:
            save_checkpoint(out, model, opt, state)
        dist.barrier()

    model.set_fused_attention(True)
    final_acc = accuracy(model, test_images, test_labels)
    if dist.is_main:
        save_model(model, out)
    card = {
        "variant": config.model.attention,
        "parameters": count_parameters(model),
        "command": command,
        "recipe": config.to_dict(),
        "init": None if init is None else (init.config.source or {"format": "infsa-viz"}),
        "seed": config.seed,
        "epochs": config.epochs,
        "train_seconds": round(state["seconds"], 1),
        # CPU time of all threads: on a shared machine, cpu_seconds / threads is the wall time
        # the run would take with the cores to itself.
        "train_cpu_seconds": round(state.get("cpu_seconds", 0.0), 1),
        "threads": torch.get_num_threads(),
        "world_size": dist.world_size,
        "test_accuracy": round(final_acc, 5),
        "test_size": len(test_labels),
        "weights_sha256": file_sha256(out / WEIGHTS_FILE) if dist.is_main else None,
        "rho_init": state["rho_init"],
        "rho_final": model.rho_values(),
        "history": state["history"],
        "data": data.description,
        "environment": {"torch": torch.__version__, "python": platform.python_version(),
                        "machine": platform.machine()},
    }
    if not dist.is_main:
        return card
    write_json(out / CARD_FILE, card)
    for leftover in (out / CHECKPOINT_DIR).glob("*"):
        leftover.unlink()
    (out / CHECKPOINT_DIR).rmdir()
    return card
