"""infsa-viz: read the attention of softmax, InfSA and Linear-InfSA vision transformers.

The flat public API re-exports the library's main names: the verbs a user calls
(:func:`load_model`, :func:`forward_record`, :func:`attribute`, :func:`evaluate`) and the registries they read
(:data:`METHODS`, :data:`METRICS`). ``import infsa_viz`` needs only torch and numpy: the map,
metric and evaluation names are imported on first use, and OpenCV, scikit-learn, Captum,
Streamlit and plotly by the functions that use them.

Example:
    >>> import infsa_viz
    >>> model = infsa_viz.load_model("models/pure-infsa-vit4")
    >>> record = infsa_viz.forward_record(model, images)       # one forward, read by every map
    >>> infsa_viz.attribute(record, "visits").maps             # (B, h, w)
    >>> infsa_viz.attribute_images(model, images, "visits")    # the same: builds the record itself
"""

from importlib import import_module
from typing import Any

from ._version import __version__
from .formats import load_model
from .forward import ForwardRecord, forward_record
from .model import (
    ATTENTION_REGISTRY,
    VARIANTS,
    AttentionRecord,
    LinearInfSAAttention,
    PureInfSAAttention,
    SoftmaxAttention,
    ViTConfig,
    VisionTransformer,
    build_attention,
    capture_attention,
    infsa_affinity,
    linear_infsa_weights,
    record_attention,
    save_model,
    softmax_matrix,
)
from .preprocess import Prepared, Preprocessing, prepare, preprocess
from .targets import Target

#: Names imported on first use: their modules pull in the map methods and metrics.
_LAZY = {
    "METHODS": "maps", "GroundTruth": "maps", "MapResult": "maps", "attribute": "maps", "attribute_images": "maps",
    "METRICS": "metrics", "Figure": "metrics", "Metric": "metrics", "register_metric": "metrics",
    "EvalSettings": "evaluation", "evaluate": "evaluation", "score_images": "evaluation",
    "write_evaluation": "evaluation",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'infsa_viz' has no attribute {name!r}")

__all__ = [
    "ATTENTION_REGISTRY",
    "AttentionRecord",
    "EvalSettings",
    "Figure",
    "ForwardRecord",
    "GroundTruth",
    "MapResult",
    "METHODS",
    "METRICS",
    "Metric",
    "Target",
    "attribute",
    "attribute_images",
    "evaluate",
    "register_metric",
    "score_images",
    "write_evaluation",
    "LinearInfSAAttention",
    "Prepared",
    "Preprocessing",
    "PureInfSAAttention",
    "SoftmaxAttention",
    "VARIANTS",
    "ViTConfig",
    "VisionTransformer",
    "__version__",
    "build_attention",
    "capture_attention",
    "forward_record",
    "infsa_affinity",
    "linear_infsa_weights",
    "load_model",
    "prepare",
    "preprocess",
    "record_attention",
    "save_model",
    "softmax_matrix",
]
