"""The preprocessing contract: what a model needs from its input travels with the model.

Every model's ``config.json`` stores a :class:`Preprocessing` (channel mean and standard
deviation of ``pixel / 255``, how images are resized to the model's side and with which
interpolation); the side and the channel count are the model's own ``img_size`` and
``in_chans``. :func:`prepare` and :func:`preprocess` are the one path from decoded ``uint8``
images to model input, used by training, evaluation, the CLI, the examples and the app, so a
file gives the same logits whichever of them reads it.

Configs written before the preprocessing was stored load with :data:`CLUTTERED_DIGITS`, the
normalisation the shipped models were trained with.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal, Protocol, Sequence, get_args

import numpy as np
import torch
from torch import Tensor


__all__ = [
    "CLUTTERED_DIGITS",
    "RESAMPLES",
    "RESIZES",
    "Prepared",
    "Preprocessing",
    "prepare",
    "preprocess",
]

Resize = Literal["stretch", "center_crop", "pad", "shortest_edge"]
Resample = Literal["auto", "area", "bilinear", "bicubic", "nearest", "lanczos"]
RESIZES: tuple[str, ...] = get_args(Resize)
RESAMPLES: tuple[str, ...] = get_args(Resample)
_EPS = 1e-9  # keeps exact products such as 10 * 0.5 from rounding boxes outwards by float noise


def _numbers(name: str, value: Any) -> tuple[float, ...]:
    values = (value,) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    try:
        out = tuple(float(v) for v in values if not isinstance(v, bool))
    except (TypeError, ValueError):
        out = ()
    if not out or len(out) != len(values) or not all(math.isfinite(v) for v in out):
        raise ValueError(f"{name}={value!r} is invalid; expected a finite number or a list of finite numbers")
    return out


@dataclass(frozen=True)
class Preprocessing:
    """How decoded ``uint8`` images become model input (the model's side and channels aside).

    Each image is converted to the model's channels (gray → repeated RGB, RGB → gray by
    ``cv2.COLOR_RGB2GRAY``), resized to ``img_size × img_size`` and normalised per channel:
    ``(pixel / 255 − mean) / std``.

    Attributes:
        mean: per-channel mean of ``pixel / 255`` to subtract (one value applies to every channel).
        std: per-channel standard deviation to divide by (positive).
        resize: ``"stretch"`` (both sides to ``img_size``, aspect ratio not kept),
            ``"center_crop"`` (shorter side to ``img_size``, aspect kept, centre square cut out) or
            ``"pad"`` (letterbox: longer side to ``img_size``, aspect kept, the image centred on an
            ``img_size`` square; extra pixels on the right/bottom when the margin is odd). Padding
            pixels get the model's mean colour ``round(255 · mean)`` per channel (:meth:`pad_value`),
            so they normalise to ≈ 0, the neutral input; or ``"shortest_edge"`` (any aspect: shorter
            side to ``img_size``, aspect kept, no crop; each side then cut down to a multiple of the
            patch, the right/bottom remainder dropped, which is what a strided patch convolution of
            transformers' or timm's does with it: DINOv2's and CLIP's processors without their
            centre crop). A batch of ``"shortest_edge"`` images must share one aspect (one shape).
        resample: OpenCV interpolation: ``"auto"`` (``INTER_AREA`` when no side grows, else
            ``INTER_LINEAR``), ``"area"``, ``"bilinear"``, ``"bicubic"``, ``"nearest"`` or
            ``"lanczos"``. OpenCV's kernels are not PIL's: a model trained with PIL resizing
            sees pixels that differ by interpolation noise, not by geometry.
        crop_fraction: with ``"stretch"`` or ``"center_crop"``, the fraction of the resized image
            the centre crop keeps (timm's ``crop_pct``; transformers' ``crop_size / size``): the
            image is resized to ``round(img_size / crop_fraction)`` (both sides, or the shorter
            side) and the centre ``img_size`` square cut out. Default 1.0 (no margin cut);
            ``"pad"`` needs 1.0.
    """

    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)
    resize: Resize = "stretch"
    resample: Resample = "auto"
    crop_fraction: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", _numbers("mean", self.mean))
        object.__setattr__(self, "std", _numbers("std", self.std))
        if any(s <= 0 for s in self.std):
            raise ValueError(f"std={list(self.std)} is invalid; expected positive values")
        if self.resize not in RESIZES:
            raise ValueError(f"resize={self.resize!r} is invalid; expected one of {list(RESIZES)}")
        if self.resample not in RESAMPLES:
            raise ValueError(f"resample={self.resample!r} is invalid; expected one of {list(RESAMPLES)}")
        fraction = self.crop_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
            raise ValueError(f"crop_fraction={fraction!r} is invalid; expected a number in (0, 1]")
        if self.resize in ("pad", "shortest_edge") and fraction != 1:
            raise ValueError(f"crop_fraction={fraction!r} is invalid with resize={self.resize!r}; expected 1.0")

    def check_channels(self, channels: int) -> None:
        """Raise ``ValueError`` unless mean and std hold one value or ``channels`` values."""
        for name in ("mean", "std"):
            if len(getattr(self, name)) not in (1, channels):
                raise ValueError(
                    f"preprocessing {name}={list(getattr(self, name))} has {len(getattr(self, name))} values; "
                    f"expected 1 or in_chans={channels}"
                )

    def pad_value(self, channels: int) -> tuple[int, ...]:
        """The uint8 colour of ``resize="pad"`` margins: ``round(255 · mean)`` per channel, clipped."""
        mean = self.mean * channels if len(self.mean) == 1 else self.mean
        return tuple(int(min(255, max(0, round(255 * m)))) for m in mean[:channels])

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "mean": list(self.mean), "std": list(self.std)}

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "preprocessing") -> "Preprocessing":
        """Validate a JSON object; errors name the source, the key and the problem."""
        from .io import dataclass_from_json

        return dataclass_from_json(cls, data, source=source)

    def normalise(self, images: np.ndarray) -> Tensor:
        """``uint8 (n, S, S)`` or ``(n, S, S, C)`` already at the model's size → ``(n, C, S, S)`` float32."""
        x = torch.from_numpy(np.asarray(images, dtype=np.float32)) / 255.0  # a copy: read-only input is fine
        x = x.unsqueeze(1) if x.dim() == 3 else x.permute(0, 3, 1, 2)  # (n, C, S, S)
        channels = x.shape[1]
        mean = torch.tensor(self.mean, dtype=torch.float32).expand(channels).view(1, channels, 1, 1)
        std = torch.tensor(self.std, dtype=torch.float32).expand(channels).view(1, channels, 1, 1)
        return (x - mean) / std


#: The normalisation of the cluttered-digits benchmark (mean and standard deviation of
#: ``pixel / 255`` measured on 50,000 training images; re-measured in tests/data): the input of
#: the shipped models, and the preprocessing of configs written before it was stored.
CLUTTERED_DIGITS = Preprocessing(mean=(0.1663,), std=(0.2046,))


@dataclass(frozen=True)
class Prepared:
    """Images as a model sees them.

    Attributes:
        tensor: ``(n, C, S, S)`` float32 model input.
        display: ``n`` uint8 images ``(S, S)`` or ``(S, S, 3)``: the resized pixels before
            normalisation (what an overlay is drawn on).
        scales: ``(n, 4)`` ``(sx, sy, dx, dy)``: a source pixel coordinate ``x`` lands at
            ``x·sx − dx`` in the model's input (see :meth:`boxes`).
    """

    tensor: Tensor
    display: list[np.ndarray]
    scales: np.ndarray

    def take(self, rows: Sequence[int] | np.ndarray) -> Prepared:
        """The images at ``rows``, as prepared (no preprocessing runs again)."""
        rows = np.asarray(rows, dtype=np.int64)
        return Prepared(self.tensor[torch.as_tensor(rows)], [self.display[int(i)] for i in rows], self.scales[rows])

    def boxes(self, index: int, boxes: Any) -> np.ndarray:
        """Boxes ``(K, 4)`` ``(x0, y0, x1, y1)`` in pixels of source image ``index`` → pixels of
        the model's input, rounded outwards (start floored, end ceiled) and clipped to the image."""
        b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        sx, sy, dx, dy = self.scales[index]
        H, W = self.tensor.shape[-2:]
        x0 = np.floor(b[:, 0] * sx - dx + _EPS)
        y0 = np.floor(b[:, 1] * sy - dy + _EPS)
        x1 = np.ceil(b[:, 2] * sx - dx - _EPS)
        y1 = np.ceil(b[:, 3] * sy - dy - _EPS)
        limits = np.array([W, H, W, H])
        return np.clip(np.stack([x0, y0, x1, y1], axis=1), 0, limits).astype(np.int64)

    def masks(self, index: int, masks: Any) -> np.ndarray:
        """Boolean pixel masks ``(K, H, W)`` (or one ``(H, W)``) of source image ``index`` → ``(K, S, S)
        bool`` in the model's input: each mask follows the image's resize (as coverage: ``INTER_AREA``
        when no side grows, else ``INTER_LINEAR``, whatever the model's resample) and its crop or pad
        (margins are outside every mask), and keeps the pixels more than half covered, so disjoint
        masks stay disjoint."""
        import cv2

        planes = np.asarray(masks, dtype=bool)
        planes = planes[None] if planes.ndim == 2 else planes
        if planes.ndim != 3:
            raise ValueError(f"masks has shape {planes.shape}; expected (K, H, W) or (H, W) source-pixel masks")
        sx, sy, dx, dy = self.scales[index]
        (H, W), (h, w) = self.tensor.shape[-2:], planes.shape[1:]
        out_w, out_h, x0, y0 = round(w * sx), round(h * sy), int(dx), int(dy)
        out = np.zeros((len(planes), H, W), dtype=bool)
        for k, plane in enumerate(planes.astype(np.float32)):
            if (out_h, out_w) != (h, w):
                shrinking = out_w <= w and out_h <= h
                plane = cv2.resize(plane, (out_w, out_h), interpolation=cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR)
            kept = plane[max(y0, 0) : y0 + H, max(x0, 0) : x0 + W] > 0.5  # a crop (dx, dy >= 0) …
            out[k, max(-y0, 0) :, max(-x0, 0) :][: kept.shape[0], : kept.shape[1]] = kept  # … or a pad
        return out


def _interpolation(resample: str, shrinking: bool) -> int:
    import cv2

    if resample == "auto":
        return cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR
    return {"area": cv2.INTER_AREA, "bilinear": cv2.INTER_LINEAR, "bicubic": cv2.INTER_CUBIC,
            "nearest": cv2.INTER_NEAREST_EXACT, "lanczos": cv2.INTER_LANCZOS4}[resample]


def _to_channels(image: np.ndarray, channels: int) -> np.ndarray:
    import cv2

    if image.ndim == 3 and image.shape[2] == 1:
        image = image[..., 0]
    if image.ndim == 3 and image.shape[2] == 4:
        image = image[..., :3]
    if channels == 1:
        return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image
    return image if image.ndim == 3 else np.repeat(image[..., None], 3, axis=-1)


def _resize(image: np.ndarray, size: int, how: Preprocessing, patch: int = 1) -> tuple[np.ndarray, tuple[float, ...]]:
    import cv2

    h, w = image.shape[:2]
    resized = max(size, round(size / how.crop_fraction))  # the side before the centre crop
    if how.resize == "shortest_edge":  # transformers' get_resize_output_image_size: the long side truncated
        short, long = (w, h) if w <= h else (h, w)
        new_long = int(size * long / short)
        out_w, out_h = (size, new_long) if w <= h else (new_long, size)
        if (out_h, out_w) != (h, w):
            image = cv2.resize(image, (out_w, out_h), interpolation=_interpolation(how.resample, out_w <= w and out_h <= h))
        keep_h, keep_w = max(patch, out_h - out_h % patch), max(patch, out_w - out_w % patch)
        return np.ascontiguousarray(image[:keep_h, :keep_w]), (out_w / w, out_h / h, 0.0, 0.0)
    if how.resize == "stretch":
        out_w, out_h = resized, resized
    elif how.resize == "pad":
        scale = size / max(h, w)
        out_w, out_h = min(size, max(1, round(w * scale))), min(size, max(1, round(h * scale)))
    else:
        scale = resized / min(h, w)
        out_w, out_h = max(resized, round(w * scale)), max(resized, round(h * scale))
    sx, sy = out_w / w, out_h / h
    if (out_h, out_w) != (h, w):
        interpolation = _interpolation(how.resample, out_w <= w and out_h <= h)
        image = cv2.resize(image, (out_w, out_h), interpolation=interpolation)
    if how.resize == "pad":  # centre on a size × size canvas of the mean colour; dx, dy ≤ 0
        left, top = (size - out_w) // 2, (size - out_h) // 2
        channels = 1 if image.ndim == 2 else image.shape[2]
        canvas = np.empty((size, size) + image.shape[2:], dtype=np.uint8)
        canvas[...] = np.array(how.pad_value(channels), dtype=np.uint8).reshape((-1,) if channels > 1 else ())
        canvas[top : top + out_h, left : left + out_w] = image
        return canvas, (sx, sy, -float(left), -float(top))
    dx, dy = (out_w - size) // 2, (out_h - size) // 2
    return np.ascontiguousarray(image[dy : dy + size, dx : dx + size]), (sx, sy, float(dx), float(dy))


def _check_image(index: int, image: Any) -> np.ndarray:
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8:
        raise TypeError(
            f"images[{index}] has type {type(image).__name__} (dtype {getattr(image, 'dtype', None)}); "
            "expected a uint8 numpy array (decode files with infsa_viz.images.read_image)"
        )
    if image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[2] not in (1, 3, 4)) or 0 in image.shape:
        raise ValueError(f"images[{index}] has shape {image.shape}; expected (H, W), (H, W, 3) or (H, W, 4)")
    return image


class InputSpec(Protocol):
    """What :func:`prepare` reads from a model's config (a :class:`~infsa_viz.model.config.ViTConfig`)."""

    preprocessing: Preprocessing
    img_size: int
    in_chans: int


def _config(model: Any) -> InputSpec:
    config = getattr(model, "config", model)
    if not hasattr(config, "preprocessing"):
        raise TypeError(f"model has type {type(model).__name__}; expected a VisionTransformer or a ViTConfig")
    return config


def prepare(model: Any, images: np.ndarray | Sequence[np.ndarray]) -> Prepared:
    """Decoded images → the model's input, its display pixels and the box mapping.

    Args:
        model: a :class:`~infsa_viz.model.vit.VisionTransformer` or its :class:`~infsa_viz.model.config.ViTConfig`.
        images: a uint8 batch ``(n, H, W)`` / ``(n, H, W, C)`` or a sequence of uint8 images
            ``(H, W)`` / ``(H, W, 3|4)`` of any sizes (RGB channel order, alpha ignored).

    Returns:
        :class:`Prepared`.

    Raises:
        TypeError: images that are not uint8 arrays.
        ValueError: images of an unsupported shape, or an empty batch.
    """
    config = _config(model)
    how, size, channels = config.preprocessing, config.img_size, config.in_chans
    batch = isinstance(images, np.ndarray)
    if batch and (images.ndim not in (3, 4)):
        raise ValueError(f"images has shape {images.shape}; expected a batch (n, H, W) or (n, H, W, C)")
    if len(images) == 0:
        raise ValueError("images is empty; expected at least one image")
    if batch and how.resize != "shortest_edge":
        same_size = _check_image(0, images[0]).shape[:2] == (size, size)
        same_channels = (images.ndim == 3 and channels == 1) or (images.ndim == 4 and images.shape[-1] == channels == 3)
        if same_size and same_channels:  # fast path: the batch is already at the model's size and channels
            identity = np.tile(np.array([1.0, 1.0, 0.0, 0.0]), (len(images), 1))
            return Prepared(how.normalise(images), list(images), identity)
    shown, scales = [], []
    patch = int(getattr(config, "patch_size", 1))
    for i, image in enumerate(images):
        resized, scale = _resize(_to_channels(_check_image(i, image), channels), size, how, patch)
        shown.append(resized)
        scales.append(scale)
    shapes = sorted({im.shape[:2] for im in shown})
    if len(shapes) > 1:
        raise ValueError(f"resize='shortest_edge' keeps each image's aspect: these images become {shapes[:4]}; "
                         "expected one shape per batch (prepare images of one aspect together)")
    return Prepared(how.normalise(np.stack(shown)), shown, np.array(scales, dtype=np.float64))


def preprocess(model: Any, images: np.ndarray | Sequence[np.ndarray]) -> Tensor:
    """Decoded uint8 images → model input ``(n, C, S, S)`` float32 (see :func:`prepare`).

    Example:
        >>> x = preprocess(model, [read_image("photo.jpg")])  # (1, C, S, S)
        >>> logits = model(x)
    """
    return prepare(model, images).tensor
