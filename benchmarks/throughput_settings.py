"""What the throughput benchmark measures, and under which limits: :class:`BenchSettings`.

The model shapes (:data:`SHAPES`), sections, precisions, each shape's :class:`ViTConfig` with
the settings' overrides (:func:`shape_config`), and the up-front refusal of sizes this machine
cannot hold (:func:`check_fit`). Importable from :mod:`benchmarks.throughput` as well.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from infsa_viz.model import VARIANTS, ViTConfig, check_variant

__all__ = [
    "DTYPES",
    "GB",
    "SECTIONS",
    "SHAPES",
    "BenchSettings",
    "check_fit",
    "image_bytes",
    "memory_budget",
    "shape_config",
]

#: Model shapes. ``shipped`` is ``ViTConfig()``'s defaults, the architecture of the shipped
#: models (48² images, 1 channel, patch 8, width 64, depth 4, 4 heads, MLP ratio 4, CLS token);
#: ``tiny`` is ViT-Tiny-like (224² RGB, patch 16, width 192, 3 heads), cut to depth 4.
SHAPES: dict[str, ViTConfig] = {
    "shipped": ViTConfig(),
    "tiny": ViTConfig(img_size=224, in_chans=3, patch_size=16, embed_dim=192, depth=4, num_heads=3),
}
SECTIONS = ("model", "attention", "naive", "spectral")
#: Precisions the model, attention and naive sections can run in (``torch`` dtype names).
DTYPES = ("float32", "bfloat16", "float16")
GB = 10**9


def _positive(name: str, value: Any, kind: type = int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int) or value <= 0:
        raise ValueError(f"{name}={value!r} must be a positive {'number' if kind is float else 'integer'}")


def _sizes(name: str, values: tuple[int, ...]) -> None:
    if not values:
        raise ValueError(f"{name} is empty; give at least one size")
    for value in values:
        _positive(name, value)
    if len(set(values)) != len(values):
        raise ValueError(f"{name}={list(values)} repeats a size")


def check_fit(name: str, values: tuple[int, ...], need: Callable[[int], float], budget: float, what: str) -> None:
    """Refuse a size whose smallest possible footprint ``need(size)`` (bytes) exceeds ``budget``, up
    front (the message gives the largest size that fits), instead of a case process that can only
    run out of memory.

    Raises:
        ValueError: naming the option, the size, the bytes it needs at least, the budget and the bound.
    """
    for value in values:
        if need(value) > budget:
            low, high = 0, value
            while low < high:  # the largest size that fits: need() grows with the size
                mid = (low + high + 1) // 2
                low, high = (mid, high) if need(mid) <= budget else (low, mid - 1)
            raise ValueError(f"{name}: {value:,} needs at least {need(value) / GB:,.3g} GB ({what}), over the "
                             f"{budget / GB:,.3g} GB this machine holds; expected at most {low:,}")


def memory_budget() -> float:
    """Bytes this machine holds: a size needing more can only fail, so it is refused up front. (A size
    over a case's ``--memory-limit`` but within the machine still runs: its ``oom`` status is a finding.)"""
    from infsa_viz._checks import machine_memory

    return float(machine_memory())


def image_bytes(config: ViTConfig, side: int, batch: int = 1) -> float:
    """The least a forward at ``side`` holds: the float32 images and one layer's tokens."""
    tokens = config.num_prefix_tokens + (side // config.patch_size) ** 2
    return 4.0 * batch * (side * side * config.in_chans + tokens * config.embed_dim)


@dataclass(frozen=True)
class BenchSettings:
    """What to measure, and under which limits.

    Args:
        variants: attention variants (names in ``VARIANTS``); default all.
        shapes: keys of :data:`SHAPES`; default both.
        sections: ``"model"`` and/or ``"attention"``; default both.
        resolutions: square image sides for the model section, each divisible by the patch size;
            default 224 … 9216 (1.33 M tokens at patch 8).
        attention_tokens: token counts for the attention section; default 2¹⁰ … 2¹⁸ (1k … 256k).
        naive_tokens: token counts for the naive dense formulas; default 4,096 and 16,384.
        spectral_resolutions: image sides for the spectral maps of the shipped models (``shipped``
            shape only); default 1024 and 2048.
        spectral_methods: map methods of the spectral section; default visits and Perron.
        spectral_variants: the shipped models the spectral section reads; default all three.
        spectral_time_limit_s: wall-clock limit of each spectral case (one timed map, no warm-up:
            a map at 2048² takes minutes); default 1800.
        patch_size, embed_dim, depth, num_heads: override the shapes' values (``None``: keep).
        batch: images per forward in the model section (the attention section uses 1); default 1.
        repeats: timings per case (median reported); default 5.
        warmup: untimed forwards before timing; default 1.
        time_limit_s: wall-clock limit of each case's process (start-up included); default 600.
        memory_limit_gb: cap per case process in GB (10⁹ bytes): its address space on CPU, its
            CUDA allocations on GPU; default 16.
        device: ``"cpu"`` or ``"cuda"``.
        dtype: weights and inputs of the model, attention and naive sections: ``"float32"``
            (default), ``"bfloat16"`` or ``"float16"`` (the spectral maps compute in float32).
        threads: torch CPU threads in each case process (``None``: torch's default).
        min_timing_s: a timing loops over enough forwards to last about this long; default 0.05.
        seed: seed for weights and inputs; default 0.
    """

    variants: tuple[str, ...] = VARIANTS
    shapes: tuple[str, ...] = tuple(SHAPES)
    sections: tuple[str, ...] = SECTIONS
    resolutions: tuple[int, ...] = (224, 512, 1024, 2048, 4096, 9216)
    attention_tokens: tuple[int, ...] = tuple(2**k for k in range(10, 19))
    naive_tokens: tuple[int, ...] = (4096, 16384)
    spectral_resolutions: tuple[int, ...] = (1024, 2048)
    spectral_methods: tuple[str, ...] = ("visits", "perron")
    spectral_variants: tuple[str, ...] = VARIANTS
    spectral_time_limit_s: float = 1800.0
    patch_size: int | None = None
    embed_dim: int | None = None
    depth: int | None = None
    num_heads: int | None = None
    batch: int = 1
    repeats: int = 5
    warmup: int = 1
    time_limit_s: float = 600.0
    memory_limit_gb: float = 16.0
    device: str = "cpu"
    dtype: str = "float32"
    threads: int | None = None
    min_timing_s: float = 0.05
    seed: int = 0

    def __post_init__(self) -> None:
        choices = (("variants", self.variants, VARIANTS), ("spectral_variants", self.spectral_variants, VARIANTS),
                   ("shapes", self.shapes, tuple(SHAPES)),
                   ("sections", self.sections, SECTIONS))
        for name, values, known in choices:
            if not values:
                raise ValueError(f"{name} is empty; expected some of {list(known)}")
            for value in values:
                if name in ("variants", "spectral_variants"):
                    check_variant(value, name=name)
                elif value not in known:
                    raise ValueError(f"{name}: {value!r} is not one of {list(known)}")
            if len(set(values)) != len(values):
                raise ValueError(f"{name}={list(values)} repeats a name")
        _sizes("resolutions", self.resolutions)
        _sizes("attention_tokens", self.attention_tokens)
        _sizes("naive_tokens", self.naive_tokens)
        _sizes("spectral_resolutions", self.spectral_resolutions)
        from infsa_viz.maps import METHODS

        if not self.spectral_methods:
            raise ValueError("spectral_methods is empty; expected map methods such as visits, perron")
        for method in self.spectral_methods:
            if method not in METHODS:
                raise ValueError(f"spectral_methods: {method!r} is not a registered map method; "
                                 f"expected one of {sorted(METHODS)}")
        for name in ("patch_size", "embed_dim", "depth", "num_heads", "threads"):
            if getattr(self, name) is not None:
                _positive(name, getattr(self, name))
        for name in ("batch", "repeats"):
            _positive(name, getattr(self, name))
        if isinstance(self.warmup, bool) or not isinstance(self.warmup, int) or self.warmup < 0:
            raise ValueError(f"warmup={self.warmup!r} must be a non-negative integer")
        for name in ("time_limit_s", "spectral_time_limit_s", "memory_limit_gb", "min_timing_s"):
            _positive(name, getattr(self, name), float)
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype={self.dtype!r} must be one of {list(DTYPES)}")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device={self.device!r} must be 'cpu' or 'cuda'")
        for shape in self.shapes:
            config = shape_config(shape, self)
            if "model" in self.sections:
                bad = [r for r in self.resolutions if r % config.patch_size]
                if bad:
                    raise ValueError(f"resolutions {bad} are not divisible by the {shape} shape's "
                                     f"patch size {config.patch_size}")
        budget = memory_budget()
        for shape in self.shapes:
            config = shape_config(shape, self)
            what = f"float32 images and one layer's tokens, {shape} shape, batch {self.batch}"
            if "model" in self.sections:
                check_fit("resolutions", self.resolutions, lambda s: image_bytes(config, s, self.batch), budget, what)
            for section, name in (("attention", "attention_tokens"), ("naive", "naive_tokens")):
                if section in self.sections:  # q, k and v of one layer
                    check_fit(name, getattr(self, name), lambda n: 12.0 * self.batch * n * config.embed_dim, budget,
                              f"float32 q, k, v of {config.embed_dim} channels, batch {self.batch}")
        if "spectral" in self.sections:
            check_fit("spectral_resolutions", self.spectral_resolutions,
                      lambda s: image_bytes(SHAPES["shipped"], s), budget, "float32 image and one layer's tokens")
            patch = SHAPES["shipped"].patch_size
            bad = [r for r in self.spectral_resolutions if r % patch]
            if bad:
                raise ValueError(f"spectral_resolutions {bad} are not divisible by the shipped models' "
                                 f"patch size {patch}")

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


def shape_config(shape: str, settings: BenchSettings, variant: str = VARIANTS[0]) -> ViTConfig:
    """The :class:`ViTConfig` of ``shape`` with the settings' overrides and ``variant``.

    A patch-size override keeps the shape's position-embedding grid (``img_size`` = grid × patch).

    Raises:
        ValueError: for an unknown shape or an invalid override (e.g. heads not dividing width).
    """
    if shape not in SHAPES:
        raise ValueError(f"shape={shape!r} is not one of {list(SHAPES)}")
    base = SHAPES[shape]
    patch = settings.patch_size or base.patch_size
    changes = {"patch_size": patch, "img_size": base.grid[0] * patch, "attention": variant}
    for name in ("embed_dim", "depth", "num_heads"):
        if getattr(settings, name) is not None:
            changes[name] = getattr(settings, name)
    try:
        return base.replace(**changes)
    except ValueError as err:
        raise ValueError(f"shape {shape!r} with the given overrides: {err}") from None
