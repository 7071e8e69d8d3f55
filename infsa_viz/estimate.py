"""Memory and time of a job, estimated before it starts: the one home of the estimate logic.

A map method (:meth:`MapMethod.estimate <infsa_viz.maps.MapMethod.estimate>`) and a metric
(:meth:`Metric.estimate <infsa_viz.metrics.registry.Metric.estimate>`) state what one call holds at
its peak and how much work it does, as a function of the :class:`Workload` — images per call ``B``,
tokens ``N``, layers ``L``, heads ``H``, width ``C``, MLP width ``M``, input pixels — and of their
own options (steps, batch sizes, solvers): an :class:`Estimate`. :func:`check_estimate` compares it
with the memory this process can still get (:func:`available_memory`) and with the method's own
bound on work, and refuses with one line naming the estimate and what lowers it, before anything
is allocated. :func:`largest_batch` finds the most images per call that fit (``--chunk``).

Time is the declared model passes times the seconds of one pass at the batch it runs at, measured on this
machine just before the job (:func:`seconds_per_pass`: timed inference forwards of 1 and 16 images at
the model's own input size); :func:`~infsa_viz.evaluation.budget.evaluation_estimate` adds an evaluation's passes up and
prints before any image is scored. ``python -m benchmarks backbones`` compares it with the run.

The figures count the dominant tensors a call holds at once: an estimate of its peak, not a
measurement. ``python -m benchmarks reliability`` measures the peak each N² map method really adds
beside its estimate (``estimates`` in ``metrics/reliability.json``: about 0.9 to 2.6 times it at
1,025 tokens), so a refusal names a job that cannot fit, and one that passes may need up to about
2.6 times its estimate.
"""

from __future__ import annotations

import dataclasses
import os
import resource
import time
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["MAX_FLOPS_PER_IMAGE", "TILE_BYTES", "Estimate", "Workload", "available_memory", "check_estimate",
           "PassTime", "count_option", "format_bytes", "format_seconds", "largest_batch", "seconds_per_pass"]

#: What a tiled (matrix-free) kernel holds beyond its vectors: one tile of 2²⁰ float32 numbers.
TILE_BYTES = 4 << 20
#: The most work one image may ask of a map or a metric, in multiply-adds of its model passes
#: (``forwards`` × one forward): about ten minutes of a 2-core CPU. Occlusion of a 65,537-token
#: model (65,537 forwards of 2.7e11 each) is refused; 1.2 million forwards of the shipped 37-token
#: models pass.
MAX_FLOPS_PER_IMAGE = 1e13
_F32 = 4


@dataclass(frozen=True)
class Workload:
    """The sizes a call's memory and time depend on (one model, one batch of inputs).

    Attributes:
        batch: images per call ``B``.
        tokens: tokens per image ``N`` (prefix tokens included).
        layers: attention layers ``L``.
        heads: heads per layer ``H``.
        width: token width ``C``.
        mlp: MLP hidden width ``M``.
        pixels: numbers in one model input ``C_in · H_img · W_img``.
        patches: patches per image.
        variant: the attention variant (a key of ``ATTENTION_REGISTRY``).
    """

    batch: int
    tokens: int
    layers: int
    heads: int
    width: int
    mlp: int
    pixels: int
    patches: int
    variant: str = "softmax"

    @classmethod
    def of(cls, model: Any, images: Any = None, *, batch: int = 1) -> Workload | None:
        """The workload of ``model`` on ``images`` ``(B, C, H, W)`` (default: ``batch`` images at the
        model's own size); ``None`` for a model without a :class:`~infsa_viz.model.config.ViTConfig`."""
        config = getattr(model, "config", None)
        if not all(hasattr(config, k) for k in ("patch_size", "img_size", "depth", "num_heads", "embed_dim")):
            return None
        if images is not None and getattr(images, "dim", lambda: 0)() == 4:
            batch, channels, height, width = (int(s) for s in images.shape)
            return cls.for_config(config, batch=batch, channels=channels, height=height, width=width)
        return cls.for_config(config, batch=batch)

    @classmethod
    def for_config(cls, config: Any, *, batch: int = 1, channels: int | None = None, height: int | None = None,
                   width: int | None = None) -> Workload:
        """The workload of a :class:`~infsa_viz.model.config.ViTConfig` on ``batch`` inputs (default: its own size)."""
        channels = config.in_chans if channels is None else channels
        height = config.img_size if height is None else height
        width = config.img_size if width is None else width
        p = config.patch_size
        patches = (height // p) * (width // p)
        return cls(batch=max(int(batch), 1), tokens=config.num_prefix_tokens + patches, layers=config.depth,
                   heads=config.num_heads, width=config.embed_dim, mlp=round(config.embed_dim * config.mlp_ratio),
                   pixels=channels * height * width, patches=patches, variant=config.attention)

    def with_batch(self, batch: int) -> Workload:
        return dataclasses.replace(self, batch=max(int(batch), 1))

    # ---------------------------------------------------------------- the terms, in bytes
    def square(self, count: float = 1.0, *, heads: bool = True, itemsize: int = _F32) -> float:
        """``count`` dense ``(B, H, N, N)`` matrices (``(B, N, N)`` with ``heads=False``)."""
        return count * itemsize * self.batch * (self.heads if heads else 1) * float(self.tokens) ** 2

    def vectors(self, width: float, count: float = 1.0) -> float:
        """``count`` ``(B, N, width)`` float32 tensors."""
        return count * _F32 * self.batch * self.tokens * width

    def attention_buffer(self, *, explicit: bool = False) -> float:
        """What one attention layer holds beyond its tokens: a ``(B, H, N, N)`` matrix where it is formed
        (``explicit``: the gradient methods' explicit attention; pure InfSA's dense path, ``N ≤``
        :data:`~infsa_viz.model.attention.BLOCKWISE_MIN_TOKENS`), one tile otherwise (fused softmax,
        blockwise pure InfSA, Linear-InfSA)."""
        from .model.attention import BLOCKWISE_MIN_TOKENS

        dense = self.variant != "linear_infsa" and (
            explicit or (self.variant == "pure_infsa" and self.tokens <= BLOCKWISE_MIN_TOKENS))
        return self.square() if dense else float(TILE_BYTES)

    def forward(self, *, grad: bool = False, explicit: bool = False) -> float:
        """One forward (``grad``: and what autograd keeps of every layer for the backward)."""
        inputs = _F32 * self.batch * self.pixels
        block = self.vectors(4 * self.width + self.mlp) + self.attention_buffer(explicit=explicit)
        if not grad:
            return inputs + block
        kept = self.vectors(12 * self.width + 4 * self.mlp) + self.attention_buffer(explicit=explicit)
        return 2 * inputs + self.layers * kept + block

    def capture(self) -> float:
        """The recorded ``q`` and ``k`` of every layer (``2 · L · B · N · C``)."""
        return self.layers * self.vectors(2 * self.width)

    def forward_flops(self) -> float:
        """Multiply-adds of one forward of the batch."""
        dense = self.batch * self.tokens * (4 * self.width ** 2 + 2 * self.width * self.mlp)
        attention = (3.0 * self.batch * self.tokens * self.width if self.variant == "linear_infsa"
                     else 2.0 * self.batch * float(self.tokens) ** 2 * self.width)
        return self.layers * (dense + attention)


@dataclass(frozen=True)
class Estimate:
    """What one call holds at its peak and how much work it does.

    Attributes:
        bytes: the memory it holds at once (its dominant tensors).
        what: those tensors, in words.
        forwards: model passes per image (a forward, or a forward and a backward): its time.
        lower: how to lower it beyond fewer images per call (a method option, a smaller input);
            ``""`` when only fewer images help.
        work: method-specific work of the call beyond its forwards (e.g. max-flow problems), or ``None``.
        limit: the method's bound on ``work`` (a call above it is refused), or ``None``.
        limit_what: the bound, in words (unit and roughly how long it takes).
    """

    bytes: float
    what: str
    forwards: float = 1.0
    lower: str = ""
    work: float | None = None
    limit: float | None = None
    limit_what: str = ""


def count_option(options: dict[str, Any], name: str, default: int) -> int:
    """``options[name]`` when it is a positive integer, else ``default`` (an invalid value is refused
    with its own message by the method that reads it, after the estimate)."""
    value = options.get(name, default)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else default


def format_bytes(n: float) -> str:
    """``n`` bytes as GB (10⁹) with three significant digits, or MB below 0.1 GB."""
    return f"{n / 1e9:,.3g} GB" if n >= 1e8 else f"{n / 1e6:,.3g} MB"


def format_seconds(seconds: float) -> str:
    """``seconds`` as ``"42 s"``, ``"3 min 20 s"`` or ``"1 h 05 min"``."""
    seconds = max(float(seconds), 0.0)
    if seconds < 60:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


@dataclass(frozen=True)
class PassTime:
    """Seconds of a model's inference forward: ``fixed + per_image · b`` for a call on ``b`` images.

    A small model pays mostly per call (a 64-wide ViT at 197 tokens: about 30 times more per image at
    batch 1 than at batch 256), a ViT-B mostly per image, so the batch a pass runs at matters.
    """

    fixed: float
    per_image: float

    def per_pass(self, batch: float) -> float:
        """Seconds per image of a pass made in calls of ``batch`` images."""
        return self.per_image + self.fixed / max(float(batch), 1.0)


def seconds_per_pass(model: Any, *, batch: int = 16) -> PassTime | None:
    """The seconds of one inference forward of ``model`` at its own input size, measured now.

    One untimed forward of one image (allocations, lazy initialisation), then timed forwards of one image
    (the faster of two) and of ``batch`` seeded random images under ``torch.inference_mode``, on the threads the caller set: the
    line through the two is the cost of a call (:class:`PassTime`) on this machine, as loaded as it
    is at the moment. A gradient pass (a forward and a backward) counts as two, as
    :attr:`Estimate.forwards` counts it.

    Returns:
        :class:`PassTime`, or ``None`` for a model without a :class:`~infsa_viz.model.config.ViTConfig`.
    """
    import torch

    config = getattr(model, "config", None)
    if not all(hasattr(config, k) for k in ("in_chans", "img_size")):
        return None
    device = next((t.device for t in model.parameters()), torch.device("cpu"))
    x = torch.randn(batch, config.in_chans, config.img_size, config.img_size,
                    generator=torch.Generator().manual_seed(0)).to(device)

    def timed(images: Any) -> float:
        start = time.perf_counter()
        model(images)
        return time.perf_counter() - start

    with torch.inference_mode():
        model(x[:1])
        one = min(timed(x[:1]), timed(x[:1]))  # the faster of two: a burst of other work inflates one call
        many = timed(x)
    per_image = max((many - one) / max(batch - 1, 1), 0.25 * many / batch)  # timing noise never makes it free
    return PassTime(fixed=max(one - per_image, 0.0), per_image=per_image)


def _meminfo_available() -> float | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _address_space_left() -> float | None:
    """What an address-space limit (``RLIMIT_AS``) leaves this process, or ``None`` without one."""
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            size = next(float(line.split()[1]) * 1024 for line in handle if line.startswith("VmSize:"))
    except (OSError, StopIteration):
        return float(soft)
    return max(float(soft) - size, 0.0)


def _cgroup_left() -> float | None:
    """What a cgroup v2 memory limit leaves, or ``None`` without one."""
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as handle:
            limit = handle.read().strip()
        if limit == "max":
            return None
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as handle:
            used = float(handle.read().strip())
    except (OSError, ValueError):
        return None
    return max(float(limit) - used, 0.0)


def available_memory() -> float:
    """Bytes this process can still allocate: the machine's available memory (``MemAvailable``),
    or less where an address-space or cgroup limit leaves less."""
    found = [v for v in (_meminfo_available(), _address_space_left(), _cgroup_left()) if v is not None]
    return min(found) if found else float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def check_estimate(estimate: Estimate, work: Workload, *, subject: str, fewer: str | None = None,
                   budget: float | None = None) -> None:
    """Refuse a call whose estimate is over the method's bound or over the memory available.

    Args:
        estimate: the call's :class:`Estimate`.
        work: its :class:`Workload`.
        subject: who asks, for the message (``"method 'rollout'"``).
        fewer: how to give fewer images per call, named when the batch is over one (``"--chunk 3"``,
            ``"fewer images per call"``); ``None``: not named.
        budget: bytes available (default :func:`available_memory`).

    Raises:
        ValueError: one line: the estimate, what it holds, the budget or bound, and what lowers it.
    """
    size = f"{work.batch:,} image(s) of {work.tokens:,} tokens, {work.layers} layer(s), {work.heads} head(s)"
    per_forward = work.with_batch(1).forward_flops()
    if estimate.forwards * per_forward > MAX_FLOPS_PER_IMAGE:
        raise ValueError(f"{subject} makes {estimate.forwards:,.3g} model passes per image of {work.tokens:,} tokens, "
                         f"{per_forward:,.3g} multiply-adds each ({estimate.forwards * per_forward:,.3g} in all), over "
                         f"the bound of {MAX_FLOPS_PER_IMAGE:,.3g} per image (about ten minutes of CPU); lower it with "
                         f"{estimate.lower or 'fewer steps or a smaller input'}")
    if estimate.limit is not None and estimate.work is not None and estimate.work > estimate.limit:
        raise ValueError(f"{subject} on {size}: {estimate.limit_what} is {estimate.work:,.3g}, over its bound of "
                         f"{estimate.limit:,.3g}; lower it with {estimate.lower or 'a smaller input'}")
    budget = available_memory() if budget is None else budget
    if estimate.bytes > budget:
        ways = [w for w in ((fewer if fewer and work.batch > 1 else ""), estimate.lower) if w]
        raise ValueError(f"{subject} needs about {format_bytes(estimate.bytes)} for {size} ({estimate.what}), "
                         f"over the {format_bytes(budget)} of memory available; lower it with "
                         f"{' or '.join(ways) or 'a smaller input (fewer tokens)'}")


def largest_batch(estimate: Callable[[Workload], Estimate], work: Workload, *, budget: float | None = None) -> int:
    """The most images per call (at most ``work.batch``) whose estimate fits ``budget``; 0 if not even one."""
    budget = available_memory() if budget is None else budget
    low, high = 0, work.batch
    while low < high:  # the estimate grows with the batch
        mid = (low + high + 1) // 2
        low, high = (mid, high) if estimate(work.with_batch(mid)).bytes <= budget else (low, mid - 1)
    return low
