"""infsa-viz: read the attention of softmax, InfSA and Linear-InfSA vision transformers.

The flat public API re-exports the library's main names. ``import infsa_viz`` needs only
torch and numpy: OpenCV, scikit-learn, Captum, Streamlit and plotly are imported by the
functions that use them.
"""

from ._version import __version__
from .attention import (
    ATTENTION_REGISTRY,
    VARIANTS,
    LinearInfSAAttention,
    PureInfSAAttention,
    SoftmaxAttention,
    build_attention,
    infsa_affinity,
    linear_infsa_weights,
    softmax_matrix,
)
from .capture import AttentionRecord, capture_attention, record_attention
from .preprocess import Prepared, Preprocessing, prepare, preprocess
from .formats import load_model
from .vit import ViTConfig, VisionTransformer, save_model

__all__ = [
    "ATTENTION_REGISTRY",
    "AttentionRecord",
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
    "infsa_affinity",
    "linear_infsa_weights",
    "load_model",
    "prepare",
    "preprocess",
    "record_attention",
    "save_model",
    "softmax_matrix",
]
