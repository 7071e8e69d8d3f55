"""Matched training of the three attention variants: same data stream, seed and recipe.

The variants differ only in ``ViTConfig.attention``. Training is epoch-resumable: after every
epoch the model, the AdamW state and the progress are written atomically to ``checkpoint/`` in
the output directory (safetensors + JSON, no pickle), and ``resume=True`` continues from there
with the same result as an uninterrupted run (data and shuffling are functions of (seed, epoch)).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_memory
from .distributed import Dist
from .io import atomic_write, read_json, write_json
from .preprocess import Preprocessing, preprocess
from .progress import progress
from .vit import WEIGHTS_FILE, ViTConfig, VisionTransformer, count_parameters, save_model
from .weights import file_sha256

__all__ = [
    "CARD_FILE",
    "TrainConfig",
    "TrainData",
    "accuracy",
    "cluttered_digits_data",
    "folder_data",
    "load_card",
    "predict",
    "train",
    "training_report",
]

log = logging.getLogger(__name__)

CARD_FILE = "card.json"
CHECKPOINT_DIR = "checkpoint"


@dataclass(frozen=True)
class TrainConfig:
    """The matched recipe. Only ``model.attention`` differs between the shipped models.

    Args:
        model: the architecture (attention variant included).
        epochs: passes, each over ``images_per_epoch`` freshly generated images.
        images_per_epoch: training images per epoch.
        batch_size: images per optimiser step.
        lr: peak AdamW learning rate (linear warm-up over ``warmup_epochs``, then cosine to 0).
        weight_decay: AdamW decay on weight matrices (not on biases, norms, embeddings, ρ).
        warmup_epochs: warm-up length in epochs (may be fractional).
        seed: seeds the initial weights and the shuffling (and the data stream unless
            ``data_seed`` is set).
        test_size: images in the held-out test split.
        label_smoothing: cross-entropy label smoothing.
        data_seed: seeds the stream of training images; ``None`` (default) uses ``seed``. Training
            seeds of one variant with a fixed ``data_seed`` differ in initial weights and data
            order only (``scripts/train_seeds.py`` does that).
    """

    model: ViTConfig = field(default_factory=ViTConfig)
    epochs: int = 20
    images_per_epoch: int = 20_000
    batch_size: int = 128
    lr: float = 2e-3
    weight_decay: float = 0.05
    warmup_epochs: float = 1.0
    seed: int = 0
    test_size: int = 2_000
    label_smoothing: float = 0.0
    data_seed: int | None = None

    def __post_init__(self) -> None:
        for name in ("epochs", "images_per_epoch", "batch_size", "test_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer")
        model = self.model
        for name in ("images_per_epoch", "test_size"):  # held at once: uint8 pixels + float32 model input
            check_memory(name, getattr(self, name), bytes_each=5 * model.img_size**2 * model.in_chans,
                         what=f"{model.img_size}x{model.img_size}x{model.in_chans} images as uint8 and float32")
        if not self.lr > 0:
            raise ValueError(f"lr={self.lr!r} must be positive")
        for name in ("seed", "data_seed"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name}={value!r} must be a non-negative integer")

    @property
    def stream_seed(self) -> int:
        """The seed of the training-image stream: ``data_seed``, or ``seed`` when that is ``None``."""
        return self.seed if self.data_seed is None else self.data_seed

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        data = dict(data)
        return cls(model=ViTConfig.from_dict(data.pop("model")), **data)


@dataclass
class TrainData:
    """A data source for :func:`train`, already in the model's input format.

    Attributes:
        epoch: ``epoch(index, n, seed) -> (images (n, C, S, S), labels (n,))``, the training
            images of one epoch (a pure function of its arguments).
        test: ``(images, labels)`` of the held-out split.
        description: JSON-able description stored in the card (name, settings, hash).
        in_chans, img_size, num_classes: what the model must accept.
        preprocessing: how the images were made model input; stored in the model's config so
            every entry point feeds the trained model the same way.
    """

    epoch: Callable[[int, int, int], tuple[Tensor, Tensor]]
    test: tuple[Tensor, Tensor]
    description: dict[str, Any]
    in_chans: int
    img_size: int
    num_classes: int
    preprocessing: Preprocessing


def cluttered_digits_data(test_size: int, *, benchmark: str = "cluttered-digits",
                          model_input: ViTConfig | None = None) -> TrainData:
    """A cluttered-digits benchmark (:data:`~infsa_viz.data.BENCHMARKS`): fresh images every
    epoch, the benchmark's fixed test split.

    Args:
        test_size: images in the held-out split.
        benchmark: a key of :data:`~infsa_viz.data.BENCHMARKS`.
        model_input: the config of a model to fine-tune: images become its input (size,
            channels, preprocessing) through :func:`~infsa_viz.preprocess.prepare`. Default: the
            benchmark's own gray input with its normalisation.
    """
    from .data import check_benchmark, cluttered_epoch, test_split

    spec = check_benchmark(benchmark)
    config = spec.config
    if model_input is None:
        model_input = ViTConfig(img_size=config.canvas_size, in_chans=1, preprocessing=spec.preprocessing)

    def epoch(index: int, n: int, seed: int) -> tuple[Tensor, Tensor]:
        sample = cluttered_epoch(index, n=n, seed=seed, config=config)
        return preprocess(model_input, sample.images), torch.as_tensor(sample.labels, dtype=torch.int64)

    test = test_split(test_size, benchmark=benchmark)
    return TrainData(
        epoch=epoch,
        test=(preprocess(model_input, test.images), torch.as_tensor(test.labels, dtype=torch.int64)),
        description={
            "name": benchmark,
            "settings": config.to_dict(),
            "settings_hash": config.settings_hash(),
            "train": "fresh images each epoch from MNIST train digits; image i of epoch e depends only on "
                     "(seed, e, i)",
            "test": f"test_split({test_size}): the first {test_size} images of the test split, seed "
                    f"{test.description['seed']}",
        },
        in_chans=model_input.in_chans,
        img_size=model_input.img_size,
        num_classes=10,
        preprocessing=model_input.preprocessing,
    )


def folder_data(root: Path, *, image_size: int, channels: int = 3, model_input: ViTConfig | None = None) -> TrainData:
    """An ImageNet-style folder ``root`` with ``train/`` and ``test/`` class sub-folders.

    Images are resized to ``image_size`` (stretched, ``resample="auto"``) and normalised by the
    per-channel mean and standard deviation of ``pixel / 255`` measured on the resized training
    images; that preprocessing is stored with the model. With ``model_input`` (the config of a
    model to fine-tune) the images become that model's input instead, its own preprocessing
    unchanged (``image_size`` and ``channels`` are then the model's).
    """
    from .data import FolderDataset

    splits = {}
    for split in ("train", "test"):
        if not (root / split).is_dir():
            raise ValueError(f"--data folder:{root} must contain a {split}/ folder of class sub-folders")
        splits[split] = FolderDataset(root / split).labelled()  # decode each image once
    if model_input is None:
        raw = ViTConfig(img_size=image_size, in_chans=channels, preprocessing=Preprocessing())
        pixels = preprocess(raw, splits["train"].images)  # (n, C, S, S) = pixel / 255
        mean = pixels.mean(dim=(0, 2, 3)).double()
        std = pixels.std(dim=(0, 2, 3)).double().clamp_min(1e-3)  # a constant channel is not divided by 0
        preprocessing = Preprocessing(mean=tuple(round(float(m), 6) for m in mean),
                                      std=tuple(round(float(s), 6) for s in std))
        model_input = raw.replace(preprocessing=preprocessing)
    image_size, channels, preprocessing = model_input.img_size, model_input.in_chans, model_input.preprocessing
    train_images = preprocess(model_input, splits["train"].images)
    train_labels = torch.as_tensor(splits["train"].labels, dtype=torch.int64)
    test_images = preprocess(model_input, splits["test"].images)
    classes = list(splits["train"].description["classes"])

    def epoch(index: int, n: int, seed: int) -> tuple[Tensor, Tensor]:
        return train_images, train_labels

    return TrainData(
        epoch=epoch,
        test=(test_images, torch.as_tensor(splits["test"].labels, dtype=torch.int64)),
        description={"name": "folder", "root": str(root), "classes": classes, "image_size": image_size,
                     "train_images": len(train_labels), "test_images": len(test_images),
                     "preprocessing": preprocessing.to_dict()},
        in_chans=channels,
        img_size=image_size,
        num_classes=max(len(classes), int(train_labels.max()) + 1),
        preprocessing=preprocessing,
    )


@torch.no_grad()
def predict(model: nn.Module, images: Tensor, *, batch_size: int = 256, desc: str | None = None) -> Tensor:
    """Class probabilities ``(B, classes)`` in evaluation mode, batched."""
    was_training = model.training
    model.eval()
    out = []
    for start in progress(range(0, len(images), batch_size), desc=desc, unit="batch"):
        out.append(torch.softmax(model(images[start : start + batch_size]).float(), dim=-1))
    model.train(was_training)
    return torch.cat(out)


def accuracy(model: nn.Module, images: Tensor, labels: Tensor, *, batch_size: int = 256) -> float:
    """Top-1 accuracy in [0, 1] as a Python float."""
    return float((predict(model, images, batch_size=batch_size).argmax(-1) == labels).float().mean())


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


def _save_checkpoint(out: Path, model: VisionTransformer, opt: torch.optim.Optimizer, state: dict[str, Any]) -> None:
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


def _load_checkpoint(out: Path, model: VisionTransformer, opt: torch.optim.Optimizer) -> dict[str, Any]:
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
    data = data or cluttered_digits_data(config.test_size)
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
        state = _load_checkpoint(out, model, opt)
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
            _save_checkpoint(out, model, opt, state)
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


def load_card(directory: str | Path) -> dict[str, Any]:
    """The ``card.json`` of a trained model directory (``ValueError`` if missing)."""
    return read_json(Path(directory) / CARD_FILE)


def training_report(model_dirs: list[str | Path], *, batch_size: int = 256) -> dict[str, Any]:
    """Re-evaluate trained models on their test split and collect their cards' figures.

    Each model is loaded from disk and scored on the cluttered-digits test split it was trained
    for (the card's ``test_size``), so the report checks the card rather than copying it.
    """
    from .data import BENCHMARKS
    from .vit import load_model

    rows = []
    test_cache: dict[tuple[str, int], tuple[Tensor, Tensor]] = {}
    for directory in model_dirs:
        model = load_model(directory)  # first: names a missing or damaged model before its card
        card = load_card(directory)
        benchmark = card.get("data", {}).get("name")
        if benchmark not in BENCHMARKS:
            raise ValueError(f"{directory}: training report supports cluttered-digits benchmarks only "
                             f"({list(BENCHMARKS)}), not {benchmark!r}")
        size = int(card["test_size"])
        if (benchmark, size) not in test_cache:
            test_cache[benchmark, size] = cluttered_digits_data(size, benchmark=benchmark).test
        images, labels = test_cache[benchmark, size]
        rows.append({
            "model": str(directory),
            "variant": card["variant"],
            "parameters": card["parameters"],
            "epochs": card["epochs"],
            "train_seconds": card["train_seconds"],
            "train_cpu_seconds": card.get("train_cpu_seconds"),
            "threads": card["threads"],
            "test_size": size,
            "test_accuracy": round(accuracy(model, images, labels, batch_size=batch_size), 5),
            "card_test_accuracy": card["test_accuracy"],
            "rho_init": card["rho_init"],
            "rho_final": model.rho_values(),
            "command": card.get("command"),
        })
    first = load_card(model_dirs[0]) if model_dirs else {}
    return {
        "protocol": {
            "metric": "top-1 accuracy on the cluttered-digits test split (largest digit's class)",
            "test_split": first.get("data", {}).get("test"),
            "data_settings_hash": first.get("data", {}).get("settings_hash"),
        },
        "results": rows,
    }
