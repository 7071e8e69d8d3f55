"""Operator fingerprint: what each attention module of a model computes, read from its behaviour.

A module's class name says which operator it claims (``variant``); the fingerprint checks what it
does. Each attention module is driven through its own ``forward`` with synthetic queries, keys and
values: a forward hook replaces the output of its ``qkv`` projection with chosen ``q``, ``k``,
``v`` (seeded Gaussian ``q``, ``k``; one-hot and Gaussian ``v``), and a hook on ``proj`` reads what
the heads produced. Whatever the module does in between (its own ``attend``, an overridden
``forward``, q/k norms) is what gets classified; the ``q``, ``k``, ``v`` it really used are read
where it calls ``attend``.

Every operator this toolkit reads as a token graph is linear in the values: per head,
``out = M(q, k) · v`` with an ``N × N`` matrix ``M``. The one-hot values give ``M`` column by column;
the Gaussian values check that the output is linear in ``v`` at all. ``M`` is then compared, per head
and over all probes at once, with each candidate (free constants fitted by least squares; the
relative residual ``‖M − fit‖_F / ‖M‖_F`` over the probes decides):

* each registered variant (:data:`~infsa_viz.model.attention.ATTENTION_REGISTRY`), its class's own
  ``applied_matrix``: softmax ``softmax(q kᵀ/√D)`` (no free constant), pure InfSA ``ρ·Â`` with
  ``Â = ReLU(q kᵀ)/‖ReLU(q kᵀ)‖_F``, Linear-InfSA ``ρ·1·aᵀ``;
* ``"blend"``: ``w_p·1·aᵀ + w_t·X`` with ``X`` the identity (each token's own value) or ``Â``: a
  mixture of Linear-InfSA's pooled context and a per-token term (e.g. ``0.7·pooled + 0.3·v``);
* ``"neumann"``: a truncated Neumann series ``s·Σ_{t=t₀}^{T} γᵗ Âᵗ`` inside the layer (``t₀ ∈ {0, 1}``,
  ``2 ≤ T ≤ 5``; ``γ`` and ``s`` fitted), e.g. ``Σ_{t=1}^{3} 0.5ᵗ Âᵗ``;
* ``"unknown"``: nothing above reproduces ``M`` within the tolerance (sigmoid attention, a
  temperature-scaled or top-k softmax, a row-normalised ReLU …), or the output is not linear in the
  values, or the heads disagree.

The simplest candidate that fits wins (a variant before a blend before a series). A layer's graph
reading (visits, Perron vectors, the Neumann series across layers, eigencheck) is defined only where
the fingerprint equals the variant its class declares: those readouts build the declared class's
graph (:meth:`~infsa_viz.model.attention.Attention.graph`), so a layer that computes anything else
is refused with the reason (:func:`require_graph`). Results are cached per model (:func:`fingerprint`)
and recomputed only when an attention module or one of its parameters changes.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import torch
from torch import Tensor, nn

from .attention import ATTENTION_REGISTRY, VARIANTS, LinearInfSAAttention, PureInfSAAttention
from .blockwise import EPS
from .capture import attention_layers
from ..linalg import lstsq

__all__ = [
    "OPERATORS",
    "PROBE_SEED",
    "LayerFingerprint",
    "fingerprint",
    "fingerprint_layer",
    "require_graph",
]

#: What a fingerprint can name: the registered variants, a series or a blend inside one layer, unknown.
OPERATORS: tuple[str, ...] = (*VARIANTS, "neumann", "blend", "unknown")
#: Seed of the synthetic queries, keys and values (the fingerprint is deterministic).
PROBE_SEED = 0
#: Tokens per probe and the number of probes (independent ``q``, ``k``) per layer; the ``q``, ``k`` of
#: each probe are scaled differently (a temperature shows at every scale).
PROBE_TOKENS = 10
PROBE_SCALES = (0.5, 1.0, 2.0)
#: The longest truncated series tried, and the ``γ`` grid searched before refining.
MAX_POWER = 5
_GAMMAS = torch.linspace(0.01, 2.0, 200, dtype=torch.float64)


@dataclass(frozen=True)
class LayerFingerprint:
    """What one attention module computes.

    Attributes:
        layer: index of the module among the model's attention modules.
        declared: the variant its class claims (``variant``), or ``None``.
        operator: one of :data:`OPERATORS`.
        parameters: the fitted constants per head: ``rho`` (pure InfSA, Linear-InfSA), ``scale`` and
            ``gamma`` and ``powers`` (a series), ``pooled``, ``per_token`` and ``per_token_weight``
            (a blend); empty for softmax and unknown.
        residual: relative residual of the accepted fit (for ``"unknown"``: of the best candidate),
            the largest over heads.
        linearity: relative residual of ``out = M·v`` on the Gaussian values (0 for a linear map).
        tolerance: the residual below which a candidate fits (set by the module's dtype).
        reason: one sentence: what was found and whether graph readouts apply.
    """

    layer: int
    declared: str | None
    operator: str
    parameters: dict[str, Any] = field(default_factory=dict)
    residual: float = math.nan
    linearity: float = math.nan
    tolerance: float = math.nan
    reason: str = ""

    @property
    def graph_defined(self) -> bool:
        """Whether graph readouts of this layer are defined: it computes the variant its class declares."""
        return self.operator in VARIANTS and self.operator == self.declared

    def to_dict(self) -> dict[str, Any]:
        """JSON-able record."""
        return {"layer": self.layer, "declared": self.declared, "computes": self.operator,
                "graph_readouts": self.graph_defined, "parameters": self.parameters,
                "residual": _round(self.residual), "linearity": _round(self.linearity),
                "tolerance": _round(self.tolerance), "reason": self.reason}


def _round(value: float) -> float | None:
    return None if not math.isfinite(value) else float(f"{value:.3g}")


# -- probing ---------------------------------------------------------------------------------------

def _tolerance(dtype: torch.dtype) -> float:
    """Relative residual accepted as a fit: 1e-4 in float32/float64, 16 units of rounding in half types."""
    return max(1e-4, 16 * torch.finfo(dtype).eps)


def _synthetic(heads: int, dim: int, *, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor, int]:
    """``(q, k, v, chunks)``: ``q``, ``k`` ``(P, H, N, D)`` and ``v`` ``(P, chunks + 1, H, N, D)``: per
    probe, ``chunks = ⌈N/D⌉`` one-hot value blocks (token ``c·D + d`` in channel ``d``) and one Gaussian."""
    N, P = PROBE_TOKENS, len(PROBE_SCALES)
    scales = torch.tensor(PROBE_SCALES, dtype=torch.float64).view(P, 1, 1, 1)
    q = torch.randn(P, heads, N, dim, generator=generator, dtype=torch.float64) * scales
    k = torch.randn(P, heads, N, dim, generator=generator, dtype=torch.float64) * scales
    chunks = -(-N // dim)
    v = torch.zeros(P, chunks + 1, heads, N, dim, dtype=torch.float64)
    for token in range(N):
        v[:, token // dim, :, token, token % dim] = 1.0
    v[:, chunks] = torch.randn(P, heads, N, dim, generator=generator, dtype=torch.float64)
    return q, k, v, chunks


def _run(module: nn.Module, q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Drive ``module.forward`` with the given per-head ``q``, ``k``, ``v`` ``(B, H, N, D)`` set at its
    ``qkv`` output; return the ``(q, k, v)`` its ``attend`` received (the set ones if it has none) and the
    heads' output ``(B, H, N, D)`` read at the input of ``proj``."""
    B, H, N, D = q.shape
    weight = next(module.parameters())
    synthetic = torch.stack([q, k, v], 2).permute(0, 3, 2, 1, 4).reshape(B, N, 3 * H * D)  # (B, N, 3·H·D)
    synthetic = synthetic.to(dtype=weight.dtype, device=weight.device)
    used: list[tuple[Tensor, Tensor, Tensor]] = []
    seen: list[Tensor] = []
    calls = [0]

    def set_qkv(_m: nn.Module, _args: Any, _out: Any) -> Tensor:
        calls[0] += 1
        return synthetic

    hooks = [module.qkv.register_forward_hook(set_qkv),
             module.proj.register_forward_pre_hook(lambda _m, args: seen.append(args[0].detach()))]
    original = module.__dict__.get("attend")
    if hasattr(module, "attend"):
        bound = module.attend

        def attend(q_: Tensor, k_: Tensor, v_: Tensor) -> Tensor:
            used.append((q_.detach(), k_.detach(), v_.detach()))
            return bound(q_, k_, v_)

        module.attend = attend  # type: ignore[method-assign]
    recorder = getattr(module, "recorder", None)
    if recorder is not None:
        module.recorder = None  # a capture in progress must not see the probe
    try:
        with torch.no_grad():
            module(torch.zeros(B, N, H * D, dtype=weight.dtype, device=weight.device))
    except Exception as error:  # any failure of a foreign module on the probe: it cannot be classified
        raise _Unprobed(f"its forward raised {type(error).__name__}: {error}") from None
    finally:
        for hook in hooks:
            hook.remove()
        if "attend" in module.__dict__:
            del module.attend
        if original is not None:
            module.attend = original  # type: ignore[method-assign]
        if recorder is not None:
            module.recorder = recorder
    for name, count in (("qkv", calls[0]), ("proj", len(seen)), ("attend", len(used) or 1)):
        if count != 1:
            raise _Unprobed(f"its {name} ran {count} times in one forward (expected once)")
    if seen[0].shape != (B, N, H * D) or (used and any(t.shape != (B, H, N, D) for t in used[0])):
        raise _Unprobed("its heads' tensors do not have the (B, H, N, D) layout of qkv and proj")
    out = seen[0].double().cpu().reshape(B, N, H, D).transpose(1, 2)  # (B, H, N, D)
    if used:
        q, k, v = (t.double().cpu() for t in used[0])
    else:
        q, k, v = (t.to(synthetic.dtype).double() for t in (q, k, v))  # what the module was given, rounded
    return q, k, v, out


class _Unprobed(Exception):
    """The module could not be driven by the probe (the message says why)."""


def _applied(q: Tensor, k: Tensor, v: Tensor, out: Tensor, chunks: int) -> tuple[Tensor, float]:
    """The per-head matrix ``M (P, H, N, N)`` with ``out = M·v`` on every value block of a probe, and the
    relative residual of that fit (how far the module is from linear in ``v``)."""
    P = len(PROBE_SCALES)
    blocks = chunks + 1
    q, k = q.reshape(P, blocks, *q.shape[1:]), k.reshape(P, blocks, *k.shape[1:])
    if not (torch.allclose(q, q[:, :1].expand_as(q)) and torch.allclose(k, k[:, :1].expand_as(k))):
        raise _Unprobed("its queries and keys change with the values")
    V = v.reshape(P, blocks, *v.shape[1:]).permute(0, 2, 3, 1, 4).flatten(-2)  # (P, H, N, blocks·D)
    Y = out.reshape(P, blocks, *out.shape[1:]).permute(0, 2, 3, 1, 4).flatten(-2)  # (P, H, N, blocks·D)
    Mt = lstsq(V.transpose(-2, -1), Y.transpose(-2, -1), what="operator fingerprint: the per-head matrix")  # (P, H, N, N): Mᵀ
    M = Mt.transpose(-2, -1)
    linearity = float(torch.linalg.vector_norm(Y - M @ V) / torch.linalg.vector_norm(Y).clamp_min(1e-300))
    return M, linearity


def _fit(M: Tensor, terms: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
    """Least squares ``M ≈ Σ_m c_m·T_m`` per head, over all probes: ``(coefficients (H, T), residual (H,))``."""
    H = M.shape[1]
    X = torch.stack([t.transpose(0, 1).reshape(H, -1) for t in terms], -1)  # (H, P·N·N, T)
    y = M.transpose(0, 1).reshape(H, -1, 1)  # (H, P·N·N, 1)
    coef = lstsq(X, y, what="operator fingerprint: the fit of the operator's terms")  # (H, T, 1)
    return coef[..., 0], _residual(y, X @ coef)


def _residual(y: Tensor, fit: Tensor) -> Tensor:
    """Relative Frobenius residual per head ``(H,)``."""
    dims = tuple(range(1, y.dim()))
    return torch.linalg.vector_norm(y - fit, dim=dims) / torch.linalg.vector_norm(y, dim=dims).clamp_min(1e-300)


def _series(M: Tensor, A: Tensor, tol: float) -> tuple[dict[str, Any] | None, float]:
    """The shortest truncated series ``s·Σ_{t=t₀}^{T} γᵗ Âᵗ`` that fits ``M`` per head, and the best residual.

    For each ``(t₀, T)`` a free least-squares fit of the powers comes first (a series can fit no better);
    where it fits, ``γ`` is searched on a grid and refined by golden section, ``s = ⟨M, G⟩/⟨G, G⟩``.

    Returns:
        ``(parameters or None, the smallest residual found)``.
    """
    powers = [torch.eye(A.shape[-1], dtype=A.dtype).expand_as(A)]
    for _ in range(MAX_POWER):
        powers.append(powers[-1] @ A)
    H = M.shape[1]
    y = M.transpose(0, 1).reshape(H, -1)  # (H, P·N·N)
    stacked = torch.stack([p.transpose(0, 1).reshape(H, -1) for p in powers], 0)  # (T+1, H, P·N·N)
    best = math.inf
    for top in range(2, MAX_POWER + 1):
        for first in (1, 0):
            _, free = _fit(M, powers[first : top + 1])
            best = min(best, float(free.max()))
            if not bool((free <= tol).all()):
                continue
            exponents = torch.arange(first, top + 1, dtype=torch.float64)
            terms = stacked[first : top + 1]  # (T', H, P·N·N)

            def residual(gamma: Tensor) -> tuple[Tensor, Tensor]:
                # gamma (G, H) → residual and scale (G, H) of s·Σ_t γᵗ Âᵗ, s = <M, G>/<G, G>
                G = torch.einsum("ght,thx->ghx", gamma.unsqueeze(-1) ** exponents, terms)
                s = (G * y).sum(-1) / (G * G).sum(-1).clamp_min(1e-300)
                r = torch.linalg.vector_norm(y - s[..., None] * G, dim=-1) / torch.linalg.vector_norm(y, dim=-1)
                return r, s

            r, _ = residual(_GAMMAS.view(-1, 1).expand(-1, H))
            gamma = _GAMMAS[r.argmin(0)]  # (H,)
            lo, hi = gamma - _STEP, gamma + _STEP
            for _ in range(48):  # golden-section search of each head's γ within its grid cell
                a, b = hi - _GOLD * (hi - lo), lo + _GOLD * (hi - lo)
                ra, rb = residual(torch.stack([a, b]))[0]
                lo, hi = torch.where(ra < rb, lo, a), torch.where(ra < rb, b, hi)
            r, s = (t[0] for t in residual(((lo + hi) / 2).unsqueeze(0)))
            best = min(best, float(r.max()))
            if bool((r <= tol).all()):
                gamma = (lo + hi) / 2
                return {"powers": list(range(first, top + 1)), "gamma": _list(gamma), "scale": _list(s)}, float(r.max())
    return None, best


_STEP = float(_GAMMAS[1] - _GAMMAS[0])
_GOLD = (math.sqrt(5) - 1) / 2


def _list(values: Tensor) -> list[float]:
    return [float(f"{float(v):.6g}") for v in values]


def _classify(module: nn.Module, M: Tensor, q: Tensor, k: Tensor, tol: float) -> tuple[str, dict[str, Any], float, str]:
    """``(operator, parameters, residual, what was found)`` for the per-head matrices ``M (P, H, N, N)``."""
    eps = float(getattr(module, "eps", EPS))
    best: tuple[float, str] = (math.inf, "")
    for variant, cls in ATTENTION_REGISTRY.items():
        A = cls.applied_matrix(q, k, eps=eps)
        if cls.has_rho:
            coef, r = _fit(M, [A])
            if bool((r <= tol).all()) and bool((coef[:, 0] > 0).all()):
                return variant, {"rho": _list(coef[:, 0])}, float(r.max()), f"rho per head {_list(coef[:, 0])}"
        else:
            r = _residual(M.transpose(0, 1).reshape(M.shape[1], -1), A.transpose(0, 1).reshape(M.shape[1], -1))
            if bool((r <= tol).all()):
                return variant, {}, float(r.max()), "no free constant"
        best = min(best, (float(r.max()), variant))
    A_hat = PureInfSAAttention.applied_matrix(q, k, eps=eps)
    pooled = LinearInfSAAttention.applied_matrix(q, k, eps=eps)
    for name, per_token in (("values", torch.eye(M.shape[-1], dtype=M.dtype).expand_as(M)), ("A_hat", A_hat)):
        coef, r = _fit(M, [pooled, per_token])
        if bool((r <= tol).all()):
            parameters = {"pooled": _list(coef[:, 0]), "per_token": name, "per_token_weight": _list(coef[:, 1])}
            return "blend", parameters, float(r.max()), (f"pooled weight {_list(coef[:, 0])}, per-token ({name}) "
                                                         f"weight {_list(coef[:, 1])}")
        best = min(best, (float(r.max()), f"blend of pooled and per-token {name}"))
    series, r_series = _series(M, A_hat, tol)
    if series is not None:
        terms = f"t = {series['powers'][0]}..{series['powers'][-1]}"
        return "neumann", series, r_series, f"s·sum_t gamma^t A_hat^t, {terms}, gamma {series['gamma']}"
    best = min(best, (r_series, "truncated Neumann series of A_hat"))
    return "unknown", {}, best[0], f"closest: {best[1]} (relative residual {best[0]:.3g} > {tol:.1g})"


def fingerprint_layer(module: nn.Module, *, layer: int = 0, seed: int = PROBE_SEED) -> LayerFingerprint:
    """Classify what one attention module computes, from its outputs on synthetic ``q``, ``k``, ``v``.

    Args:
        module: an attention module with ``qkv`` and ``proj`` projections and ``num_heads`` /
            ``head_dim`` (every :class:`~infsa_viz.model.attention.Attention`; the class is not trusted).
        layer: its index, for the record.
        seed: seed of the synthetic inputs (default :data:`PROBE_SEED`).

    Returns:
        A :class:`LayerFingerprint`; modules the probe cannot drive are ``"unknown"`` with the reason.
    """
    declared = getattr(type(module), "variant", None)
    declared = declared if isinstance(declared, str) else None
    heads, dim = getattr(module, "num_heads", None), getattr(module, "head_dim", None)
    if not all(isinstance(getattr(module, name, None), nn.Module) for name in ("qkv", "proj")) \
            or not isinstance(heads, int) or not isinstance(dim, int) or next(module.parameters(), None) is None:
        return LayerFingerprint(layer, declared, "unknown", reason=f"{type(module).__name__} has no qkv and proj "
                                "projections with num_heads and head_dim to drive; its operator cannot be probed")
    tol = _tolerance(next(module.parameters()).dtype)
    generator = torch.Generator().manual_seed(seed)
    q, k, v, chunks = _synthetic(heads, dim, generator=generator)
    P, blocks = q.shape[0], chunks + 1
    flat = (lambda t: t.unsqueeze(1).expand(P, blocks, *t.shape[1:]).flatten(0, 1))
    try:
        q_used, k_used, v_used, out = _run(module, flat(q), flat(k), v.flatten(0, 1))
        M, linearity = _applied(q_used, k_used, v_used, out, chunks)
    except _Unprobed as why:
        return LayerFingerprint(layer, declared, "unknown", tolerance=tol,
                                reason=f"{type(module).__name__} could not be probed: {why}")
    if not torch.isfinite(M).all() or float(torch.linalg.vector_norm(M)) == 0.0:
        return LayerFingerprint(layer, declared, "unknown", linearity=linearity, tolerance=tol,
                                reason="its output on the probes is zero or not finite")
    if linearity > tol:
        return LayerFingerprint(layer, declared, "unknown", linearity=linearity, tolerance=tol,
                                reason=f"its output is not linear in the values (relative residual {linearity:.3g}); "
                                       "no token graph applies")
    q0 = q_used.reshape(P, blocks, *q_used.shape[1:])[:, 0]
    k0 = k_used.reshape(P, blocks, *k_used.shape[1:])[:, 0]
    operator, parameters, residual, found = _classify(module, M, q0, k0, tol)
    record = LayerFingerprint(layer, declared, operator, parameters, residual, linearity, tol, "")
    return _with_reason(record, found)


def _with_reason(record: LayerFingerprint, found: str) -> LayerFingerprint:
    declared = record.declared or "no variant"
    if record.graph_defined:
        reason = f"computes {record.operator}, as its class declares; graph readouts apply"
    elif record.operator == "unknown":
        reason = f"computes no known operator ({found}); graph readouts are not defined"
    elif record.operator in VARIANTS:
        reason = (f"declared {declared} but computes {record.operator} ({found}); graph readouts would read "
                  f"{declared}'s graph, which this layer does not apply")
    elif record.operator == "neumann":
        reason = (f"declared {declared} but computes a truncated Neumann series inside the layer ({found}); the "
                  "graph readouts would read one matrix per layer and sum the series again")
    else:
        reason = (f"declared {declared} but blends Linear-InfSA's pooled context with a per-token term ({found}); "
                  "no single token graph applies")
    return LayerFingerprint(record.layer, record.declared, record.operator, record.parameters, record.residual,
                            record.linearity, record.tolerance, reason)


# -- per model, cached -----------------------------------------------------------------------------

_CACHE: "weakref.WeakKeyDictionary[nn.Module, tuple[Any, tuple[LayerFingerprint, ...]]]" = weakref.WeakKeyDictionary()


def _signature(layers: Sequence[nn.Module]) -> tuple[Any, ...]:
    """Changes when a module is swapped, its class changes or a parameter is replaced or written in place
    (its version counter; parameters made under ``torch.inference_mode`` have none, only their identity)."""
    return tuple((id(m), type(m), tuple((id(p), _version(p)) for p in m.parameters())) for m in layers)


def _version(p: Tensor) -> int | None:
    return None if p.is_inference() else p._version


def fingerprint(model: nn.Module, *, seed: int = PROBE_SEED) -> tuple[LayerFingerprint, ...]:
    """The :class:`LayerFingerprint` of every attention module of ``model``, in forward order (cached).

    Example:
        >>> [f.operator for f in fingerprint(model)]
        ['pure_infsa', 'pure_infsa', 'pure_infsa', 'pure_infsa']

    Raises:
        RuntimeError: ``model`` has no attention module.
    """
    layers = attention_layers(model)
    signature = (seed, _signature(layers))
    cached = _CACHE.get(model)
    if cached is not None and cached[0] == signature:
        return cached[1]
    result = tuple(fingerprint_layer(m, layer=i, seed=seed) for i, m in enumerate(layers))
    _CACHE[model] = (signature, result)
    return result


def require_graph(model: nn.Module, layers: Iterable[int] | None = None, *, what: str = "graph readout") -> None:
    """Raise ``ValueError`` unless every chosen layer computes the variant its class declares.

    Every reading that rebuilds a layer's operator from its class (attention rows, rollout, visits, Perron
    vectors, eigencheck, AttnLRP's explicit pass) calls this first.

    Args:
        model: the model whose attention is read.
        layers: layer indices (negatives count from the end; default all; indices out of range are skipped).
        what: the readout, for the message (e.g. ``"method 'visits'"``).

    Raises:
        ValueError: naming the first refused layer, what it computes and why the readout is not defined.
    """
    prints = fingerprint(model)
    n = len(prints)
    chosen = range(n) if layers is None else [i % n for i in layers
                                              if isinstance(i, int) and not isinstance(i, bool) and -n <= i < n]
    for i in chosen:  # an invalid index is left to the caller's own check, which names it
        if not prints[i].graph_defined:
            raise ValueError(f"{what} refused: attention layer {i} {prints[i].reason}")
