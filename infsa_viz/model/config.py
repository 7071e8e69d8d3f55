"""The architecture of a :class:`~infsa_viz.model.vit.VisionTransformer`: :class:`ViTConfig`.

A config is validated when it is made (every error names the field, its value and what was
expected) and round-trips through JSON (``to_dict`` / ``from_dict``); it carries what the model
needs from its input (:class:`~infsa_viz.preprocess.Preprocessing`). Importable from
:mod:`infsa_viz.model` as well.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..io import dataclass_from_json
from ..preprocess import CLUTTERED_DIGITS, Preprocessing
from .attention import DEFAULT_VARIANT, check_variant
from .blockwise import EPS

__all__ = ["ACTIVATIONS", "FINAL_NORMS", "HEADS", "MAX_WIDTH", "POOLS", "POS_INTERPOLATIONS", "ViTConfig",
           "num_tokens"]

#: How tokens become one vector: the class token, the mean of the patch tokens (prefix tokens,
#: registers included, left out), or both concatenated (DINOv2's classifier input).
POOLS = ("cls", "mean", "cls_mean")
#: MLP activations: ``"gelu"`` is the exact erf GELU (timm, torchvision, transformers' ``"gelu"``),
#: ``"gelu_tanh"`` its tanh approximation (transformers' ``"gelu_new"`` / ``"gelu_pytorch_tanh"``),
#: ``"quick_gelu"`` CLIP's ``x · sigmoid(1.702 x)``.
ACTIVATIONS = ("gelu", "gelu_tanh", "quick_gelu")
#: Where the last LayerNorm goes: on every token (ViT, DeiT, DINOv2, CLIP's ``post_layernorm``,
#: which reads the class token only, gives the same vector), on the pooled vector (timm's
#: ``fc_norm``), or nowhere.
FINAL_NORMS = ("tokens", "pooled", "none")
#: How position embeddings are resized to another grid: bicubic (transformers' ViT, DeiT,
#: DINOv2 and CLIP), or bicubic with antialiasing (transformers' DINOv2 with registers, timm).
POS_INTERPOLATIONS = ("bicubic", "bicubic_antialias")
#: The output layer: ``"linear"`` (logits ``W·x + b``) or ``"cosine"`` (CLIP zero-shot:
#: ``logit_scale · cos(x, w_k)`` against one row per class, e.g. text embeddings).
HEADS = ("linear", "cosine")
#: The largest width (``embed_dim``, MLP width, classes, patch pixels) and side a config may ask
#: for: far beyond any ViT, small enough that shapes never overflow a tensor's size.
MAX_WIDTH = 1 << 20


@dataclass(frozen=True)
class ViTConfig:
    """Architecture of a :class:`~infsa_viz.model.vit.VisionTransformer`.

    Args:
        img_size: training image side (square); position embeddings are stored for this grid and
            interpolated for other sizes at inference.
        in_chans: input channels.
        patch_size: patch side; image sides must be divisible by it.
        embed_dim: token width ``C``.
        depth: number of blocks.
        num_heads: heads per attention layer (must divide ``embed_dim``).
        mlp_ratio: MLP hidden width / ``embed_dim``.
        pool: ``"cls"`` (classify from the class token), ``"mean"`` (mean of the patch tokens) or
            ``"cls_mean"`` (class token ⊕ mean patch token, DINOv2's classifier); see :data:`POOLS`.
        attention: attention variant (a name in ``infsa_viz.model.attention.VARIANTS``).
        rho_init: initial ``ρ = sigmoid(logit)`` for InfSA variants, in (0, 1).
        rho_per_head: one learnable ``ρ`` per head instead of one per layer.
        num_classes: output classes; 0 gives the pooled (and projected) embedding as output
            (transformers' ``pooler_output`` / ``image_embeds``).
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
        infsa_eps: ε of the InfSA normalisations (see :mod:`infsa_viz.model.attention`; default 1e-6).
        class_names: a name per class (e.g. a transformers ``id2label``), or ``None``.
        class_token: a class token first in the sequence (default: ``pool != "mean"``, which is
            what configs written before this field existed were built with).
        register_tokens: learned register tokens after the class token (Darcet et al., ICLR 2024,
            "Vision Transformers Need Registers"); they get no position embedding and are left out
            of every spatial map, grid and mean pool (they count in :attr:`num_prefix_tokens`).
        class_pos_embed: the stored position embeddings hold an entry for the class (and
            distillation) token (transformers, timm's default); false: patches only (timm's
            ``no_embed_class``).
        pos_interpolation: how position embeddings follow another input grid, one of
            :data:`POS_INTERPOLATIONS` (default ``"bicubic"``).
        norm_pre: a LayerNorm on the embedded tokens before the first block (CLIP's
            ``pre_layrnorm``, timm's ``norm_pre``).
        layer_scale: learned per-channel scales on each residual branch (``ls1``, ``ls2``;
            Touvron et al. 2021, CaiT; DINOv2).
        qk_norm: a LayerNorm over each head's queries and keys before attention (timm's
            ``q_norm`` / ``k_norm``).
        final_norm: where the last LayerNorm goes, one of :data:`FINAL_NORMS` (default ``"tokens"``).
        projection_dim: a bias-free linear projection of the pooled vector to this width before
            the head (CLIP's ``visual_projection``); 0 (default): none.
        head: ``"linear"`` (default) or ``"cosine"`` (zero-shot against class embeddings), see
            :data:`HEADS`.
        logit_scale: the factor of a cosine head's similarities (CLIP's ``logit_scale.exp()``).
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
    class_token: bool | None = None
    register_tokens: int = 0
    class_pos_embed: bool = True
    pos_interpolation: str = "bicubic"
    norm_pre: bool = False
    layer_scale: bool = False
    qk_norm: bool = False
    final_norm: str = "tokens"
    projection_dim: int = 0
    head: str = "linear"
    logit_scale: float = 1.0

    def __post_init__(self) -> None:
        for name in ("img_size", "in_chans", "patch_size", "embed_dim", "depth", "num_heads", "num_classes",
                     "register_tokens", "projection_dim"):
            value = getattr(self, name)
            least = 0 if name in ("num_classes", "register_tokens", "projection_dim") else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name}={value!r} must be {'a positive' if least else 'a non-negative'} integer")
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
        if self.class_token is None:
            object.__setattr__(self, "class_token", self.pool != "mean")
        for name in ("qkv_bias", "distillation_token", "distillation_head", "class_token", "class_pos_embed",
                     "norm_pre", "layer_scale", "qk_norm"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r} must be true or false")
        if self.act not in ACTIVATIONS:
            raise ValueError(f"act={self.act!r} must be one of {list(ACTIVATIONS)}")
        for name, allowed in (("pos_interpolation", POS_INTERPOLATIONS), ("final_norm", FINAL_NORMS),
                              ("head", HEADS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}={getattr(self, name)!r} must be one of {list(allowed)}")
        if self.pool in ("cls", "cls_mean") and not self.class_token:
            raise ValueError(f"pool={self.pool!r} needs class_token=True")
        if self.distillation_token and self.pool != "cls":
            raise ValueError(f"distillation_token=True needs pool='cls', not pool={self.pool!r}")
        if self.distillation_token and self.register_tokens:
            raise ValueError("distillation_token=True with register_tokens is not an architecture this model builds")
        if self.head == "cosine" and (self.num_classes < 1 or self.distillation_head):
            raise ValueError(f"head='cosine' needs num_classes >= 1 and no distillation head; got "
                             f"num_classes={self.num_classes}, distillation_head={self.distillation_head}")
        if self.num_classes == 0 and self.distillation_head:
            raise ValueError("distillation_head=True needs num_classes >= 1")
        scale = self.logit_scale
        if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 0 < scale < float("inf"):
            raise ValueError(f"logit_scale={scale!r} must be a positive finite number")
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
        """Tokens before the patches: the class token, the DeiT distillation token, the registers."""
        return int(bool(self.class_token)) + int(self.distillation_token) + self.register_tokens

    @property
    def prefix_kinds(self) -> tuple[str, ...]:
        """What each token before the patches is, in the model's order: ``"class"``, ``"distillation"``,
        then ``"register"`` once per register token (:attr:`num_prefix_tokens` entries)."""
        return (("class",) * int(bool(self.class_token)) + ("distillation",) * int(self.distillation_token)
                + ("register",) * self.register_tokens)

    @property
    def num_pos_prefix(self) -> int:
        """Prefix tokens with a stored position embedding (class and distillation tokens, unless
        :attr:`class_pos_embed` is false; registers never have one)."""
        return (int(bool(self.class_token)) + int(self.distillation_token)) if self.class_pos_embed else 0

    @property
    def feature_dim(self) -> int:
        """The width of the vector the head reads (pooled, then projected)."""
        if self.projection_dim:
            return self.projection_dim
        return 2 * self.embed_dim if self.pool == "cls_mean" else self.embed_dim

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


def num_tokens(config: ViTConfig, image_size: int) -> int:
    """Tokens a square ``image_size`` input produces (prefix included)."""
    return config.num_prefix_tokens + (image_size // config.patch_size) ** 2
