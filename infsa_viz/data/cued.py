"""Cued digits: cluttered digits with a controlled shortcut, for ground truth that varies.

A controlled-reliance benchmark in the manner of SMERF (Kim et al., 2021, "Sanity Simulations for
Saliency Methods"), BAM (Yang & Kim, 2019) and Zhou et al. (AAAI 2022, "Do Feature Attribution
Methods Correctly Attribute Features?"): beside the cluttered-digits scene (a large *target* digit
whose class is the label, small distractor digits, a faint photo background; see
:mod:`infsa_viz.data.cluttered`) each image may carry a *cue*: a small glyph (:data:`GLYPHS`, one per
class) whose class agrees with the label with probability ``cue_agreement`` and is otherwise a
uniformly drawn other class. A model trained where the cue agrees often can take it as a shortcut;
where ``cue_agreement = 0.1`` (one class in ten) the cue is independent of the label and useless.
How much each trained model relies on it is *measured*, never assumed
(:mod:`infsa_viz.evaluation.reliance`).

Every object can be changed in distribution (:class:`~infsa_viz.data.scenes.Scene`):

* the number of distractors is drawn uniformly from ``distractors`` (default 0–3), so a scene
  with one removed is a scene the generator draws;
* the cue is shown with probability ``cue_presence`` (default 0.8 for training), so a scene with
  the cue removed is one too;
* the target is *swapped* for a digit of another class, rendered at the same size and centred where
  it was (the largest digit stays the largest, the image is a scene with another label);
* the background is swapped for its alternative photo crop, as in cluttered digits.

Image ``i`` depends only on ``(split, seed, config, i)``. Every random choice of an image is drawn
whether or not it is used (absent distractors and cue have sizes and positions too), so the layout
of the present objects is the layout of a denser scene with some objects left out.

The two training settings and their shared test split are registered in
:data:`~infsa_viz.data.splits.BENCHMARKS` (``cued-digits-p10``, ``cued-digits-p100``); their test
split shows the cue on every image, agreeing with the label on about half of them.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from typing import Any, Literal

import numpy as np

from .._checks import check_int, check_memory
from ._render import (CANDIDATES, PHOTO_COUNT, alternative_photo, candidates, overlap_ok, photo_crop, place_all,
                      place_one, render_digit)
from .cluttered import ClutteredDigitsConfig, _digit_pool, _int_pair
from .mnist import Split
from .scenes import Scene, object_names

__all__ = ["CUE_CONDITIONS", "GLYPHS", "CuedDigitsConfig", "cue_conditions", "generate_cued", "swap_violations"]

#: One 7 × 7 glyph per class (``#`` ink), tight (each border line holds ink), none inside another.
_GLYPH_ROWS: tuple[tuple[str, ...], ...] = (
    ("#######", "#.....#", "#.....#", "#.....#", "#.....#", "#.....#", "#######"),  # 0 square outline
    ("###.###", "###.###", "###.###", ".......", "###.###", "###.###", "###.###"),  # 1 four blocks
    ("...#...", "...#...", "...#...", "#######", "...#...", "...#...", "...#..."),  # 2 plus
    ("#.....#", ".#...#.", "..#.#..", "...#...", "..#.#..", ".#...#.", "#.....#"),  # 3 cross
    ("#######", ".......", ".......", "#######", ".......", ".......", "#######"),  # 4 three bars
    ("#..#..#", "#..#..#", "#..#..#", "#..#..#", "#..#..#", "#..#..#", "#..#..#"),  # 5 three columns
    ("#.....#", "#.....#", "#.....#", "#######", "#.....#", "#.....#", "#.....#"),  # 6 H
    ("...#...", "..###..", "..###..", ".#####.", ".#####.", "#######", "#######"),  # 7 triangle
    ("...#...", "..#.#..", ".#...#.", "#.....#", ".#...#.", "..#.#..", "...#..."),  # 8 diamond
    ("#######", "#######", "..###..", "..###..", "..###..", "..###..", "..###.."),  # 9 T
)
#: ``(10, 7, 7) bool`` the cue glyph of each class.
GLYPHS: np.ndarray = np.array([[[c == "#" for c in row] for row in g] for g in _GLYPH_ROWS], dtype=bool)
GLYPHS.setflags(write=False)

#: How an image's cue relates to its label (:func:`cue_conditions`).
CUE_CONDITIONS = ("consistent", "conflicting", "absent")

_SPLIT_CODE = {"train": 1, "test": 2}
_STREAM_SAMPLE, _STREAM_EPOCH = 3, 4  # distinct from cluttered digits' streams
_STREAM_SWAP = 5  # the target swap's redraws: SeedSequence([*entropy, i, 5]) of image i
#: Redraws of a target swap that breaks a layout rule (each a new digit of the same class, centred,
#: then at up to CANDIDATES positions) before the generator gives up.
SWAP_REDRAWS = 64


def _probability(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name}={value!r} is invalid; expected a probability in [0, 1]")
    return float(value)


@dataclasses.dataclass(frozen=True)
class CuedDigitsConfig:
    """Settings of the cued-digits generator (the scene fields mean what they mean in
    :class:`~infsa_viz.data.cluttered.ClutteredDigitsConfig`, and are validated by it).

    Attributes:
        canvas_size, target_size, distractor_size, max_overlap, background,
        background_intensity, mask_threshold: as in cluttered digits (defaults equal).
        distractors: inclusive range of the number of distractor digits, drawn uniformly per
            image. Default ``(0, 3)``.
        cue_agreement: probability that a shown cue encodes the label; otherwise it encodes a
            uniformly drawn other class (``0.1``: independent of the label). Default 0.5.
        cue_presence: probability that an image shows the cue. Default 0.8.
        cue_intensity: pixel value of the glyph's ink, 1..255. Default 255.
    """

    canvas_size: int = 48
    target_size: tuple[int, int] = (18, 22)
    distractors: tuple[int, int] = (0, 3)
    distractor_size: tuple[int, int] = (9, 12)
    max_overlap: float = 0.10
    background: Literal["photo", "none"] = "photo"
    background_intensity: float = 0.25
    mask_threshold: int = 63
    cue_agreement: float = 0.5
    cue_presence: float = 0.8
    cue_intensity: int = 255

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        low, high = self.distractors if isinstance(self.distractors, (tuple, list)) and len(self.distractors) == 2 \
            else (None, None)
        if not (isinstance(low, int) and isinstance(high, int)) or isinstance(low, bool) or not 0 <= low <= high:
            raise ValueError(f"distractors={self.distractors!r} is invalid; expected two integers 0 <= low <= high")
        set_("distractors", (int(low), int(high)))
        scene = self.scene_config()  # validates the shared fields (and bounds them)
        for name in ("target_size", "distractor_size", "canvas_size", "mask_threshold", "max_overlap",
                     "background_intensity"):
            set_(name, getattr(scene, name))
        for name in ("cue_agreement", "cue_presence"):
            set_(name, _probability(name, getattr(self, name)))
        set_("cue_intensity", check_int("cue_intensity", self.cue_intensity, minimum=1))
        if self.cue_intensity > 255:
            raise ValueError(f"cue_intensity={self.cue_intensity} is invalid; expected an integer in 1..255")
        if self.canvas_size < GLYPHS.shape[1]:
            raise ValueError(f"canvas_size={self.canvas_size} is too small; expected >= {GLYPHS.shape[1]} (the cue)")

    def scene_config(self) -> ClutteredDigitsConfig:
        """The cluttered-digits settings of the scene with the most distractors (validated)."""
        return ClutteredDigitsConfig(
            canvas_size=self.canvas_size, target_size=self.target_size, num_distractors=self.distractors[1],
            distractor_size=self.distractor_size, max_overlap=self.max_overlap, background=self.background,
            background_intensity=self.background_intensity, mask_threshold=self.mask_threshold)

    @property
    def object_names(self) -> tuple[str, ...]:
        """Every scene's objects: ``target``, ``distractor_1`` … ``distractor_K``, ``cue``, ``background``."""
        return object_names(self.distractors[1], cue=True)

    def to_dict(self) -> dict[str, Any]:
        """Returns the settings as JSON-ready builtins (tuples become lists), with ``kind``."""
        return {"kind": "cued-digits",
                **{k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}}

    def settings_hash(self) -> str:
        """Returns the first 16 hex digits of the sha256 of the canonical JSON of :meth:`to_dict`."""
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


@functools.lru_cache(maxsize=2)
def _rows_by_class(split: Split) -> tuple[np.ndarray, ...]:
    labels = _digit_pool(split).labels
    return tuple(np.flatnonzero(labels == c) for c in range(10))


def _draw(rng: np.random.Generator, pool_size: int, cfg: CuedDigitsConfig) -> dict[str, Any]:
    """Every random choice of one image, from that image's own generator (all drawn, used or not)."""
    K = cfg.distractors[1]
    return {
        "tgt_idx": rng.integers(0, pool_size),
        "dis_idx": rng.integers(0, pool_size, size=K),
        "tgt_size": rng.integers(cfg.target_size[0], cfg.target_size[1] + 1),
        "dis_size": rng.integers(cfg.distractor_size[0], cfg.distractor_size[1] + 1, size=K),
        "count": rng.integers(cfg.distractors[0], K + 1),
        "photo_pick": rng.integers(0, PHOTO_COUNT),
        "photo_u": rng.random(2),
        "pos_u": rng.random((K + 2, CANDIDATES, 2)),  # target, K distractors, cue
        "cue_u": rng.random(2),  # shown?, agrees?
        "cue_other": rng.integers(1, 10),  # the other class, as an offset from the label
        "swap_offset": rng.integers(1, 10),  # the target's replacement class, as an offset
        "swap_u": rng.random(),  # which digit of that class
    }


def _centred(box: np.ndarray, shape: tuple[int, int], size: int) -> np.ndarray:
    """A box of ``shape`` (h, w) centred on ``box``'s centre, moved inside the canvas."""
    x0, y0, x1, y1 = (int(v) for v in box)
    h, w = shape
    nx = min(max(x0 + ((x1 - x0) - w) // 2, 0), size - w)
    ny = min(max(y0 + ((y1 - y0) - h) // 2, 0), size - h)
    return np.array([nx, ny, nx + w, ny + h], dtype=np.int64)


def _readonly(*arrays: np.ndarray) -> None:
    for array in arrays:
        array.setflags(write=False)


def _generate(indices: range, split: Split, entropy: list[int],
              cfg: CuedDigitsConfig) -> tuple[np.ndarray, np.ndarray, list[Scene]]:
    """``(images (n, S, S) uint8, labels (n,) int64, scenes)`` of images ``indices`` of a stream."""
    pool, by_class = _digit_pool(split), _rows_by_class(split)
    rngs = [np.random.default_rng(np.random.SeedSequence([*entropy, i])) for i in indices]
    draws = [_draw(rng, len(pool.labels), cfg) for rng in rngs]
    n, S, K = len(draws), cfg.canvas_size, cfg.distractors[1]
    glyph_side = GLYPHS.shape[1]
    patches: list[list[np.ndarray]] = []
    for d in draws:
        target = render_digit(pool.images[d["tgt_idx"]], pool.ink_boxes[d["tgt_idx"]], int(d["tgt_size"]))
        row = [target]
        for k in range(K):
            size, digit = int(d["dis_size"][k]), d["dis_idx"][k]
            patch = render_digit(pool.images[digit], pool.ink_boxes[digit], size)
            while size > 1 and max(patch.shape) >= max(target.shape):  # target strictly the largest
                size -= 1
                patch = render_digit(pool.images[digit], pool.ink_boxes[digit], size)
            row.append(patch)
        patches.append(row)
    wh = np.array([[p.shape[::-1] for p in row] + [(glyph_side, glyph_side)] for row in patches],
                  dtype=np.int64).reshape(n, K + 2, 2)
    pos_u = np.array([d["pos_u"] for d in draws]).reshape(n, K + 2, CANDIDATES, 2)
    boxes, placed = place_all(wh, pos_u, canvas_size=S, max_overlap=cfg.max_overlap)
    for i in np.flatnonzero(~placed):  # rare: rejection sampling from the same image's generator
        layout = place_one(wh[i], rngs[i], canvas_size=S, max_overlap=cfg.max_overlap)
        if layout is None:
            raise ValueError(f"config={cfg!r} is too crowded: {K + 2} objects found no layout with "
                             f"max_overlap={cfg.max_overlap}")
        boxes[i] = layout

    names = cfg.object_names[:-1]
    empty, nowhere = np.zeros((0, 0), np.uint8), np.zeros(4, np.int64)
    _readonly(empty, nowhere)
    black = np.zeros((S, S), np.uint8)
    _readonly(black)
    labels = np.empty(n, np.int64)
    scenes = []
    for i, d in enumerate(draws):
        label = int(pool.labels[d["tgt_idx"]])
        labels[i] = label
        parts: list[np.ndarray] = [patches[i][0]]
        part_boxes, part_labels = [boxes[i, 0]], [label]
        for k in range(K):
            shown = k < int(d["count"])
            parts.append(patches[i][k + 1] if shown else empty)
            part_boxes.append(boxes[i, k + 1] if shown else nowhere)
            part_labels.append(int(pool.labels[d["dis_idx"][k]]) if shown else -1)
        if d["cue_u"][0] < cfg.cue_presence:
            cue_class = label if d["cue_u"][1] < cfg.cue_agreement else (label + int(d["cue_other"])) % 10
            parts.append(GLYPHS[cue_class].astype(np.uint8) * np.uint8(cfg.cue_intensity))
            part_boxes.append(boxes[i, K + 1])
            part_labels.append(cue_class)
        else:
            parts.append(empty)
            part_boxes.append(nowhere)
            part_labels.append(-1)
        rows = by_class[(label + int(d["swap_offset"])) % 10]
        swap_idx = rows[min(int(d["swap_u"] * len(rows)), len(rows) - 1)]
        swap = render_digit(pool.images[swap_idx], pool.ink_boxes[swap_idx], int(d["tgt_size"]))
        swap_box = _centred(boxes[i, 0], swap.shape, S)
        if swap_violations(swap, swap_box, parts, part_boxes, cfg):
            swap, swap_box = _redraw_swap(rows, int(d["tgt_size"]), boxes[i, 0], parts, part_boxes, cfg,
                                          np.random.default_rng(np.random.SeedSequence([*entropy, indices[i],
                                                                                        _STREAM_SWAP])), split)
        if cfg.background == "photo":
            background = photo_crop(cfg.background_intensity, int(d["photo_pick"]), d["photo_u"], S)
            alternative = photo_crop(cfg.background_intensity, alternative_photo(int(d["photo_pick"])),
                                     d["photo_u"], S)
        else:
            background = alternative = black
        box_rows, label_row = np.array(part_boxes, np.int64), np.array(part_labels, np.int64)
        _readonly(box_rows, label_row, swap, swap_box, *parts)
        scenes.append(Scene(background, alternative, tuple(parts), box_rows, label_row, names=names,
                            replacements=((swap, swap_box),) + (None,) * (K + 1)))
    images = np.stack([scene.render() for scene in scenes]) if n else np.zeros((0, S, S), np.uint8)
    return images, labels, scenes


def swap_violations(swap: np.ndarray, box: Any, parts: Any, boxes: Any, cfg: CuedDigitsConfig) -> list[str]:
    """The layout rules a target swap breaks (``[]``: none): the generator's rules for a target.

    ``parts`` / ``boxes`` are the scene's parts (the target first; absent parts empty), the swap
    replacing part 0. The rules: its longer side within ``target_size`` and above every shown
    distractor's; its box inside the canvas; its box overlapping every other shown part's box by
    less than ``max_overlap`` (intersection over the smaller box, as the layout is drawn); no ink
    of it in the cue's box.
    """
    x0, y0, x1, y1 = (int(v) for v in box)
    S, broken = cfg.canvas_size, []
    side = max(swap.shape) if swap.size else 0
    shown = [k for k in range(1, len(parts)) if parts[k].size]
    if not cfg.target_size[0] <= side <= cfg.target_size[1]:
        broken.append("size")
    if any(max(parts[k].shape) >= side for k in shown if k < len(parts) - 1):
        broken.append("largest")
    if swap.shape != (y1 - y0, x1 - x0) or x0 < 0 or y0 < 0 or x1 > S or y1 > S:
        broken.append("canvas")
    others = np.array([boxes[k] for k in shown], dtype=np.int64).reshape(-1, 4)
    if len(others) and not overlap_ok(np.array([[x0, y0, x1, y1]], dtype=np.int64), others, cfg.max_overlap)[0]:
        broken.append("overlap")
    if parts[-1].size:  # the cue is the last part
        cx0, cy0, cx1, cy1 = (int(v) for v in boxes[-1])
        ix0, iy0, ix1, iy1 = max(x0, cx0), max(y0, cy0), min(x1, cx1), min(y1, cy1)
        if ix0 < ix1 and iy0 < iy1 and swap[iy0 - y0:iy1 - y0, ix0 - x0:ix1 - x0].any():
            broken.append("cue_ink")
    return broken


def _redraw_swap(rows: np.ndarray, size: int, target_box: np.ndarray, parts: list[np.ndarray],
                 boxes: list[np.ndarray], cfg: CuedDigitsConfig, rng: np.random.Generator,
                 split: Split) -> tuple[np.ndarray, np.ndarray]:
    """A swap that keeps every layout rule: another digit of the class, centred on the target, else at
    the first of ``CANDIDATES`` drawn positions that keeps them (``rng`` is the image's swap stream)."""
    pool, S = _digit_pool(split), cfg.canvas_size
    for _ in range(SWAP_REDRAWS):
        digit = rows[int(rng.integers(0, len(rows)))]
        swap = render_digit(pool.images[digit], pool.ink_boxes[digit], size)
        h, w = swap.shape
        for box in [_centred(target_box, swap.shape, S),
                    *candidates(rng.random((CANDIDATES, 2)), np.array([w, h]), S)]:
            if not swap_violations(swap, box, parts, boxes, cfg):
                return swap, np.asarray(box, dtype=np.int64)
    raise ValueError(f"config={cfg!r} is too crowded: no target swap kept the layout rules in {SWAP_REDRAWS} redraws")


def _stream(n: int, split: Split, seed: int, start: int, config: CuedDigitsConfig, stream: int,
            *extra: int) -> tuple[range, list[int]]:
    """Validated ``(indices, entropy)``; ``n`` images of ``config`` must fit the memory available."""
    from ..estimate import available_memory

    n = check_int("n", n, minimum=0)
    scene = config.scene_config()
    check_memory("n", n, bytes_each=scene.image_bytes(), budget=available_memory(),
                 what=f"{config.canvas_size}x{config.canvas_size} canvases, scenes and draws")
    seed = check_int("seed", seed, minimum=0)
    start = check_int("start", start, minimum=0)
    if split not in _SPLIT_CODE:
        raise ValueError(f"split={split!r} is invalid; expected 'train' or 'test'")
    return range(start, start + n), [seed, stream, _SPLIT_CODE[split], *extra]


def generate_cued(n: int, *, split: Split, seed: int, config: CuedDigitsConfig = CuedDigitsConfig(),
                  start: int = 0) -> tuple[np.ndarray, np.ndarray, list[Scene]]:
    """Images ``start, …, start + n − 1`` of the stream ``(split, seed, config)`` with their scenes.

    Image ``i`` depends only on ``(split, seed, config, i)`` (its own generator), so asking for more
    or fewer images never changes it; ``scenes[i].render()`` is ``images[i]`` bit for bit.

    Returns:
        ``(images (n, S, S) uint8, labels (n,) int64, scenes)``.

    Example:
        >>> images, labels, scenes = generate_cued(2, split="test", seed=0)
        >>> images.shape, scenes[0].object_names[-2:]
        ((2, 48, 48), ('cue', 'background'))
    """
    indices, entropy = _stream(n, split, seed, start, config, _STREAM_SAMPLE)
    return _generate(indices, split, entropy, config)


def cued_epoch(epoch: int, *, n: int, seed: int,
               config: CuedDigitsConfig = CuedDigitsConfig()) -> tuple[np.ndarray, np.ndarray]:
    """A fresh training set for one epoch, determined by ``(seed, epoch)``: ``(images, labels)``."""
    epoch = check_int("epoch", epoch, minimum=0)
    indices, entropy = _stream(n, "train", seed, 0, config, _STREAM_EPOCH, epoch)
    images, labels, _ = _generate(indices, "train", entropy, config)
    return images, labels


def cue_conditions(scenes: Any, labels: Any) -> np.ndarray:
    """Per image, how its cue relates to its label: ``"consistent"``, ``"conflicting"`` or ``"absent"``.

    Args:
        scenes: cued-digits scenes (with a ``cue`` object).
        labels: ``(n,)`` the images' labels.

    Returns:
        ``(n,)`` array of strings from :data:`CUE_CONDITIONS`.
    """
    found = list(scenes)
    classes = np.asarray(labels)
    if classes.shape != (len(found),):
        raise ValueError(f"labels has shape {classes.shape}; expected one label per scene ({len(found)},)")
    out = []
    for scene, label in zip(found, classes, strict=True):
        if "cue" not in scene.names:
            raise ValueError("scenes have no 'cue' object; expected cued-digits scenes")
        cue = int(scene.labels[scene.names.index("cue")])
        out.append("absent" if cue < 0 else "consistent" if cue == int(label) else "conflicting")
    return np.array(out)
