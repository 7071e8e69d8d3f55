"""The model: attention operators, the Vision Transformer, its config and files, and capture.

* :mod:`.functional`: the attention formulas as functions of ``q`` and ``k``.
* :mod:`.blockwise`: pure InfSA in tiles, without the ``N × N`` matrix.
* :mod:`.attention`: the three attention modules and the one variant registry.
* :mod:`.config`: :class:`ViTConfig`, the architecture with the model's preprocessing.
* :mod:`.vit`: :class:`VisionTransformer`.
* :mod:`.files`: :func:`save_model` (``config.json`` + ``model.safetensors``).
* :mod:`.capture`: :func:`record_attention`, attention read out from outside the model.

Reading a saved model of any format is :func:`infsa_viz.formats.load_model`.
"""

from .attention import (
    ATTENTION_REGISTRY,
    BLOCKWISE_MIN_TOKENS,
    DEFAULT_VARIANT,
    INFSA_IMPLS,
    VARIANTS,
    Attention,
    LinearInfSAAttention,
    PureInfSAAttention,
    SoftmaxAttention,
    build_attention,
    check_impl,
    check_variant,
    set_infsa_impl,
)
from .blockwise import EPS, KEY_BLOCK, TILE_ELEMENTS, blockwise_infsa, tile_sizes, tiled_relu_product
from .capture import AttentionRecord, AttentionRecorder, attention_layers, capture_attention, record_attention
from .config import ACTIVATIONS, MAX_WIDTH, POOLS, ViTConfig, num_tokens
from .files import CONFIG_FILE, WEIGHTS_FILE, save_model
from .functional import (
    accumulation_dtype,
    check_qk,
    half_gradient,
    infsa_affinity,
    linear_infsa_weights,
    softmax_matrix,
)
from .vit import VisionTransformer, count_parameters, state_shapes

__all__ = [
    "ACTIVATIONS",
    "ATTENTION_REGISTRY",
    "Attention",
    "AttentionRecord",
    "AttentionRecorder",
    "BLOCKWISE_MIN_TOKENS",
    "CONFIG_FILE",
    "DEFAULT_VARIANT",
    "EPS",
    "INFSA_IMPLS",
    "KEY_BLOCK",
    "LinearInfSAAttention",
    "MAX_WIDTH",
    "POOLS",
    "PureInfSAAttention",
    "SoftmaxAttention",
    "TILE_ELEMENTS",
    "VARIANTS",
    "ViTConfig",
    "VisionTransformer",
    "WEIGHTS_FILE",
    "accumulation_dtype",
    "attention_layers",
    "blockwise_infsa",
    "build_attention",
    "capture_attention",
    "check_impl",
    "check_qk",
    "check_variant",
    "count_parameters",
    "half_gradient",
    "infsa_affinity",
    "linear_infsa_weights",
    "num_tokens",
    "record_attention",
    "save_model",
    "set_infsa_impl",
    "softmax_matrix",
    "state_shapes",
    "tile_sizes",
    "tiled_relu_product",
]
