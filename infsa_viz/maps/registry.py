"""One registry of explanation methods and one verb: ``explain(model, images, method=…)``.

A map is a per-token importance on the ViT patch grid, ``(B, h, w)``, higher = more important.
Attention and spectral maps are read from the model's own attention (see :mod:`infsa_viz.capture`
and :mod:`infsa_viz.spectral`); Captum maps come from Captum itself, pooled to patches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import Tensor, nn

from .attention_maps import attention_map, random_map
from .captum_maps import CAPTUM_METHODS, captum_map

__all__ = ["METHODS", "MapMethod", "MapResult", "SOFTMAX_GAMMA", "explain", "explain_with_metadata"]

#: Discount used for softmax models' visits / Neumann maps when the caller gives none: the
#: row-stochastic matrix has spectral radius 1 and no learned ρ, so a γ < 1 must be stated.
SOFTMAX_GAMMA = 0.9


@dataclass(frozen=True)
class MapMethod:
    """A registered explanation method.

    Attributes:
        name: registry key.
        family: ``"attention"``, ``"spectral"``, ``"gradient"`` (Captum) or ``"baseline"``.
        description: one line for help texts and the app.
        options: the options the method accepts, with defaults.
        layer_options: whether ``layer``/``head`` selectors apply (the app shows them).
    """

    name: str
    family: str
    description: str
    options: dict[str, Any] = field(default_factory=dict)
    layer_options: bool = False


@dataclass
class MapResult:
    """``map (B, h, w)`` plus the resolved method, options and what was computed."""

    map: Tensor
    method: str
    options: dict[str, Any]
    metadata: dict[str, Any]


def _spectral(name: str) -> Callable[..., Any]:
    from .. import spectral

    return getattr(spectral, name)


def _variant(model: nn.Module) -> str:
    config = getattr(model, "config", None)
    return getattr(config, "attention", "unknown")


def _run_attention(model, images, targets, opts):
    m = attention_map(model, images, **opts)
    return m, {"matrix": "what the layer applies (softmax P, pure Â, linear 1·aᵀ)", **opts}


def _run_spectral(fn_name: str, gamma_key: bool):
    def run(model, images, targets, opts):
        opts = dict(opts)
        if gamma_key and opts.get("gamma") is None and _variant(model) == "softmax":
            opts["gamma"] = SOFTMAX_GAMMA
        result = _spectral(fn_name)(model, images, **opts)
        return result.map, result.metadata
    return run


def _run_random(model, images, targets, opts):
    p = model.patch_size
    return random_map(images, (images.shape[-2] // p, images.shape[-1] // p), **opts), {"seed": opts.get("seed", 0)}


def _run_captum(name: str):
    def run(model, images, targets, opts):
        m = captum_map(model, images, name, targets=targets, patch_size=model.patch_size, **opts)
        return m, {"captum": CAPTUM_METHODS[name], "target": "given targets", **opts}
    return run


METHODS: dict[str, MapMethod] = {m.name: m for m in (
    MapMethod("attention", "attention", "raw attention of one layer: CLS (or mean) row, heads fused",
              {"layer": -1, "head": None, "head_fusion": "mean", "row": "cls"}, True),
    MapMethod("rollout", "attention", "attention rollout across layers (Abnar & Zuidema 2020)",
              {"head_fusion": "mean", "add_residual": True, "matrix": "native", "start": "auto"}),
    MapMethod("visits", "spectral", "expected visits s^T (I - gamma A)^-1 of one layer's graph",
              {"layer": -1, "head": "mean", "gamma": None, "start": "auto", "matrix": "native"}, True),
    MapMethod("neumann", "spectral", "Neumann series across layers s^T sum_t gamma^t A(t)...A(1)",
              {"gamma": None, "head": "mean", "start": "auto", "matrix": "native"}),
    MapMethod("perron", "spectral", "dense left Perron vector of one layer's graph",
              {"layer": -1, "head": "mean", "side": "left", "matrix": "native"}, True),
    MapMethod("linear_estimate", "spectral", "Linear-InfSA's Perron estimate a from one layer's q, k",
              {"layer": -1, "head": "mean"}, True),
    MapMethod("integrated_gradients", "gradient", "Captum IntegratedGradients, summed per patch",
              {"n_steps": 32, "baseline": 0.0}),
    MapMethod("saliency", "gradient", "Captum Saliency |d logit / d pixel|, summed per patch", {}),
    MapMethod("input_x_gradient", "gradient", "Captum InputXGradient, summed per patch", {}),
    MapMethod("occlusion", "gradient", "Captum FeatureAblation with a patch feature mask (logit drop)",
              {"baseline": 0.0}),
    MapMethod("random", "baseline", "seeded uniform noise: the chance baseline", {"seed": 0}),
)}

_RUNNERS: dict[str, Callable[..., tuple[Tensor, dict[str, Any]]]] = {
    "attention": _run_attention,
    "rollout": _run_spectral("model_rollout", False),
    "visits": _run_spectral("model_visits", True),
    "neumann": _run_spectral("model_neumann", True),
    "perron": _run_spectral("model_perron", False),
    "linear_estimate": _run_spectral("model_linear_estimate", False),
    "random": _run_random,
    **{name: _run_captum(name) for name in CAPTUM_METHODS},
}


def check_method(method: str) -> MapMethod:
    if method not in METHODS:
        raise ValueError(f"method={method!r} is not a known map method; expected one of {list(METHODS)}")
    return METHODS[method]


def explain_with_metadata(
    model: nn.Module, images: Tensor, method: str, *, targets: Tensor | None = None, **options: Any
) -> MapResult:
    """Compute ``method``'s map for each image, with the resolved options and metadata.

    Args:
        model: a :class:`~infsa_viz.vit.VisionTransformer` (any variant).
        images: ``(B, C, H, W)`` normalised images.
        method: a key of :data:`METHODS`.
        targets: class per image ``(B,)`` for Captum methods (default: the predicted class).
        **options: method options (see ``METHODS[method].options``); unknown ones are refused.

    Raises:
        ValueError: unknown method or option, or an option value the method rejects.
    """
    spec = check_method(method)
    unknown = sorted(set(options) - set(spec.options))
    if unknown:
        raise ValueError(f"options {unknown} do not apply to method {method!r}; it accepts {sorted(spec.options)}")
    resolved = {**spec.options, **options}
    model.eval()
    if spec.family == "gradient" and targets is None:
        with torch.no_grad():
            targets = model(images).argmax(-1)
    m, meta = _RUNNERS[method](model, images, targets, resolved)
    return MapResult(map=m.detach().float(), method=method, options=resolved,
                     metadata={"variant": _variant(model), **meta})


def explain(model: nn.Module, images: Tensor, method: str, *, targets: Tensor | None = None,
            **options: Any) -> Tensor:
    """Map ``(B, h, w)`` of ``method`` for each image (see :func:`explain_with_metadata`).

    Example:
        >>> maps = explain(model, images, "visits")          # (B, h, w)
        >>> maps = explain(model, images, "attention", layer=0, head=1)
    """
    return explain_with_metadata(model, images, method, targets=targets, **options).map
