"""One Vision Transformer family for all attention variants: :class:`VisionTransformer`.

The three variants differ only in the attention operator (see :mod:`infsa_viz.model.attention`);
everything else (patch embedding, pre-LN blocks, MLP, head) is shared. Parameter names follow
timm (``patch_embed.proj``, ``cls_token``, ``pos_embed``, ``blocks.i.attn.qkv``, ...).

The architecture is a :class:`~infsa_viz.model.config.ViTConfig`; :func:`~infsa_viz.model.files.save_model`
writes a model's directory. Reading a saved model (ours or another framework's) is
:func:`infsa_viz.formats.load_model`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import build_attention
from .config import ViTConfig

__all__ = ["VisionTransformer", "count_parameters", "state_shapes"]


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


class QuickGELU(nn.Module):
    """CLIP's ``x · sigmoid(1.702 x)`` (Radford et al. 2021; transformers' ``quick_gelu``)."""

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.sigmoid(1.702 * x)


class LayerScale(nn.Module):
    """A learned per-channel scale of a residual branch (timm's ``ls1``/``ls2``, DINOv2's ``layer_scale``)."""

    def __init__(self, dim: int, init: float = 1.0) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.full((dim,), init))

    def forward(self, x: Tensor) -> Tensor:
        return x * self.gamma


class Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int, act: str = "gelu") -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = QuickGELU() if act == "quick_gelu" else nn.GELU(approximate="tanh" if act == "gelu_tanh" else "none")
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    """Pre-LN transformer block: ``x + ls1(attn(norm1(x)))`` then ``x + ls2(mlp(norm2(x)))`` (``ls``: layer
    scale, the identity unless ``config.layer_scale``)."""

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
            qk_norm=config.qk_norm,
            norm_eps=config.norm_eps,
        )
        self.ls1 = LayerScale(dim) if config.layer_scale else nn.Identity()
        self.norm2 = nn.LayerNorm(dim, eps=config.norm_eps)
        self.mlp = Mlp(dim, round(dim * config.mlp_ratio), config.act)
        self.ls2 = LayerScale(dim) if config.layer_scale else nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.ls1(self.attn(self.norm1(x)))
        return x + self.ls2(self.mlp(self.norm2(x)))


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
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim)) if config.class_token else None
        self.dist_token = nn.Parameter(torch.zeros(1, 1, dim)) if config.distillation_token else None
        self.reg_token = nn.Parameter(torch.zeros(1, config.register_tokens, dim)) if config.register_tokens else None
        self.pos_embed = nn.Parameter(torch.zeros(1, config.num_pos_prefix + h * w, dim))
        self.norm_pre = nn.LayerNorm(dim, eps=config.norm_eps) if config.norm_pre else nn.Identity()
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.depth))
        self.norm = nn.LayerNorm(dim, eps=config.norm_eps) if config.final_norm != "none" else nn.Identity()
        pooled = 2 * dim if config.pool == "cls_mean" else dim
        self.projection = nn.Linear(pooled, config.projection_dim, bias=False) if config.projection_dim else None
        features = config.feature_dim
        if config.num_classes == 0:
            self.head: nn.Module = nn.Identity()
        else:
            self.head = nn.Linear(features, config.num_classes, bias=config.head == "linear")
        self.head_dist = nn.Linear(features, config.num_classes) if config.distillation_head else None
        if self.pos_embed.device.type != "meta":  # on meta (state_shapes) there are no values to draw, and
            self._init_weights()  # drawing them there imports torch._dynamo (about 1-3 s, once per process)

    #: Where the model came from, for messages (``load_model`` sets the path it read).
    origin: str = "model"

    def _init_weights(self) -> None:
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        for token in (self.cls_token, self.dist_token, self.reg_token):
            if token is not None:
                nn.init.normal_(token, std=1e-6)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.trunc_normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    def _pos_embed_for(self, h: int, w: int) -> Tensor:
        """Position embeddings ``(1, pos prefix + h·w, C')`` for an ``h × w`` grid: the stored grid
        resized as transformers and timm do it (``config.pos_interpolation``: bicubic, corners not
        aligned, in float32, with or without antialiasing), prefix entries unchanged."""
        split = self.config.num_pos_prefix
        prefix = self.pos_embed[:, :split]
        grid = self.pos_embed[:, split:]
        gh, gw = self.config.grid
        if (h, w) != (gh, gw):
            dtype = grid.dtype
            grid = grid.reshape(1, gh, gw, -1).permute(0, 3, 1, 2).float()  # (1, C, gh, gw)
            grid = F.interpolate(grid, size=(h, w), mode="bicubic", align_corners=False,
                                 antialias=self.config.pos_interpolation == "bicubic_antialias")
            grid = grid.to(dtype).permute(0, 2, 3, 1).reshape(1, h * w, -1)
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
        """Images ``(B, C, H, W)`` → tokens ``(B, prefix + h·w, C')``: ``[CLS, DIST, registers, patches]``
        (each prefix where the config has it), normalised when ``config.final_norm == "tokens"``.

        Position embeddings are added to the class/distillation tokens (``class_pos_embed``) and the
        patches before the registers are inserted (registers get none), as transformers' DINOv2
        with registers and timm do.
        """
        x = self.check_input(x)
        h, w = x.shape[-2] // self.patch_size, x.shape[-1] // self.patch_size
        tokens = self.patch_embed(x)  # (B, h·w, C')
        B = tokens.shape[0]
        prefix = [t.expand(B, -1, -1) for t in (self.cls_token, self.dist_token) if t is not None]
        pos = self._pos_embed_for(h, w)
        if self.config.class_pos_embed:
            tokens = torch.cat([*prefix, tokens], dim=1) + pos  # (B, cls/dist + h·w, C')
        else:
            tokens = torch.cat([*prefix, tokens + pos], dim=1)
        if self.reg_token is not None:
            split = len(prefix)
            tokens = torch.cat([tokens[:, :split], self.reg_token.expand(B, -1, -1), tokens[:, split:]], dim=1)
        tokens = self.norm_pre(tokens)
        for block in self.blocks:
            tokens = block(tokens)
        return self.norm(tokens) if self.config.final_norm == "tokens" else tokens

    def pool(self, tokens: Tensor) -> Tensor:
        """Tokens ``(B, N, C')`` → the vector the head reads ``(B, feature_dim)``: pooled
        (``config.pool``; a mean leaves every prefix token out), normalised when ``final_norm ==
        "pooled"``, projected when ``projection_dim`` is set."""
        pool = self.config.pool
        patches = tokens[:, self.num_prefix_tokens:]  # (B, h·w, C')
        if pool == "mean":
            pooled = patches.mean(dim=1)
        elif pool == "cls_mean":  # DINOv2's classifier input
            pooled = torch.cat([tokens[:, 0], patches.mean(dim=1)], dim=-1)  # (B, 2C')
        else:
            pooled = tokens[:, 0]
        if self.config.final_norm == "pooled":
            pooled = self.norm(pooled)
        return pooled if self.projection is None else self.projection(pooled)

    def forward_head(self, tokens: Tensor) -> Tensor:
        """Tokens ``(B, N, C')`` → logits ``(B, classes)`` (or the embedding ``(B, feature_dim)`` when
        ``num_classes == 0``).

        With a distillation head the logits are ``(head(CLS) + head_dist(DIST)) / 2`` (DeiT,
        Touvron et al. 2021, inference rule; transformers' ``DeiTForImageClassificationWithTeacher``).
        A cosine head gives ``logit_scale · x̂ · ŵ_kᵀ`` with ``x̂``, ``ŵ_k`` unit vectors (CLIP's
        ``logits_per_image``, Radford et al. 2021).
        """
        features = self.pool(tokens)
        if self.config.head == "cosine":
            x = features / features.norm(p=2, dim=-1, keepdim=True)
            w = self.head.weight / self.head.weight.norm(p=2, dim=-1, keepdim=True)
            return self.config.logit_scale * (x @ w.t())  # (B, classes)
        logits = self.head(features)
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


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
