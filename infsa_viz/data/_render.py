"""Rendering and placement helpers of the cluttered-digits generator (private).

Boxes are ``(x0, y0, x1, y1)`` with ``x1``/``y1`` exclusive; see :mod:`infsa_viz.data.cluttered`.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import cv2
import numpy as np

CANDIDATES = 16  # positions tried at once (vectorised) per digit
PLACEMENT_ROUNDS = 32  # batches of candidates per digit before restarting a layout
LAYOUT_RESTARTS = 8  # layouts tried per image before giving up
PHOTO_NAMES = ("china.jpg", "flower.jpg")
PHOTO_DOWNSCALES = (1, 2, 3, 4)
PHOTO_COUNT = len(PHOTO_NAMES) * len(PHOTO_DOWNSCALES)


def _sklearn_sample_photo(name: str) -> bytes:
    """Reads ``sklearn/datasets/images/<name>`` without importing ``sklearn.datasets`` (slow)."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("background='photo' needs scikit-learn, whose sample photos it crops")
    for location in spec.submodule_search_locations:
        path = Path(location, "datasets", "images", name)
        if path.is_file():
            return path.read_bytes()
    raise FileNotFoundError(
        f"scikit-learn sample photo {name!r} not found under {list(spec.submodule_search_locations)}"
    )


@functools.lru_cache(maxsize=4)
def background_photos(intensity: float) -> tuple[np.ndarray, ...]:
    """Gray versions of scikit-learn's sample photos at several scales, times ``intensity``."""
    photos = []
    for name in PHOTO_NAMES:
        raw = _sklearn_sample_photo(name)
        gray = cv2.cvtColor(cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2GRAY)
        for factor in PHOTO_DOWNSCALES:
            h, w = gray.shape
            scaled = (
                gray
                if factor == 1
                else cv2.resize(gray, (w // factor, h // factor), interpolation=cv2.INTER_AREA)
            )
            faint = np.floor(scaled * intensity).astype(np.uint8)
            faint.setflags(write=False)
            photos.append(faint)
    return tuple(photos)


def photo_crop(intensity: float, pick: int, u: np.ndarray, size: int) -> np.ndarray:
    """The ``size`` square of photo ``pick`` (of :func:`background_photos`) at relative offset ``u``
    ``(uy, ux)`` in [0, 1): rows ``oy = floor(uy·(h − size + 1))``, columns likewise; a read-only view."""
    photo = background_photos(intensity)[pick]
    oy = int(u[0] * (photo.shape[0] - size + 1))
    ox = int(u[1] * (photo.shape[1] - size + 1))
    return photo[oy : oy + size, ox : ox + size]


def alternative_photo(pick: int) -> int:
    """The background swap's photo: the other sample photo (china ↔ flower) at the same downscale."""
    return (pick + len(PHOTO_DOWNSCALES)) % PHOTO_COUNT


def render_digit(digit: np.ndarray, ink_box: np.ndarray, size: int) -> np.ndarray:
    """Renders a 28x28 digit with its longer ink side scaled to ``size``; returns a tight patch."""
    x0, y0, x1, y1 = (int(v) for v in ink_box)
    h, w = y1 - y0, x1 - x0
    long_ = max(h, w)
    new_h, new_w = max(1, int(h * size / long_ + 0.5)), max(1, int(w * size / long_ + 0.5))
    patch = cv2.resize(digit[y0:y1, x0:x1], (new_w, new_h), interpolation=cv2.INTER_AREA)
    # Trim to the nonzero pixels (INTER_AREA averages, so some ink always survives).
    bx, by, bw, bh = cv2.boundingRect(patch)
    return patch[by : by + bh, bx : bx + bw]


def overlap_ok(cand: np.ndarray, placed: np.ndarray, max_overlap: float) -> np.ndarray:
    """Which candidates ``(..., M, 4)`` overlap every placed box ``(..., P, 4)`` by < ``max_overlap``.

    The overlap of two boxes is their intersection area over the smaller box's area.
    """
    c, p = cand[..., :, None, :], placed[..., None, :, :]  # (..., M, 1, 4), (..., 1, P, 4)
    iw = np.maximum(np.minimum(c[..., 2], p[..., 2]) - np.maximum(c[..., 0], p[..., 0]), 0)
    ih = np.maximum(np.minimum(c[..., 3], p[..., 3]) - np.maximum(c[..., 1], p[..., 1]), 0)
    area_c = (c[..., 2] - c[..., 0]) * (c[..., 3] - c[..., 1])  # (..., M, 1)
    area_p = (p[..., 2] - p[..., 0]) * (p[..., 3] - p[..., 1])  # (..., 1, P)
    return ((iw * ih) / np.minimum(area_c, area_p) < max_overlap).all(axis=-1)  # (..., M)


def candidates(u: np.ndarray, wh: np.ndarray, size: int) -> np.ndarray:
    """Maps uniforms ``(..., M, 2)`` in [0, 1) and sizes ``(..., 2)`` (w, h) to boxes ``(..., M, 4)``."""
    w, h = wh[..., None, 0], wh[..., None, 1]  # (..., 1)
    xs = (u[..., 0] * (size - w + 1)).astype(np.int64)  # (..., M)
    ys = (u[..., 1] * (size - h + 1)).astype(np.int64)
    return np.stack([xs, ys, xs + w, ys + h], axis=-1)


def place_all(
    wh: np.ndarray, pos_u: np.ndarray, *, canvas_size: int, max_overlap: float
) -> tuple[np.ndarray, np.ndarray]:
    """Places the digits of all images at once, each at its first acceptable candidate.

    Args:
        wh: ``(n, D, 2)`` patch sizes (w, h), target first.
        pos_u: ``(n, D, M, 2)`` uniforms for the candidate positions.
        canvas_size: Side of the canvas.
        max_overlap: Limit of :func:`overlap_ok`.

    Returns:
        ``(boxes (n, D, 4) int64, placed (n,) bool)``; images with ``placed`` False found no
        acceptable candidate for some digit and must be placed again with :func:`place_one`.
    """
    n, num_digits = wh.shape[:2]
    boxes = np.zeros((n, num_digits, 4), dtype=np.int64)
    placed = np.ones(n, dtype=bool)
    for j in range(num_digits):
        cand = candidates(pos_u[:, j], wh[:, j], canvas_size)  # (n, M, 4)
        if j == 0:
            boxes[:, 0] = cand[:, 0]
            continue
        ok = overlap_ok(cand, boxes[:, :j], max_overlap)  # (n, M)
        boxes[:, j] = cand[np.arange(n), ok.argmax(axis=1)]
        placed &= ok.any(axis=1)
    return boxes, placed


def place_one(
    wh: np.ndarray, rng: np.random.Generator, *, canvas_size: int, max_overlap: float
) -> np.ndarray | None:
    """Rejection-samples a layout for one image with ``wh (D, 2)``; returns ``(D, 4)`` or None."""
    boxes = np.zeros((len(wh), 4), dtype=np.int64)
    for _ in range(LAYOUT_RESTARTS):
        for j in range(len(wh)):
            for _ in range(PLACEMENT_ROUNDS):
                cand = candidates(rng.random((CANDIDATES, 2)), wh[j], canvas_size)  # (M, 4)
                ok = overlap_ok(cand, boxes[:j], max_overlap) if j else np.ones(len(cand), bool)
                if ok.any():
                    boxes[j] = cand[int(ok.argmax())]
                    break
            else:
                break  # this digit found no room: restart the whole layout
        else:
            return boxes
    return None
