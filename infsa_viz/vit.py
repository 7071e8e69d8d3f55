"""One Vision Transformer family for all attention variants, with safetensors saving.

Reading a saved model (ours or another framework's) is :func:`infsa_viz.formats.load_model`.

The three variants differ only in the attention operator (see :mod:`infsa_viz.attention`);
everything else (patch embedding, pre-LN blocks, MLP, head) is shared. Parameter names follow
timm (``patch_embed.proj``, ``cls_token``, ``pos_embed``, ``blocks.i.attn.qkv``, ...).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import DEFAULT_VARIANT, EPS, build_attention, check_variant
from .io import atomic_write, dataclass_from_json
from .preprocess import CLUTTERED_DIGITS, Preprocessing

__all__ = [
    "CONFIG_FILE",
    "WEIGHTS_FILE",
    "ViTConfig",
    "VisionTransformer",
    "MAX_WIDTH",
    "count_parameters",
    "num_tokens",
    "save_model",
    "state_shapes",
]

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
POOLS = ("cls", "mean")
#: MLP activations: ``"gelu"`` is the exact erf GELU (timm, torchvision, transformers' ``"gelu"``),
#: ``"gelu_tanh"`` its tanh approximation (transformers' ``"gelu_new"`` / ``"gelu_pytorch_tanh"``).
ACTIVATIONS = ("gelu", "gelu_tanh")
#: The largest width (``embed_dim``, MLP width, classes, patch pixels) and side a config may ask
#: for: far beyond any ViT, small enough that shapes never overflow a tensor's size.
MAX_WIDTH = 1 << 20


@dataclass(frozen=True)
class ViTConfig:
    """Architecture of a :class:`VisionTransformer`.

    Args:
        img_size: training image side (square); position embeddings are stored for this grid and
            interpolated for other sizes at inference.
        in_chans: input channels.
        patch_size: patch side; image sides must be divisible by it.
        embed_dim: token width ``C``.
        depth: number of blocks.
        num_heads: heads per attention layer (must divide ``embed_dim``).
        mlp_ratio: MLP hidden width / ``embed_dim``.
        pool: ``"cls"`` (classify from a CLS token) or ``"mean"`` (mean of patch tokens).
        attention: attention variant (a name in ``infsa_viz.attention.VARIANTS``).
        rho_init: initial ``ρ = sigmoid(logit)`` for InfSA variants, in (0, 1).
        rho_per_head: one learnable ``ρ`` per head instead of one per layer.
        num_classes: output classes.
        preprocessing: what the model needs from its input (normalisation, resize policy); see
            :mod:`infsa_viz.preprocess`. Default: the cluttered-digits normalisation, which is
            also what configs written before this field existed load with.
        norm_eps: ε of every LayerNorm (default 1e-5, PyTorch's; timm and torchvision ViTs use
            1e-6, transformers' ViT/DeiT 1e-12).
        qkv_bias: bias in the fused q/k/v projection (default true).
        act: MLP activation, one of :data:`ACTIVATIONS` (default ``"gelu"``, exact).
        distillation_token: a second prefix token after CLS (DeiT); needs ``pool="cls"``.
        distillation_head: logits are the mean of the CLS head and a second head on the
            distillation token (DeiT "with teacher"); needs ``distillation_token``.
        infsa_eps: ε of the InfSA normalisations (see :mod:`infsa_viz.attention`; default 1e-6).
        class_names: a name per class (e.g. a transformers ``id2label``), or ``None``.
        source: where the weights came from (``{"format": ..., ...}``, JSON), or ``None`` for a
            model trained here; informational, shown by ``infsa-viz info``.

    Configs written before a field existed load with its default, which is what the model was
    built with then.
    """

    img_size: int = 48
    in_chans: int = 1
    patch_size: int = 8
    embed_dim: int = 64
    depth: int = 4
    num_heads: int = 4
    mlp_ratio: float = 4.0
    pool: str = "cls"
    attention: str = DEFAULT_VARIANT
    rho_init: float = 0.5
    rho_per_head: bool = False
    num_classes: int = 10
    preprocessing: Preprocessing = CLUTTERED_DIGITS
    norm_eps: float = 1e-5
    qkv_bias: bool = True
    act: str = "gelu"
    distillation_token: bool = False
    distillation_head: bool = False
    infsa_eps: float = EPS
    class_names: tuple[str, ...] | None = None
    source: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        for name in ("img_size", "in_chans", "patch_size", "embed_dim", "depth", "num_heads", "num_classes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive integer")
            if value > MAX_WIDTH:
                raise ValueError(f"{name}={value} is over the limit of {MAX_WIDTH:,}")
        if self.img_size % self.patch_size:
            raise ValueError(
                f"img_size={self.img_size} must be divisible by patch_size={self.patch_size}"
            )
        if self.embed_dim % self.num_heads:
            raise ValueError(f"num_heads={self.num_heads} must divide embed_dim={self.embed_dim}")
        if (isinstance(self.mlp_ratio, bool) or not isinstance(self.mlp_ratio, (int, float))
                or not 0 < self.mlp_ratio < float("inf")):
            raise ValueError(f"mlp_ratio={self.mlp_ratio!r} must be a positive number")
        if not 1 <= round(self.embed_dim * self.mlp_ratio) <= MAX_WIDTH:
            raise ValueError(f"mlp_ratio={self.mlp_ratio!r} gives an MLP width of {self.embed_dim * self.mlp_ratio:.3g} "
                             f"(embed_dim · mlp_ratio); expected 1 to {MAX_WIDTH:,}")
        if self.in_chans * self.patch_size**2 > MAX_WIDTH or (self.img_size // self.patch_size) ** 2 > MAX_WIDTH:
            raise ValueError(f"in_chans={self.in_chans}, patch_size={self.patch_size}, img_size={self.img_size}: "
                             f"patch pixels and patches must each be at most {MAX_WIDTH:,}")
        if self.pool not in POOLS:
            raise ValueError(f"pool={self.pool!r} must be one of {list(POOLS)}")
        check_variant(self.attention, name="attention")
        if isinstance(self.rho_init, bool) or not isinstance(self.rho_init, (int, float)) or not 0 < self.rho_init < 1:
            raise ValueError(f"rho_init={self.rho_init!r} must be a number strictly between 0 and 1")
        if not isinstance(self.rho_per_head, bool):
            raise ValueError(f"rho_per_head={self.rho_per_head!r} must be true or false")
        if not isinstance(self.preprocessing, Preprocessing):
            raise ValueError(f"preprocessing={self.preprocessing!r} must be a Preprocessing")
        self.preprocessing.check_channels(self.in_chans)
        for name in ("norm_eps", "infsa_eps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
                raise ValueError(f"{name}={value!r} must be a number in (0, 1)")
        for name in ("qkv_bias", "distillation_token", "distillation_head"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r} must be true or false")
        if self.act not in ACTIVATIONS:
            raise ValueError(f"act={self.act!r} must be one of {list(ACTIVATIONS)}")
        if self.distillation_token and self.pool != "cls":
            raise ValueError(f"distillation_token=True needs pool='cls', not pool={self.pool!r}")
        if self.distillation_head and not self.distillation_token:
            raise ValueError("distillation_head=True needs distillation_token=True")
        if self.class_names is not None:
            names = self.class_names
            if isinstance(names, str) or not all(isinstance(n, str) for n in names) or len(names) != self.num_classes:
                raise ValueError(f"class_names={names!r} must be a list of {self.num_classes} strings (num_classes)")
            object.__setattr__(self, "class_names", tuple(names))
        if self.source is not None and not isinstance(self.source, dict):
            raise ValueError(f"source={self.source!r} must be a JSON object or null")

    @property
    def num_prefix_tokens(self) -> int:
        """Tokens before the patches: CLS (``pool="cls"``) and the DeiT distillation token."""
        return (1 if self.pool == "cls" else 0) + int(self.distillation_token)

    @property
    def grid(self) -> tuple[int, int]:
        side = self.img_size // self.patch_size
        return side, side

    def to_dict(self) -> dict[str, Any]:
        out = {**dataclasses.asdict(self), "preprocessing": self.preprocessing.to_dict()}
        if self.class_names is not None:
            out["class_names"] = list(self.class_names)
        return out

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "config") -> "ViTConfig":
        """Validate a JSON-like mapping; errors name the source, the key and the problem."""
        converted: dict[str, Any] = {}
        if isinstance(data, dict) and isinstance(data.get("class_names"), list):
            converted["class_names"] = tuple(data["class_names"])
        if isinstance(data, dict) and "preprocessing" in data:
            converted["preprocessing"] = Preprocessing.from_dict(data["preprocessing"], source=f"{source}: preprocessing")
        return dataclass_from_json(cls, data, source=source, **converted)

    def replace(self, **changes: Any) -> "ViTConfig":
        return dataclasses.replace(self, **changes)


class PatchEmbed(nn.Module):
    """Non-overlapping patches → tokens by reshape + ``nn.Linear`` (faster than Conv2d on CPU)."""

    def __init__(self, patch_size: int, in_chans: int, embed_dim: int) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.in_chans = in_chans
        self.proj = nn.Linear(in_chans * patch_size * patch_size, embed_dim)

    def forward(self, x: Tensor) -> Tensor:
        B, C, H, W = x.shape
        p = self.patch_size
        h, w = H // p, W // p
        x = x.reshape(B, C, h, p, w, p).permute(0, 2, 4, 1, 3, 5)  # (B, h, w, C, p, p)
        return self.proj(x.reshape(B, h * w, C * p * p))  # (B, N, C')


class Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int, act: str = "gelu") -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU(approximate="tanh" if act == "gelu_tanh" else "none")
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """Pre-LN transformer block: ``x + attn(norm1(x))`` then ``x + mlp(norm2(x))``."""

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        dim = config.embed_dim
        self.norm1 = nn.LayerNorm(dim, eps=config.norm_eps)
        self.attn = build_attention(
            config.attention,
            dim,
            config.num_heads,
            rho_init=config.rho_init,
            rho_per_head=config.rho_per_head,
            eps=config.infsa_eps,
            qkv_bias=config.qkv_bias,
        )
        self.norm2 = nn.LayerNorm(dim, eps=config.norm_eps)
        self.mlp = Mlp(dim, round(dim * config.mlp_ratio), config.act)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    """ViT with a pluggable attention operator.

    Example:
        >>> model = VisionTransformer(ViTConfig(attention="linear_infsa"))
        >>> model(torch.zeros(2, 1, 48, 48)).shape
        torch.Size([2, 10])
    """

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        self.config = config
        self.patch_size = config.patch_size
        self.num_prefix_tokens = config.num_prefix_tokens
        dim = config.embed_dim
        self.patch_embed = PatchEmbed(config.patch_size, config.in_chans, dim)
        h, w = config.grid
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim)) if config.pool == "cls" else None
        self.dist_token = nn.Parameter(torch.zeros(1, 1, dim)) if config.distillation_token else None
        self.pos_embed = nn.Parameter(torch.zeros(1, self.num_prefix_tokens + h * w, dim))
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.depth))
        self.norm = nn.LayerNorm(dim, eps=config.norm_eps)
        self.head = nn.Linear(dim, config.num_classes)
        self.head_dist = nn.Linear(dim, config.num_classes) if config.distillation_head else None
        if self.pos_embed.device.type != "meta":  # on meta (state_shapes) there are no values to draw, and
            self._init_weights()  # drawing them there imports torch._dynamo (about 1-3 s, once per process)

    #: Where the model came from, for messages (``load_model`` sets the path it read).
    origin: str = "model"

    def _init_weights(self) -> None:
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        for token in (self.cls_token, self.dist_token):
            if token is not None:
                nn.init.normal_(token, std=1e-6)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.trunc_normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    def _pos_embed_for(self, h: int, w: int) -> Tensor:
        """Position embeddings for an ``h × w`` grid (bicubic interpolation of the stored grid)."""
        prefix = self.pos_embed[:, : self.num_prefix_tokens]
        grid = self.pos_embed[:, self.num_prefix_tokens :]
        gh, gw = self.config.grid
        if (h, w) != (gh, gw):
            grid = grid.reshape(1, gh, gw, -1).permute(0, 3, 1, 2)  # (1, C, gh, gw)
            grid = F.interpolate(grid, size=(h, w), mode="bicubic", align_corners=False)
            grid = grid.permute(0, 2, 3, 1).reshape(1, h * w, -1)
        return torch.cat([prefix, grid], dim=1)

    def check_input(self, x: Tensor) -> Tensor:
        """``x`` in the model's dtype, after checking it is ``(B, in_chans, H, W)`` with
        patch-divisible sides and finite values.

        Floating-point inputs of another precision (float64, float16, bfloat16) are converted;
        integer or boolean images are refused (they are not normalised).

        Raises:
            TypeError: ``x`` is not a floating-point tensor.
            ValueError: wrong shape, or NaN/Inf values (the images are named).
        """
        c, p = self.config.in_chans, self.patch_size
        if not isinstance(x, Tensor) or not x.is_floating_point():
            kind = x.dtype if isinstance(x, Tensor) else type(x).__name__
            raise TypeError(f"images of type {kind} must be a floating-point tensor of normalised pixels "
                            "(see infsa_viz.preprocess)")
        if x.dim() != 4 or x.shape[1] != c:
            raise ValueError(f"images of shape {tuple(x.shape)} must be (B, {c}, H, W)")
        if x.shape[-2] % p or x.shape[-1] % p or x.shape[-2] < p or x.shape[-1] < p:
            raise ValueError(
                f"image size {tuple(x.shape[-2:])} must be positive multiples of patch_size={p}"
            )
        finite = torch.isfinite(x.detach()).flatten(1).all(-1)  # (B,)
        if not bool(finite.all()):
            bad = (~finite).nonzero().flatten().tolist()
            raise ValueError(f"images {bad[:8]} hold NaN or Inf pixels; expected finite, normalised pixels")
        dtype = self.pos_embed.dtype
        return x if x.dtype == dtype else x.to(dtype)

    def forward_features(self, x: Tensor) -> Tensor:
        """Images ``(B, C, H, W)`` → normalised tokens ``(B, prefix + h·w, C')``."""
        x = self.check_input(x)
        h, w = x.shape[-2] // self.patch_size, x.shape[-1] // self.patch_size
        tokens = self.patch_embed(x)  # (B, h·w, C')
        prefix = [t.expand(tokens.shape[0], -1, -1) for t in (self.cls_token, self.dist_token) if t is not None]
        if prefix:
            tokens = torch.cat([*prefix, tokens], dim=1)  # (B, prefix + h·w, C')
        tokens = tokens + self._pos_embed_for(h, w)
        for block in self.blocks:
            tokens = block(tokens)
        return self.norm(tokens)

    def forward_head(self, tokens: Tensor) -> Tensor:
        """Tokens ``(B, N, C')`` → logits ``(B, classes)`` (CLS token or mean of patch tokens).

        With a distillation head the logits are ``(head(CLS) + head_dist(DIST)) / 2`` (DeiT,
        Touvron et al. 2021, inference rule; transformers' ``DeiTForImageClassificationWithTeacher``).
        """
        if self.config.pool == "mean":
            return self.head(tokens.mean(dim=1))
        logits = self.head(tokens[:, 0])
        if self.head_dist is not None:
            logits = (logits + self.head_dist(tokens[:, 1])) / 2
        return logits

    def forward(self, x: Tensor) -> Tensor:
        """Images ``(B, C, H, W)`` → logits ``(B, classes)``.

        Raises:
            ValueError: the logits are not finite (e.g. inputs of magnitude 1e30 overflow); the
                message names the images and the model's :attr:`source`.
        """
        logits = self.forward_head(self.forward_features(x))
        finite = torch.isfinite(logits.detach()).all(-1)  # (B,)
        if not bool(finite.all()):
            bad = (~finite).nonzero().flatten().tolist()
            peak = float(x.detach().abs().amax())
            raise ValueError(f"{self.origin}: logits of images {bad[:8]} are NaN/Inf (largest |input| "
                             f"{peak:.3g}; expected normalised pixels of order 1)")
        return logits

    def set_fused_attention(self, fused: bool) -> None:
        """Switch softmax layers between the fused SDPA kernel and the explicit path.

        Both compute the same function. On CPU, SDPA's backward pass was measured 8× slower than
        the explicit path for these small models (N = 37 tokens: 1022 vs 124 ms per training
        step, batch 128, 2 threads), so training uses the explicit path there.
        """
        for block in self.blocks:
            if hasattr(block.attn, "fused"):
                block.attn.fused = fused

    def rho_values(self) -> list[list[float]]:
        """Learned ``ρ`` per layer, per head (empty lists for softmax layers)."""
        out = []
        for block in self.blocks:
            rho = block.attn.rho()
            out.append([] if rho is None else [round(float(r), 6) for r in rho.detach()])
        return out


def save_model(model: VisionTransformer, directory: str | Path) -> Path:
    """Write ``config.json`` and ``model.safetensors`` into ``directory`` (atomically per file)."""
    from safetensors.torch import save

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    atomic_write(directory / WEIGHTS_FILE, save(state, metadata={"format": "pt"}))
    atomic_write(directory / CONFIG_FILE, json.dumps(model.config.to_dict(), indent=2) + "\n")
    return directory


def state_shapes(config: ViTConfig) -> dict[str, tuple[int, ...]]:
    """Tensor name → shape of a :class:`VisionTransformer` state dict, computed without allocating it.

    One block is built on the meta device and its shapes repeated ``depth`` times, so the cost
    does not grow with the depth a config asks for.
    """
    with torch.device("meta"):
        template = {name: tuple(t.shape) for name, t in VisionTransformer(config.replace(depth=1)).state_dict().items()}
    block = {name[len("blocks.0."):]: shape for name, shape in template.items() if name.startswith("blocks.0.")}
    shapes: dict[str, tuple[int, ...]] = {}
    for name, shape in template.items():
        if not name.startswith("blocks.0."):
            shapes[name] = shape
        elif not any(k.startswith("blocks.") for k in shapes):  # all blocks where the first one stands
            shapes.update({f"blocks.{i}.{rest}": s for i in range(config.depth) for rest, s in block.items()})
    return shapes


def __getattr__(name: str) -> Any:
    """``infsa_viz.vit.load_model`` and ``check_fits`` moved to :mod:`infsa_viz.formats`; still importable here."""
    if name == "load_model":
        from .formats import load_model

        return load_model
    if name == "check_fits":
        from .formats._state import check_fits

        return check_fits
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def num_tokens(config: ViTConfig, image_size: int) -> int:
    """Tokens a square ``image_size`` input produces (prefix included)."""
    return config.num_prefix_tokens + (image_size // config.patch_size) ** 2
