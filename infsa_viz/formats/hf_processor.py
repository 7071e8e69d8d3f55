"""A transformers ``preprocessor_config.json`` → our :class:`~infsa_viz.preprocess.Preprocessing`.

Which defaults fill the keys a file leaves out is decided as transformers' ``AutoImageProcessor``
decides which class to build: the file's ``image_processor_type`` (or the older
``feature_extractor_type``) names the class; only without one does the model's ``model_type``
choose. So a DeiT model saved with a ``ViTImageProcessor`` config is resized like a ViT, without
DeiT's 224-from-256 centre crop. Every value is checked: one line names the file, the key and
what was expected.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from ..model.config import MAX_WIDTH
from ..preprocess import Preprocessing

__all__ = ["PROCESSOR_CLASSES", "PROCESSOR_FILE", "preprocessing_from_hf", "processor_family", "square_size"]

logger = logging.getLogger(__name__)

PREPROCESSOR_FILE = PROCESSOR_FILE = "preprocessor_config.json"
#: PIL resampling codes (transformers' ``resample``) → our OpenCV interpolation.
_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)  # transformers' OPENAI_CLIP_MEAN / _STD
_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
_PIL_RESAMPLE = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "area", 5: "bilinear"}
#: The image processors' class defaults (transformers' ``ViTImageProcessor`` / ``DeiTImageProcessor``
#: ``__init__``), used for keys a preprocessor_config.json leaves out.
_PROCESSOR_DEFAULTS: dict[str, dict[str, Any]] = {
    "vit": {"image_mean": [0.5] * 3, "image_std": [0.5] * 3, "size": {"height": 224, "width": 224},
            "resample": 2, "do_center_crop": False},
    "deit": {"image_mean": [0.5] * 3, "image_std": [0.5] * 3, "size": {"height": 256, "width": 256},
             "resample": 3, "do_center_crop": True, "crop_size": {"height": 224, "width": 224}},
    # BitImageProcessor (DINOv2's) and CLIPImageProcessor share their defaults: OpenAI CLIP's mean and std.
    "bit": {"image_mean": list(_CLIP_MEAN), "image_std": list(_CLIP_STD), "size": {"shortest_edge": 224},
            "resample": 3, "do_center_crop": True, "crop_size": {"height": 224, "width": 224}},
    "clip": {"image_mean": list(_CLIP_MEAN), "image_std": list(_CLIP_STD), "size": {"shortest_edge": 224},
             "resample": 3, "do_center_crop": True, "crop_size": {"height": 224, "width": 224}},
}
#: ``model_type`` → the processor family transformers' ``AutoImageProcessor`` maps it to.
_MODEL_PROCESSORS = {"vit": "vit", "deit": "deit", "dinov2": "bit", "dinov2_with_registers": "bit",
                     "clip": "clip", "clip_vision_model": "clip"}
#: transformers processor classes (``image_processor_type``) read here → their defaults' family.
PROCESSOR_CLASSES: dict[str, str] = {
    f"{family}{kind}{backend}": family.lower()
    for family in ("ViT", "DeiT", "Bit", "CLIP")
    for kind in ("ImageProcessor", "FeatureExtractor")
    for backend in ("", "Fast", "Pil")
}


def processor_family(processor: dict[str, Any], *, model_type: str, source: str) -> str:
    """Whose defaults fill the missing keys (``"vit"``, ``"deit"``, ``"bit"``, ``"clip"``), as transformers decides.

    Raises:
        ValueError: an ``image_processor_type`` this toolkit does not know the defaults of.
    """
    for key in ("image_processor_type", "feature_extractor_type"):
        name = processor.get(key)
        if name is None:
            continue
        if not isinstance(name, str) or name not in PROCESSOR_CLASSES:
            raise ValueError(f"{source}: {key}={name!r} is not an image processor this toolkit reads; expected "
                             f"one of {sorted(PROCESSOR_CLASSES)}")
        return PROCESSOR_CLASSES[name]
    return _MODEL_PROCESSORS.get(model_type, "vit")


def _flag(p: dict[str, Any], key: str, source: str) -> bool:
    value = p.get(key, key != "do_center_crop")
    if not isinstance(value, bool):
        raise ValueError(f"{source}: {key}={value!r} is invalid; expected true or false")
    return value


def _positive(value: Any, key: str, source: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise ValueError(f"{source}: {key}={value!r} is invalid; expected a positive finite number")
    return float(value)


def _numbers(value: Any, key: str, source: str, *, positive: bool) -> list[float]:
    values = value if isinstance(value, list) else [value]
    ok = values and all(not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
                        and (v > 0 or not positive) for v in values)
    if not ok:
        raise ValueError(f"{source}: {key}={value!r} is invalid; expected a finite {'positive ' if positive else ''}"
                         "number or a list of them (one per channel)")
    return [float(v) for v in values]


def square_size(value: Any, name: str, source: str) -> int:
    """One side from an int or a list of equal ints (a square), ``1 .. MAX_WIDTH``; ``ValueError`` naming
    ``source`` and ``name`` otherwise."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if (not values or any(isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_WIDTH for v in values)
            or len(set(values)) != 1):
        raise ValueError(f"{source}: {name}={value!r} is not supported; expected one integer (square) from 1 to "
                         f"{MAX_WIDTH:,}")
    return values[0]


def _side(value: Any, name: str, source: str) -> tuple[str, int]:
    """An image processor ``size``/``crop_size`` → ("square" | "shortest_edge", side)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return "square", square_size(value, name, source)
    if isinstance(value, dict) and "shortest_edge" in value and value.get("longest_edge") is None:
        return "shortest_edge", square_size(value["shortest_edge"], name, source)
    if isinstance(value, dict) and {"height", "width"} <= set(value):
        return "square", square_size([value["height"], value["width"]], name, source)
    raise ValueError(f"{source}: {name}={value!r} is not supported; expected an int, "
                     "{'height': S, 'width': S} or {'shortest_edge': S}")


def preprocessing_from_hf(processor: Any, *, img_size: int, model_type: str = "vit",
                          source: str = PROCESSOR_FILE) -> Preprocessing:
    """A transformers image-processor config (JSON) → our :class:`~infsa_viz.preprocess.Preprocessing`.

    transformers computes ``(pixel · rescale_factor − image_mean) / image_std`` after resizing
    (``size``, PIL ``resample``) and an optional centre crop (``crop_size``); we compute
    ``(pixel / 255 − mean) / std``, so ``mean = image_mean / (255 · rescale_factor)`` and
    likewise ``std`` (``rescale_factor`` is 1 when ``do_rescale`` is false; ``do_normalize``
    false means mean 0, std 1). A ``{height, width}`` size stretches, a ``shortest_edge`` size
    keeps the aspect ratio: with the centre crop (``do_center_crop``), one of side ``c`` from side
    ``s`` is ``crop_fraction = c/s``; without it the image keeps its aspect (``resize="shortest_edge"``,
    any input grid: DINOv2's usual input).
    Keys left out take the defaults of the processor class the file names
    (:func:`processor_family`), as transformers does.

    Raises:
        ValueError: naming ``source`` and the key: a value of the wrong type or range, non-square
            sizes, a crop larger than the resized image, or an unknown processor class.
    """
    if not isinstance(processor, dict):
        raise ValueError(f"{source}: expected a JSON object")
    family = processor_family(processor, model_type=model_type, source=source)
    p = {**_PROCESSOR_DEFAULTS[family], **processor}
    factor = _positive(p.get("rescale_factor", 1 / 255), "rescale_factor", source) if _flag(p, "do_rescale", source) \
        else 1.0
    if _flag(p, "do_normalize", source):
        mean = [m / (255 * factor) for m in _numbers(p.get("image_mean"), "image_mean", source, positive=False)]
        std = [s / (255 * factor) for s in _numbers(p.get("image_std"), "image_std", source, positive=True)]
    else:
        mean, std = [0.0], [1.0 / (255 * factor)]
    code = p.get("resample", 2)
    resample = None if isinstance(code, bool) or not isinstance(code, int) else _PIL_RESAMPLE.get(code)
    if resample is None:
        raise ValueError(f"{source}: resample={code!r} is not a PIL resampling code 0..5")
    if code == 5:
        logger.warning("%s: PIL's hamming filter has no OpenCV equivalent; resizing bilinearly", source)
    resizing = _flag(p, "do_resize", source)
    kind, side = _side(p.get("size", img_size), "size", source) if resizing else ("square", img_size)
    if not resizing:
        logger.warning("%s: do_resize is false; images are still resized to the model's %d pixels", source, img_size)
    fraction = 1.0
    crop_kept = _flag(p, "do_center_crop", source)
    if crop_kept:
        crop = _side(p.get("crop_size", img_size), "crop_size", source)[1]
        if crop > side:
            raise ValueError(f"{source}: crop_size {crop} is larger than the resized side {side}")
        if crop != img_size:
            logger.warning("%s: crop_size %d differs from the model's image_size %d; using the model's", source,
                           crop, img_size)
        fraction = crop / side
    elif side != img_size:
        logger.warning("%s: size %d differs from the model's image_size %d; using the model's", source, side, img_size)
    try:
        return Preprocessing(mean=tuple(mean), std=tuple(std), resample=resample, crop_fraction=fraction,
                             resize=("center_crop" if fraction != 1 or crop_kept else "shortest_edge")
                             if kind == "shortest_edge" else "stretch")
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from None
