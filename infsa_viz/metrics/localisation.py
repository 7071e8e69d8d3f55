"""Localisation metrics against ground-truth boxes: box ROC-AUC / PR-AUC and the pointing game.

Maps are either per-token ``(B, h, w)`` (upsampled to the image with OpenCV) or already per-pixel
``(B, H, W)``. Positives are the pixels inside the union of an image's target boxes, with the
package-wide box convention ``(x0, y0, x1, y1)``, ``x1``/``y1`` exclusive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._checks import as_image_size, check_boxes, check_choice, check_float, check_maps, warn_undefined
from .auc import average_precision, precision_recall_curve, roc_auc, roc_curve
from .protocol import (
    LEVELS,
    POINTING_REFERENCE_SIZE,
    POINTING_REFERENCE_TOLERANCE,
    TIES,
    UPSAMPLES,
    BoxAUCProtocol,
    Level,
    PointingProtocol,
    Ties,
    Upsample,
)
from .upsample import _resize, _union_mask

__all__ = ["RECALL_GRID", "ROC_GRID", "BoxAUCResult", "BoxCurve", "PointingResult", "box_auc", "box_curves", "pointing_game"]


@dataclass(frozen=True, eq=False)
class BoxAUCResult:
    """Per-image and mean ROC-AUC / PR-AUC of a map against target boxes.

    Attributes:
        roc_auc: ``(B,) float64`` ROC-AUC per image (``nan`` where undefined).
        pr_auc: ``(B,) float64`` PR-AUC (average precision) per image (``nan`` where undefined).
        positive_fraction: ``(B,) float64`` fraction of positives per image (the PR-AUC of a
            constant map).
        roc_auc_mean: Mean ROC-AUC over defined images (``nan`` if none).
        pr_auc_mean: Mean PR-AUC over defined images (``nan`` if none).
        n_images: ``B``.
        n_undefined: Images left out (target union covering nothing or everything).
        negatives_roc_auc: ``(B,) float64`` ROC-AUC of target against negative-box pixels, or
            ``None`` when no ``negatives_boxes`` were given.
        negatives_roc_auc_mean: Its mean over defined images, or ``None``.
        protocol: The resolved protocol (:meth:`BoxAUCProtocol.to_dict`).
    """

    roc_auc: np.ndarray
    pr_auc: np.ndarray
    positive_fraction: np.ndarray
    roc_auc_mean: float
    pr_auc_mean: float
    n_images: int
    n_undefined: int
    negatives_roc_auc: np.ndarray | None
    negatives_roc_auc_mean: float | None
    protocol: dict[str, Any]


@dataclass(frozen=True, eq=False)
class PointingResult:
    """Pointing-game hits per image and the hit rate.

    Attributes:
        hits: ``(B,) float64``: 1.0 hit, 0.0 miss, ``nan`` undefined (no target box).
        accuracy: Hit rate over defined images (``nan`` if none).
        n_images: ``B``.
        n_undefined: Images left out for having no non-empty target box.
        protocol: The resolved protocol (:meth:`PointingProtocol.to_dict`).
    """

    hits: np.ndarray
    accuracy: float
    n_images: int
    n_undefined: int
    protocol: dict[str, Any]


def box_auc(
    maps: Any,
    boxes: Any,
    *,
    image_size: int | tuple[int, int],
    negatives_boxes: Any = None,
    level: Level = "pixel",
    upsample: Upsample = "bilinear",
    patch_positive_fraction: float = 0.5,
) -> BoxAUCResult:
    """ROC-AUC and PR-AUC of a map as a detector of the target boxes' pixels, per image.

    At ``level="pixel"`` (default) every pixel is a sample: label 1 inside the union of the
    image's target boxes, 0 elsewhere (distractors included), score the map upsampled to the
    image size (``cv2.resize``, ``INTER_LINEAR`` by default; pixel maps are used as they are).
    At ``level="patch"`` every map cell is a sample, positive when at least
    ``patch_positive_fraction`` of its pixels are inside the union. Scores are ROC-AUC and
    average precision per image (:mod:`infsa_viz.metrics.auc`, scikit-learn's definitions), then
    averaged.

    Args:
        maps: ``(B, h, w)`` token maps or ``(B, H, W)`` pixel maps.
        boxes: Target boxes per image: a sequence of ``B`` arrays ``(K_i, 4)``, or a ``(B, 4)``
            / ``(B, K, 4)`` array, ``(x0, y0, x1, y1)`` with ``x1``/``y1`` exclusive.
        image_size: ``(H, W)`` or ``S``.
        negatives_boxes: Optional boxes in the same format (e.g. distractor digits). They stay
            negatives; only ``negatives_roc_auc`` (targets vs. these pixels) is added.
        level: ``"pixel"`` (default) or ``"patch"`` (needs ``H % h == 0`` and ``W % w == 0``).
        upsample: ``"bilinear"`` (default) or ``"nearest"``; used for token maps at pixel level.
        patch_positive_fraction: Patch-level positive threshold in ``(0, 1]``. Default 0.5.

    Returns:
        A :class:`BoxAUCResult`. An image whose target union covers no pixel or every pixel
        (no pixel or no patch at patch level) gets ``nan``, is left out of the means, counted
        in ``n_undefined`` and reported by one :class:`UndefinedMetricWarning`.

    Raises:
        ValueError: On a bad shape, box or option.
    """
    (height, width), values, targets = _inputs(maps, boxes, image_size)
    B = values.shape[0]
    negatives = None if negatives_boxes is None else check_boxes(negatives_boxes, batch=B, name="negatives_boxes")
    check_choice("level", level, LEVELS)
    check_choice("upsample", upsample, UPSAMPLES)
    fraction = check_float("patch_positive_fraction", patch_positive_fraction, positive=True)
    grid = values.shape[1:]
    scores, resized = _scores_at_level(values, (height, width), level, upsample)
    protocol = BoxAUCProtocol(
        image_size=(height, width), grid=grid, level=level, upsample=upsample if resized else None,
        patch_positive_fraction=fraction, negatives_boxes=negatives is not None,
    )

    roc = np.full(B, np.nan)
    pr = np.full(B, np.nan)
    neg_roc = None if negatives is None else np.full(B, np.nan)
    positive_fraction = np.empty(B)
    for i in range(B):
        labels = _labels(targets[i], (height, width), grid, level, fraction)  # (n,) bool
        score = scores[i].ravel()
        positive_fraction[i] = labels.mean()
        if 0 < labels.sum() < labels.size:
            roc[i] = roc_auc(labels, score)
            pr[i] = average_precision(labels, score)
        if negatives is not None and labels.any():
            others = _labels(negatives[i], (height, width), grid, level, fraction) & ~labels
            if others.any():
                keep = labels | others
                neg_roc[i] = roc_auc(labels[keep], score[keep])  # type: ignore[index]
    n_undefined = int(np.isnan(roc).sum())
    if n_undefined:
        warn_undefined(
            f"box_auc: {n_undefined} of {B} image(s) have target boxes covering no or every "
            f"{level}; their ROC-AUC and PR-AUC are nan and left out of the means"
        )
    neg_mean = None
    if neg_roc is not None:
        n_neg_undefined = int(np.isnan(neg_roc).sum())
        if n_neg_undefined:
            warn_undefined(
                f"box_auc: {n_neg_undefined} of {B} image(s) have no target or no negative-box "
                f"{level} outside the targets; their negatives_roc_auc is nan"
            )
        neg_mean = _nanmean(neg_roc)
    return BoxAUCResult(
        roc_auc=roc, pr_auc=pr, positive_fraction=positive_fraction,
        roc_auc_mean=_nanmean(roc), pr_auc_mean=_nanmean(pr), n_images=B, n_undefined=n_undefined,
        negatives_roc_auc=neg_roc, negatives_roc_auc_mean=neg_mean, protocol=protocol.to_dict(),
    )


def pointing_game(
    maps: Any,
    boxes: Any,
    *,
    image_size: int | tuple[int, int],
    tolerance: float | None = None,
    ties: Ties = "any",
    upsample: Upsample = "bilinear",
) -> PointingResult:
    """Pointing game (Zhang et al., 2016): does the map's maximum fall on a target box?

    The map is upsampled to the image (``cv2.resize``, ``INTER_LINEAR`` by default; pixel maps
    are used as they are). A hit is a maximal pixel ``(y, x)`` within Euclidean distance
    ``tolerance`` of a pixel of one of the image's target boxes (the boxes grown by the
    tolerance with rounded corners, as in TorchRay's pointing game). Ties at the maximum:
    ``ties="any"`` (default) counts a hit if *any* maximal pixel hits; ``"first"`` looks at the
    first maximal pixel in row-major order only (``numpy.argmax``). A constant map is maximal
    everywhere, so with ``"any"`` it hits whenever a box exists.

    Args:
        maps: ``(B, h, w)`` token maps or ``(B, H, W)`` pixel maps.
        boxes: Target boxes per image, as in :func:`box_auc`.
        image_size: ``(H, W)`` or ``S``.
        tolerance: Hit tolerance in pixels ``>= 0``. Default ``15 * max(H, W) / 224``, the paper's
            15 px at 224 px scaled linearly (3.21 px at 48 px); the resolved value is in the
            protocol.
        ties: ``"any"`` (default) or ``"first"``.
        upsample: ``"bilinear"`` (default) or ``"nearest"``.

    Returns:
        A :class:`PointingResult`. An image whose target union covers no pixel of the image or
        every pixel (the rule of :func:`box_auc`: a box outside the image, or one that a constant
        map would always hit) gets ``nan``, is left out of the accuracy and counted, with one
        :class:`UndefinedMetricWarning`. (Quantus 0.6
        scores an empty mask as a hit instead, see its issues #75 and #333; we do not.)

    Raises:
        ValueError: On a bad shape, box or option.
    """
    (height, width), values, targets = _inputs(maps, boxes, image_size)
    B = values.shape[0]
    if tolerance is None:
        tolerance = POINTING_REFERENCE_TOLERANCE * max(height, width) / POINTING_REFERENCE_SIZE
    tolerance = check_float("tolerance", tolerance, minimum=0.0)
    check_choice("ties", ties, TIES)
    check_choice("upsample", upsample, UPSAMPLES)
    grid = values.shape[1:]
    pixels, resized = _scores_at_level(values, (height, width), "pixel", upsample)  # (B, H, W)
    protocol = PointingProtocol(
        image_size=(height, width), grid=grid, upsample=upsample if resized else None,
        tolerance=tolerance, ties=ties,
    )

    hits = np.full(B, np.nan)
    for i in range(B):
        box = targets[i]
        box = box[(box[:, 2] > box[:, 0]) & (box[:, 3] > box[:, 1])]  # non-empty boxes (K, 4)
        covered = _labels(box, (height, width), grid, "pixel", 0.5)  # (H·W,) bool
        if not 0 < covered.sum() < covered.size:  # the one rule of box metrics: see box_auc
            continue
        flat = pixels[i].ravel()
        if ties == "any":
            ys, xs = np.divmod(np.flatnonzero(flat == flat.max()), width)  # (M,)
        else:
            ys, xs = np.divmod(np.array([int(flat.argmax())]), width)
        dx = np.maximum(np.maximum(box[None, :, 0] - xs[:, None], xs[:, None] - (box[None, :, 2] - 1)), 0)  # (M, K)
        dy = np.maximum(np.maximum(box[None, :, 1] - ys[:, None], ys[:, None] - (box[None, :, 3] - 1)), 0)
        hits[i] = float((dx**2 + dy**2 <= tolerance**2).any())
    n_undefined = int(np.isnan(hits).sum())
    if n_undefined:
        warn_undefined(
            f"pointing_game: {n_undefined} of {B} image(s) have target boxes covering no or every pixel; "
            "their hit is nan and left out of the accuracy"
        )
    return PointingResult(
        hits=hits, accuracy=_nanmean(hits), n_images=B, n_undefined=n_undefined, protocol=protocol.to_dict()
    )


#: Recall levels of the interpolated precision curves (0, 0.02, …, 1).
RECALL_GRID = np.linspace(0.0, 1.0, 51)
#: False-positive rates at which each image's ROC curve is kept (``BoxCurve.tpr_at``).
ROC_GRID = np.linspace(0.0, 1.0, 51)


@dataclass(frozen=True, eq=False)
class BoxCurve:
    """ROC and precision-recall curves of one map as a detector of its target-box pixels.

    Attributes:
        fpr, tpr: the ROC curve of the pixel scores (``sklearn.metrics.roc_curve``'s definition, :mod:`.auc`).
        precision, recall: its precision-recall curve (``sklearn.metrics.precision_recall_curve``'s).
        positive_fraction: share of positive pixels (the precision of a constant map).
    """

    fpr: np.ndarray
    tpr: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    positive_fraction: float

    def interpolated_precision(self, recall_grid: np.ndarray = RECALL_GRID) -> np.ndarray:
        """The best precision at recall ≥ ``r`` for each ``r`` of ``recall_grid``."""
        best = np.maximum.accumulate(self.precision)  # recall falls along the arrays: max over recall >= r
        return np.interp(recall_grid, self.recall[::-1], best[::-1])

    def tpr_at(self, fpr_grid: np.ndarray = ROC_GRID) -> np.ndarray:
        """The ROC curve's true-positive rate at each false-positive rate of ``fpr_grid`` (linear
        between its points; the highest where the curve rises vertically)."""
        order = np.lexsort((self.tpr, self.fpr))  # fpr ascending, then tpr ascending: interp takes the last
        fpr, tpr = self.fpr[order], self.tpr[order]
        keep = np.append(fpr[1:] != fpr[:-1], True)  # the highest tpr at each fpr
        return np.interp(fpr_grid, fpr[keep], tpr[keep])


def box_curves(maps: Any, boxes: Any, *, image_size: int | tuple[int, int],
               upsample: Upsample = "bilinear") -> list[BoxCurve | None]:
    """Per image, the ROC and PR curves behind :func:`box_auc` (pixel level; same labels and
    scores); ``None`` where the target union covers no pixel or every pixel."""
    (height, width), values, targets = _inputs(maps, boxes, image_size)
    check_choice("upsample", upsample, UPSAMPLES)
    scores, _ = _scores_at_level(values, (height, width), "pixel", upsample)
    out: list[BoxCurve | None] = []
    for score, target in zip(scores, targets):
        labels = _labels(target, (height, width), values.shape[1:], "pixel", 1.0)
        if not 0 < labels.sum() < labels.size:
            out.append(None)
            continue
        fpr, tpr = roc_curve(labels, score.ravel())
        precision, recall = precision_recall_curve(labels, score.ravel())
        out.append(BoxCurve(fpr=fpr, tpr=tpr, precision=precision, recall=recall,
                            positive_fraction=float(labels.mean())))
    return out


def _inputs(maps: Any, boxes: Any, image_size: Any) -> tuple[tuple[int, int], np.ndarray, list[np.ndarray]]:
    """The validated ``(H, W)``, maps ``(B, h, w)`` and per-image target boxes."""
    size = as_image_size(image_size)
    values = check_maps(maps)
    return size, values, check_boxes(boxes, batch=values.shape[0])


def _scores_at_level(
    maps: np.ndarray, size: tuple[int, int], level: str, upsample: str
) -> tuple[np.ndarray, bool]:
    """Scores per sample: the pixel map ``(B, H, W)`` or the token map itself; and whether resized."""
    height, width = size
    h, w = maps.shape[1:]
    if h > height or w > width:
        raise ValueError(f"maps has grid {(h, w)}; expected at most the image size {(height, width)}")
    if level == "patch":
        if height % h or width % w:
            raise ValueError(
                f"maps has grid {(h, w)}; level='patch' expects a grid dividing the image size {(height, width)}"
            )
        return maps, False
    if (h, w) == (height, width):
        return maps.astype(np.float32), False
    return _resize(maps.astype(np.float32), size, upsample), True


def _labels(boxes: np.ndarray, size: tuple[int, int], grid: tuple[int, int], level: str, fraction: float) -> np.ndarray:
    """Flat positive labels per sample (pixel, or patch at patch level)."""
    mask = _union_mask(boxes, size)  # (H, W)
    if level == "pixel":
        return mask.ravel()
    (height, width), (h, w) = size, grid
    inside = mask.reshape(h, height // h, w, width // w).mean(axis=(1, 3))  # (h, w)
    return (inside >= fraction).ravel()


def _nanmean(values: np.ndarray) -> float:
    defined = values[np.isfinite(values)]
    return float(defined.mean()) if defined.size else float("nan")
