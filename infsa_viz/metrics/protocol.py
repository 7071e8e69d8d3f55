"""The evaluation protocols, written out: every choice of every metric in one resolved record.

The InfSA paper does not publish its MoRF/LeRF and localisation protocols, so ours are defined
here explicitly. Each metric builds one of these frozen dataclasses from its (validated)
options and returns ``protocol.to_dict()`` with its result: the resolved settings plus the
fixed rules, as a JSON-serialisable dict, ready to be saved next to the numbers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ._checks import check_choice, check_float, check_int

__all__ = [
    "BASELINES",
    "EXPLAINED_CLASSES",
    "ORDERS",
    "SELECTIONS",
    "STEP_GRIDS",
    "BoxAUCProtocol",
    "PerturbationProtocol",
    "PointingProtocol",
]

Order = Literal["morf", "lerf", "both"]
Baseline = Literal["mean", "zero", "blur", "uniform"]
Explained = Literal["target", "predicted"]
Selection = Literal["correct", "all"]
Level = Literal["pixel", "patch"]
Upsample = Literal["bilinear", "nearest"]
Ties = Literal["any", "first"]
StepGrid = Literal["uniform", "cosine"]

# The option lists, read from the aliases so that each list is written once.
ORDERS: tuple[str, ...] = get_args(Order)
BASELINES: tuple[str, ...] = get_args(Baseline)
EXPLAINED_CLASSES: tuple[str, ...] = get_args(Explained)
SELECTIONS: tuple[str, ...] = get_args(Selection)
LEVELS: tuple[str, ...] = get_args(Level)
UPSAMPLES: tuple[str, ...] = get_args(Upsample)
TIES: tuple[str, ...] = get_args(Ties)
STEP_GRIDS: tuple[str, ...] = get_args(StepGrid)

#: The patches removed at step ``k`` of each step grid (:func:`~infsa_viz.metrics.perturbation.removed_counts`).
STEP_GRID_RULES = {
    "uniform": "n_k = floor(k*h*w/steps + 1/2) patches (round half up)",
    "cosine": "n_k = floor(h*w*(1 - cos(pi*k/steps))/2 + 1/2) patches (denser at both ends, where MoRF and "
              "LeRF curves move)",
}

# Reference tolerance of the pointing game (Zhang et al., 2016): 15 px on 224 px images.
POINTING_REFERENCE_TOLERANCE = 15.0
POINTING_REFERENCE_SIZE = 224

_BASELINE_RULES = {
    "mean": "removed pixels set to 0.0, the dataset mean of inputs normalised by the training set's mean and std",
    "zero": "removed pixels set to baseline_value, the caller's normalised value of a black pixel",
    "blur": "removed pixels taken from cv2.GaussianBlur(image, ksize=(0, 0), sigma=blur_sigma, "
    "BORDER_REFLECT_101) per channel (OpenCV derives the kernel size from sigma)",
    "uniform": "removed pixels taken from lo + (hi - lo) * U, U = numpy default_rng([seed, 1])"
    ".random((C, H, W)) (one noise field for all images), [lo, hi] = the image's min and max",
}


@dataclass(frozen=True)
class PerturbationProtocol:
    """Resolved settings of a MoRF / LeRF patch-removal run (see :func:`perturbation_curves`).

    Attributes:
        patch_size: Side of the removal unit, one ViT patch, in pixels.
        grid: Patch grid ``(h, w)`` of the maps, ``h = H / patch_size``.
        order: ``"morf"`` (most relevant first), ``"lerf"`` (least relevant first) or ``"both"``.
        steps: Number of removal steps ``K``; the curve has ``K + 1`` points.
        baseline: What removed pixels become: ``"mean"``, ``"zero"``, ``"blur"`` or ``"uniform"``.
        baseline_value: The constant fill value (``"mean"``: 0.0; ``"zero"``: the caller's
            value); ``None`` for ``"blur"`` and ``"uniform"``.
        blur_sigma: Gaussian sigma in pixels for ``"blur"``; ``None`` otherwise.
        explained: The explained class, whose softmax probability is tracked: ``"target"`` (the
            classes given, e.g. the labels) or ``"predicted"`` (the model's argmax on the clean image).
        seed: Seed of the tie-breaking order and of the ``"uniform"`` noise.
        batch_size: Perturbed copies per forward pass (does not change the results).
        device: Device the forward passes ran on.
        step_grid: Where the ``K`` steps fall: ``"uniform"`` (fractions ``k/K``, the default) or
            ``"cosine"`` (fractions ``(1 − cos(πk/K))/2``, denser at both ends).
    """

    patch_size: int
    grid: tuple[int, int]
    order: str
    steps: int
    baseline: str
    baseline_value: float | None
    blur_sigma: float | None
    explained: str
    seed: int
    batch_size: int
    device: str
    step_grid: str = "uniform"

    def __post_init__(self) -> None:
        check_int("patch_size", self.patch_size, minimum=1)
        check_choice("order", self.order, ORDERS)
        check_int("steps", self.steps, minimum=1)
        check_choice("step_grid", self.step_grid, STEP_GRIDS)
        check_choice("baseline", self.baseline, BASELINES)
        check_choice("explained", self.explained, EXPLAINED_CLASSES)
        check_int("seed", self.seed, minimum=0)
        check_int("batch_size", self.batch_size, minimum=1)
        if self.baseline == "zero":
            if self.baseline_value is None:
                raise ValueError(
                    "baseline_value=None is invalid with baseline='zero'; expected the normalised "
                    "value of a black pixel, -mean / std of the model's preprocessing"
                )
            check_float("baseline_value", self.baseline_value)
        elif self.baseline == "mean":
            if self.baseline_value != 0.0:
                raise ValueError(
                    f"baseline_value={self.baseline_value!r} is invalid with baseline='mean', which "
                    "fills with 0.0; use baseline='zero' with baseline_value for another constant"
                )
        elif self.baseline_value is not None:
            raise ValueError(
                f"baseline_value={self.baseline_value!r} is only used with baseline='zero'; "
                f"got baseline={self.baseline!r}"
            )
        if self.baseline == "blur":
            check_float("blur_sigma", self.blur_sigma, positive=True)
        elif self.blur_sigma is not None:
            raise ValueError(
                f"blur_sigma={self.blur_sigma!r} is only used with baseline='blur'; got baseline={self.baseline!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """The settings plus the fixed rules, JSON-serialisable."""
        h, w = self.grid
        return {
            "metric": "patch_perturbation",
            **dataclasses.asdict(self),
            "grid": [h, w],
            "unit": f"ViT patch of {self.patch_size}x{self.patch_size} pixels, all channels",
            "ranking": "morf: descending map value; lerf: ascending map value",
            "ties": "broken by one seeded random order of patch indices, numpy "
            "default_rng([seed, 0]).permutation(h*w), the same for every image",
            "removed_patches": f"cumulative; at step k = 0..steps, {STEP_GRID_RULES[self.step_grid]}, fraction "
            "f_k = n_k/(h*w), f_0 = 0, f_K = 1",
            "baseline_rule": _BASELINE_RULES[self.baseline],
            "probability": "softmax over the model's logits (float64) at the scored class",
        }


@dataclass(frozen=True)
class BoxAUCProtocol:
    """Resolved settings of :func:`box_auc`.

    Attributes:
        image_size: ``(H, W)`` in pixels.
        grid: Map grid ``(h, w)`` as given (equal to ``image_size`` for pixel maps).
        level: ``"pixel"`` (score every pixel) or ``"patch"`` (score every map cell).
        upsample: Interpolation of token maps to pixels (``"bilinear"`` or ``"nearest"``);
            ``None`` when no resizing happened (pixel maps, or ``level="patch"``).
        patch_positive_fraction: At patch level, a patch is positive when at least this fraction
            of its pixels lie inside the union of the target boxes.
        negatives_boxes: Whether negative boxes (e.g. distractors) were given for reporting.
    """

    image_size: tuple[int, int]
    grid: tuple[int, int]
    level: str
    upsample: str | None
    patch_positive_fraction: float
    negatives_boxes: bool

    def __post_init__(self) -> None:
        check_choice("level", self.level, LEVELS)
        if self.upsample is not None:
            check_choice("upsample", self.upsample, UPSAMPLES)
        fraction = check_float("patch_positive_fraction", self.patch_positive_fraction, positive=True)
        if fraction > 1:
            raise ValueError(
                f"patch_positive_fraction={self.patch_positive_fraction!r} is invalid; expected a number in (0, 1]"
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": "box_auc",
            **dataclasses.asdict(self),
            "image_size": list(self.image_size),
            "grid": list(self.grid),
            "boxes": "(x0, y0, x1, y1) pixels, x1/y1 exclusive: pixel (y, x) is inside when "
            "x0 <= x < x1 and y0 <= y < y1",
            "positives": "pixels (or patches) inside the union of the image's target boxes; every "
            "other pixel is a negative, negatives_boxes included",
            "upsampling": "cv2.resize, INTER_LINEAR (bilinear) or INTER_NEAREST_EXACT, float32",
            "scores": "per image: sklearn roc_auc_score and average_precision_score (PR-AUC); "
            "mean over images where both classes occur",
            "undefined": "target union covering no pixel or every pixel -> nan, warned, excluded",
            "negatives_report": "negatives_roc_auc: ROC-AUC of target pixels against pixels of the "
            "negative boxes outside the targets (reported only; the main scores are unchanged)",
        }


@dataclass(frozen=True)
class PointingProtocol:
    """Resolved settings of :func:`pointing_game`.

    Attributes:
        image_size: ``(H, W)`` in pixels.
        grid: Map grid ``(h, w)`` as given.
        upsample: Interpolation of token maps to pixels; ``None`` for pixel maps.
        tolerance: Hit tolerance in pixels (resolved; default ``15 * max(H, W) / 224``).
        ties: ``"any"`` (a hit if any maximal pixel hits) or ``"first"`` (the first maximal
            pixel in row-major order only).
    """

    image_size: tuple[int, int]
    grid: tuple[int, int]
    upsample: str | None
    tolerance: float
    ties: str

    def __post_init__(self) -> None:
        if self.upsample is not None:
            check_choice("upsample", self.upsample, UPSAMPLES)
        check_float("tolerance", self.tolerance, minimum=0.0)
        check_choice("ties", self.ties, TIES)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": "pointing_game",
            **dataclasses.asdict(self),
            "image_size": list(self.image_size),
            "grid": list(self.grid),
            "reference": "Zhang et al. 2016: 15 px at 224 px, scaled by max(H, W) / 224",
            "hit": "the maximal pixel (y, x) of the upsampled map lies within Euclidean distance "
            "<= tolerance of a pixel of a target box (boxes grown by the tolerance, round corners)",
            "undefined": "an image without a non-empty target box -> nan, warned, excluded",
        }
