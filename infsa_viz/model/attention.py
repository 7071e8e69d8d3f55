"""Attention operators: softmax, pure InfSA and Linear-InfSA.

One registry, :data:`ATTENTION_REGISTRY`, maps each variant name to its module class;
:data:`VARIANTS` is derived from it, and every other module of the package reads it from here.

All three modules share the same projections (``qkv`` and ``proj``, named as in timm) and differ
only in how the per-head queries ``q``, keys ``k`` and values ``v`` (each ``(B, H, N, D)``) are
combined:

* ``softmax``:  ``softmax(q kᵀ / √D) v`` (fused SDPA kernel or explicit path).
* ``pure_infsa``: ``ρ · Â v`` with ``Â = ReLU(q kᵀ) / (‖ReLU(q kᵀ)‖_F + ε)`` per (batch, head)
  (Roffo & Palmer, arXiv 2603.00175, Eq. for InfSA).
* ``linear_infsa``: ``ρ · Σ_j a_j v_j`` broadcast to every token, with ``α_i = ‖q_i‖ / Σ‖q‖``,
  ``q̄ = Σ α_i q_i`` and ``a_j = ReLU(q̄·k_j) / (Σ_l ReLU(q̄·k_l) + ε)``; O(N·D) time, no N×N
  tensor.

``ρ = sigmoid(rho_logit)`` stays a tensor on the autograd graph, so it learns.

The formulas as plain functions of ``q`` and ``k`` (:func:`softmax_matrix`,
:func:`infsa_affinity`, :func:`linear_infsa_weights`, :func:`half_gradient`) live in
:mod:`infsa_viz.model.functional`.

Attention masks and causal flags are not supported by InfSA; every operator raises
``NotImplementedError`` for them rather than ignoring them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .blockwise import EPS, blockwise_infsa, tile_sizes
from .functional import (
    accumulation_dtype,
    half_gradient,
    infsa_affinity,
    linear_infsa_weights,
    softmax_matrix,
)
from .operators import InfSAOperator, RankOneOperator, SoftmaxOperator, SpectralOperator

__all__ = [
    "ATTENTION_REGISTRY",
    "BLOCKWISE_MIN_TOKENS",
    "DEFAULT_VARIANT",
    "INFSA_IMPLS",
    "VARIANTS",
    "Attention",
    "LinearInfSAAttention",
    "PureInfSAAttention",
    "SoftmaxAttention",
    "build_attention",
    "check_impl",
    "check_variant",
    "set_infsa_impl",
]

#: Pure InfSA's ``impl="auto"`` switches from the dense to the blockwise path above this many
#: tokens (at 4,097 tokens the blockwise path was already faster on CPU, and it needs no N×N memory).
BLOCKWISE_MIN_TOKENS = 1024
#: Implementations of pure InfSA (:class:`PureInfSAAttention`'s ``impl``).
INFSA_IMPLS = ("auto", "dense", "blockwise")
InfSAImpl = Literal["auto", "dense", "blockwise"]

#: Called by an attention module during ``forward`` with what it computed (see capture.py).
RecorderFn = Callable[["Attention", dict[str, Any]], None]


def check_impl(impl: str) -> str:
    """Return ``impl`` if it is one of :data:`INFSA_IMPLS`, else raise a ``ValueError``."""
    if impl not in INFSA_IMPLS:
        raise ValueError(f"impl={impl!r} must be one of {list(INFSA_IMPLS)}")
    return impl


class Attention(nn.Module):
    """Multi-head self-attention shell: projections, head split, and the recorder hook.

    Subclasses implement :meth:`attend` on per-head tensors. ``variant`` names the subclass in
    :data:`ATTENTION_REGISTRY`.

    Args:
        dim: token width ``C``; must be divisible by ``num_heads``.
        num_heads: number of heads ``H``.
        qkv_bias: bias in the fused q/k/v projection.
        qk_norm: a LayerNorm over each head's queries and keys (``q_norm``, ``k_norm``; timm's
            ``qk_norm``) before the operator; records and maps see the normalised ``q``, ``k``.
        norm_eps: ε of those LayerNorms (default 1e-6, timm's).
    """

    variant: ClassVar[str]
    has_rho: ClassVar[bool] = False
    #: Whether :meth:`lrp_matrix`'s rules pass on all the relevance that reaches the matrix to ``q`` and
    #: ``k`` (checked by :func:`~infsa_viz.maps.conservation.relevance_conservation`).
    lrp_conserves: ClassVar[bool] = True

    def __init__(self, dim: int, num_heads: int, *, qkv_bias: bool = True, qk_norm: bool = False,
                 norm_eps: float = 1e-6) -> None:
        super().__init__()
        if num_heads < 1 or dim % num_heads:
            raise ValueError(
                f"num_heads={num_heads} must be >= 1 and divide dim={dim}"
            )
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        if qk_norm:
            self.q_norm = nn.LayerNorm(self.head_dim, eps=norm_eps)
            self.k_norm = nn.LayerNorm(self.head_dim, eps=norm_eps)
        self.proj = nn.Linear(dim, dim)
        self.recorder: RecorderFn | None = None

    def forward(
        self, x: Tensor, attn_mask: Tensor | None = None, is_causal: bool = False
    ) -> Tensor:
        """Attend over tokens ``x (B, N, C)`` and return ``(B, N, C)``."""
        if attn_mask is not None or is_causal:
            raise NotImplementedError(
                f"{type(self).__name__} does not support attention masks or causal attention; "
                "they would be silently ignored, so they are refused"
            )
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, H, N, D)
        if "q_norm" in self._modules:
            q, k = self.q_norm(q), self.k_norm(k)
        out = self.attend(q, k, v)  # (B, H, N, D) or broadcastable (B, H, 1, D)
        out = out.expand(B, self.num_heads, N, self.head_dim).transpose(1, 2).reshape(B, N, C)
        return self.proj(out)

    def attend(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    # What the layer applies, read as a token graph: each variant says it once, here, and the
    # capture, spectral and map code ask the class instead of comparing variant names.
    @staticmethod
    def applied_matrix(q: Tensor, k: Tensor, *, eps: float = EPS) -> Tensor:  # pragma: no cover - abstract
        """The dense ``(..., N, N)`` matrix this operator applies to ``v`` (without ``ρ``)."""
        raise NotImplementedError

    @staticmethod
    def graph(q: Tensor, k: Tensor, *, eps: float = EPS, block_size: int | None = None) -> SpectralOperator:  # pragma: no cover
        """The same matrix as a matrix-free :class:`~infsa_viz.model.operators.SpectralOperator`."""
        raise NotImplementedError

    @staticmethod
    def lrp_matrix(q: Tensor, k: Tensor, *, eps: float = EPS) -> Tensor:  # pragma: no cover - abstract
        """:meth:`applied_matrix` with AttnLRP's gradient rules (Achtibat et al., ICML 2024): products of
        two activations take :func:`half_gradient`, normalising divisors are constants; same value."""
        raise NotImplementedError

    def rho(self) -> Tensor | None:
        """The discount ``ρ`` per head, shape ``(H,)``, or ``None`` for softmax."""
        return None

    def _record(self, **values: Any) -> None:
        if self.recorder is not None:
            self.recorder(self, values)


class SoftmaxAttention(Attention):
    """Standard scaled dot-product attention.

    Args:
        fused: use ``F.scaled_dot_product_attention`` (default) or the explicit
            ``softmax(q kᵀ/√D) v``; both give the same result to float tolerance.
    """

    variant = "softmax"
    #: AttnLRP's softmax rule (gradient × input, Achtibat et al. 2024, Prop. 3.1) is a first-order Taylor
    #: expansion; its bias term keeps part of the relevance that reaches the matrix.
    lrp_conserves = False

    def __init__(self, dim: int, num_heads: int, *, fused: bool = True, **kw: Any) -> None:
        super().__init__(dim, num_heads, **kw)
        self.fused = fused

    def attend(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        self._record(q=q, k=k)
        if self.fused:
            return F.scaled_dot_product_attention(q, k, v)
        return softmax_matrix(q, k) @ v  # (B, H, N, D)

    @staticmethod
    def applied_matrix(q: Tensor, k: Tensor, *, eps: float = EPS) -> Tensor:
        """The row-stochastic ``softmax(q kᵀ/√D)``."""
        return softmax_matrix(q, k)

    @staticmethod
    def graph(q: Tensor, k: Tensor, *, eps: float = EPS, block_size: int | None = None) -> SpectralOperator:
        return SoftmaxOperator(q, k, block_size=block_size)

    @staticmethod
    def lrp_matrix(q: Tensor, k: Tensor, *, eps: float = EPS) -> Tensor:
        """``softmax(½-gradient(q kᵀ)/√D)``: softmax keeps its true gradient (AttnLRP's rule for it)."""
        return torch.softmax(half_gradient(q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5, dim=-1)


class _RhoMixin(Attention):
    """Learnable discount ``ρ = sigmoid(rho_logit)``, one per layer or one per head."""

    has_rho = True

    def __init__(
        self,
        dim: int,
        num_heads: int,
        *,
        rho_init: float = 0.5,
        rho_per_head: bool = False,
        eps: float = EPS,
        **kw: Any,
    ) -> None:
        super().__init__(dim, num_heads, **kw)
        if not 0.0 < rho_init < 1.0:
            raise ValueError(f"rho_init={rho_init!r} must lie strictly between 0 and 1")
        logit = math.log(rho_init / (1.0 - rho_init))
        self.rho_logit = nn.Parameter(torch.full((num_heads if rho_per_head else 1,), logit))
        self.eps = eps

    def rho(self) -> Tensor:
        # Stays on the graph: no .item(), so rho_logit receives a gradient.
        return torch.sigmoid(self.rho_logit).expand(self.num_heads)  # (H,)

    def _rho_4d(self, dtype: torch.dtype) -> Tensor:
        return self.rho().to(dtype).view(1, self.num_heads, 1, 1)


class PureInfSAAttention(_RhoMixin):
    """Pure InfSA: ``ρ · Â v`` with the Frobenius-normalised ReLU affinity (O(N²) time).

    Two exact paths give the same result: ``"dense"`` forms ``S = ReLU(q kᵀ)`` (``O(N²)`` memory)
    and ``"blockwise"`` computes ``S v`` and ``‖S‖_F`` tile by tile in one pass
    (:func:`~infsa_viz.model.blockwise.blockwise_infsa`; ``O(N·D)`` memory, backward by recomputing the
    tiles).

    Args:
        impl: ``"auto"`` (default: dense for ``N ≤`` :data:`BLOCKWISE_MIN_TOKENS`, blockwise
            above), ``"dense"`` or ``"blockwise"``.
        block_size: query rows per tile of the blockwise path (``None``: about 4 MiB tiles).
        key_block_size: key columns per tile of the blockwise path (``None``: up to 2,048).
        rho_init, rho_per_head, eps, qkv_bias: as for every InfSA layer.
    """

    variant = "pure_infsa"

    def __init__(self, dim: int, num_heads: int, *, impl: InfSAImpl = "auto", block_size: int | None = None,
                 key_block_size: int | None = None, **kw: Any) -> None:
        super().__init__(dim, num_heads, **kw)
        self.impl = check_impl(impl)
        tile_sizes(1, 1, block_size=block_size, key_block_size=key_block_size)  # validates both
        self.block_size = block_size
        self.key_block_size = key_block_size

    def uses_blockwise(self, num_tokens: int) -> bool:
        """Whether :meth:`attend` takes the blockwise path for ``num_tokens`` tokens."""
        impl = check_impl(self.impl)
        return impl == "blockwise" or (impl == "auto" and num_tokens > BLOCKWISE_MIN_TOKENS)

    def attend(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        self._record(q=q, k=k)
        acc = accumulation_dtype(v.dtype)  # reduce in ≥ float32 (bf16 inputs)
        if self.uses_blockwise(q.shape[-2]):
            product, norm = blockwise_infsa(q, k, v, block_size=self.block_size,
                                            key_block_size=self.key_block_size)  # (B, H, N, D), (B, H)
            norm = norm[..., None, None]  # (B, H, 1, 1)
        else:
            # ρ·Â·v = ρ/(‖S‖_F + ε) · (S v) with S = ReLU(q kᵀ): the Frobenius scale is applied to
            # the (N, D) product instead of the (N, N) matrix (one N×N buffer, in-place ReLU).
            scores = torch.relu_(q @ k.transpose(-2, -1))  # (B, H, N, N)
            norm = torch.linalg.vector_norm(scores, dim=(-2, -1), keepdim=True, dtype=acc)  # (B, H, 1, 1)
            product = scores @ v  # (B, H, N, D)
        scale = self._rho_4d(acc) / (norm + self.eps)  # (B, H, 1, 1)
        return (product.to(acc) * scale).to(v.dtype)  # (B, H, N, D)

    @staticmethod
    def applied_matrix(q: Tensor, k: Tensor, *, eps: float = EPS) -> Tensor:
        """``Â = ReLU(q kᵀ)/(‖ReLU(q kᵀ)‖_F + ε)``."""
        return infsa_affinity(q, k, eps=eps)

    @staticmethod
    def graph(q: Tensor, k: Tensor, *, eps: float = EPS, block_size: int | None = None) -> SpectralOperator:
        return InfSAOperator(q, k, eps=eps, block_size=block_size)

    @staticmethod
    def lrp_matrix(q: Tensor, k: Tensor, *, eps: float = EPS) -> Tensor:
        """``ReLU(½-gradient(q kᵀ)) / (‖S‖_F + ε)`` with the Frobenius divisor a constant."""
        S = F.relu(half_gradient(q @ k.transpose(-2, -1)))  # (B, H, N, N)
        norm = torch.linalg.vector_norm(S, dim=(-2, -1), keepdim=True)
        return S / (norm + eps).detach()


class LinearInfSAAttention(_RhoMixin):
    """Linear-InfSA: ``ρ · Σ_j a_j v_j`` broadcast to all tokens (O(N·D), no N×N tensor)."""

    variant = "linear_infsa"

    def attend(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        alpha, q_bar, a = linear_infsa_weights(q, k, eps=self.eps)  # (B,H,N), (B,H,D), (B,H,N)
        self._record(q=q, k=k, alpha=alpha, q_bar=q_bar, a=a)
        acc = accumulation_dtype(v.dtype)
        context = (a.unsqueeze(-2).to(acc) @ v.to(acc)).to(v.dtype)  # (B, H, 1, D)
        return self._rho_4d(v.dtype) * context  # broadcast to (B, H, N, D) by the caller

    @staticmethod
    def applied_matrix(q: Tensor, k: Tensor, *, eps: float = EPS) -> Tensor:
        """The rank-one ``1·aᵀ``: every row is ``a`` (O(N²) memory when made dense)."""
        a = linear_infsa_weights(q, k, eps=eps)[2]  # (..., N)
        return a.unsqueeze(-2).expand(*a.shape[:-1], a.shape[-1], a.shape[-1])

    @staticmethod
    def graph(q: Tensor, k: Tensor, *, eps: float = EPS, block_size: int | None = None) -> SpectralOperator:
        return RankOneOperator(linear_infsa_weights(q, k, eps=eps)[2])

    @staticmethod
    def lrp_matrix(q: Tensor, k: Tensor, *, eps: float = EPS) -> Tensor:
        """``1·aᵀ`` with ``α`` and ``Σ_j`` constants and ``½``-gradient on the product ``q̄·k``."""
        q_norm = torch.linalg.vector_norm(q, dim=-1)  # (B, H, N)
        alpha = (q_norm / (q_norm.sum(-1, keepdim=True) + eps)).detach()
        q_bar = (alpha.unsqueeze(-2) @ q).squeeze(-2)  # (B, H, D)
        scores = F.relu(half_gradient((k @ q_bar.unsqueeze(-1)).squeeze(-1)))  # (B, H, N)
        a = scores / (scores.sum(-1, keepdim=True) + eps).detach()
        return a.unsqueeze(-2).expand(*a.shape[:-1], a.shape[-1], a.shape[-1])


ATTENTION_REGISTRY: dict[str, type[Attention]] = {
    cls.variant: cls for cls in (SoftmaxAttention, PureInfSAAttention, LinearInfSAAttention)
}
#: The variant names, in a fixed order (softmax first, the baseline).
VARIANTS: tuple[str, ...] = tuple(ATTENTION_REGISTRY)
#: The variant a model gets when none is named: the softmax baseline.
DEFAULT_VARIANT: str = SoftmaxAttention.variant


def check_variant(variant: str, *, name: str = "variant") -> str:
    """Return ``variant`` if it is registered, else raise a ``ValueError`` naming the choices."""
    if variant not in ATTENTION_REGISTRY:
        raise ValueError(f"{name}={variant!r} is not a known attention variant; expected one of {list(VARIANTS)}")
    return variant


def build_attention(variant: str, dim: int, num_heads: int, **options: Any) -> Attention:
    """Build the attention module registered under ``variant``.

    Options that do not apply to the variant (``rho_init``/``rho_per_head`` for softmax,
    ``fused`` for InfSA, ``impl``/``block_size``/``key_block_size`` for all but pure InfSA) are
    accepted and dropped, so one model config serves all variants.
    """
    cls = ATTENTION_REGISTRY[check_variant(variant)]
    if not cls.has_rho:
        options = {k: v for k, v in options.items() if k not in ("rho_init", "rho_per_head", "eps")}
    else:
        options.pop("fused", None)
    if cls is not PureInfSAAttention:
        options = {k: v for k, v in options.items() if k not in ("impl", "block_size", "key_block_size")}
    return cls(dim, num_heads, **options)


def set_infsa_impl(model: nn.Module, impl: InfSAImpl, *, block_size: int | None = None,
                   key_block_size: int | None = None) -> int:
    """Set the path (``"auto"``, ``"dense"``, ``"blockwise"``) of every pure-InfSA layer in ``model``.

    Returns:
        The number of :class:`PureInfSAAttention` layers changed (0 for other variants).
    """
    check_impl(impl)
    tile_sizes(1, 1, block_size=block_size, key_block_size=key_block_size)
    layers = [m for m in model.modules() if isinstance(m, PureInfSAAttention)]
    for layer in layers:
        layer.impl, layer.block_size, layer.key_block_size = impl, block_size, key_block_size
    return len(layers)
