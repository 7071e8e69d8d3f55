"""Pure helpers behind the Streamlit app (``app/``): everything it shows is computed here or in
the library, so any figure of the app can be reproduced from a script.

No Streamlit import: the app wraps these functions in its own caches. Models are the library's
:class:`~infsa_viz.vit.VisionTransformer`; images are uint8 arrays ``(H, W)`` or ``(H, W, 3)``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from .attention import VARIANTS

__all__ = [
    "FIGURE_FIELDS",
    "TEST_SPLIT_SIZE",
    "ImageSample",
    "LayerSpectrum",
    "ModelEntry",
    "box_curves",
    "class_probabilities",
    "dataset_curves",
    "dataset_sample",
    "discover_models",
    "figures_csv",
    "figures_json",
    "group_series",
    "image_digest",
    "localisation_figures",
    "map_options",
    "metrics_files",
    "misclassified_indices",
    "model_entry",
    "perturbation_figures",
    "predict_split",
    "report_tables",
    "scale_boxes",
    "spectral_summary",
    "test_split",
    "upload_sample",
]

#: Size of the cluttered-digits test split the shipped models were evaluated on.
TEST_SPLIT_SIZE = 2000

#: The per-image figures (badges) in the order of the CSV/JSON downloads.
FIGURE_FIELDS = ("morf_aoc", "lerf_auc", "aopc", "pointing_hit", "box_roc_auc", "box_pr_auc",
                 "distractor_roc_auc")


# --------------------------------------------------------------------------------------- models
@dataclass(frozen=True)
class ModelEntry:
    """A model directory the app can load: ``path`` (absolute), display ``name``, ``variant``
    (from its ``config.json``) and ``version`` (weights' mtime in ns, so retrained models reload)."""

    path: str
    name: str
    variant: str
    version: int

    @property
    def label(self) -> str:
        return f"{self.variant} · {self.name}"


def model_entry(directory: str | Path) -> ModelEntry:
    """Describe a model directory (``config.json`` + ``model.safetensors``).

    Raises:
        ValueError: if the directory, its config or its weights are missing or unreadable.
    """
    from .io import read_json
    from .vit import CONFIG_FILE, WEIGHTS_FILE

    path = Path(directory).expanduser()
    if not path.is_dir():
        raise ValueError(f"model directory {str(directory)!r} does not exist")
    weights = path / WEIGHTS_FILE
    if not (path / CONFIG_FILE).is_file() or not weights.is_file():
        raise ValueError(f"{str(directory)!r} is not a model directory: expected {CONFIG_FILE} and {WEIGHTS_FILE}")
    config = read_json(path / CONFIG_FILE)
    variant = config.get("attention", "unknown") if isinstance(config, dict) else "unknown"
    return ModelEntry(path=str(path.resolve()), name=path.name, variant=str(variant),
                      version=weights.stat().st_mtime_ns)


def discover_models(root: str | Path) -> list[ModelEntry]:
    """The model directories directly under ``root``, ordered as :data:`VARIANTS`, then by name.

    Sub-directories without a ``config.json`` are skipped, and so are those whose weights are not
    written yet (a model being trained).
    """
    from .vit import CONFIG_FILE

    root = Path(root)
    entries = []
    for sub in sorted(root.iterdir()) if root.is_dir() else []:
        if (sub / CONFIG_FILE).is_file():
            try:
                entries.append(model_entry(sub))
            except ValueError:
                continue
    order = {v: i for i, v in enumerate(VARIANTS)}
    return sorted(entries, key=lambda e: (order.get(e.variant, len(order)), e.name))


# --------------------------------------------------------------------------------------- images
@dataclass(frozen=True, eq=False)
class ImageSample:
    """One image to explain, with what is known about it.

    Attributes:
        image: uint8 ``(H, W)`` or ``(H, W, 3)``.
        key: a stable identity for caches (``"test:<n>:<index>"`` or ``"upload:<sha256>"``).
        source: a human description.
        label: ground-truth class, or ``None`` (uploads).
        boxes: target boxes ``(K, 4)`` in pixels of ``image``, ``(x0, y0, x1, y1)``, or ``None``.
        distractor_boxes: distractor boxes ``(K', 4)``, or ``None``.
    """

    image: np.ndarray
    key: str
    source: str
    label: int | None = None
    boxes: np.ndarray | None = None
    distractor_boxes: np.ndarray | None = None


@lru_cache(maxsize=2)
def test_split(n: int = TEST_SPLIT_SIZE):
    """The cluttered-digits test split (``generate_cluttered(n, split="test", seed=TEST_SEED)``),
    generated once per process; treat it as read-only."""
    from .data import generate_cluttered
    from .train import TEST_SEED

    return generate_cluttered(n, split="test", seed=TEST_SEED)


def dataset_sample(index: int, *, n: int = TEST_SPLIT_SIZE) -> ImageSample:
    """Image ``index`` of the test split with its label, target box and distractor boxes."""
    split = test_split(n)
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(split):
        raise ValueError(f"index={index!r} must be an integer in [0, {len(split)})")
    i = int(index)
    return ImageSample(
        image=split.images[i], key=f"test:{n}:{i}", source=f"test image #{i}", label=int(split.labels[i]),
        boxes=split.target_boxes[i].reshape(1, 4).astype(np.float64),
        distractor_boxes=split.distractor_boxes[i].reshape(-1, 4).astype(np.float64),
    )


def image_digest(data: bytes) -> str:
    """SHA-256 (hex) of a file's bytes: the identity of an upload in the app's caches."""
    return hashlib.sha256(data).hexdigest()


def upload_sample(data: bytes, name: str = "upload") -> ImageSample:
    """Decode an uploaded file (PNG/JPEG/BMP; gray, RGB or RGBA; any size up to the limits).

    Raises:
        ValueError: empty, too large, not an image (the message names the file).
    """
    from .images import decode_image

    image = decode_image(data, name=name)
    return ImageSample(image=image, key=f"upload:{image_digest(data)}", source=f"upload {name!r}")


def scale_boxes(boxes: np.ndarray | None, from_shape: Sequence[int], size: int) -> np.ndarray | None:
    """Boxes in pixels of an image of shape ``from_shape`` → pixels of the ``size × size`` input."""
    if boxes is None:
        return None
    sy, sx = size / from_shape[0], size / from_shape[1]
    return np.asarray(boxes, dtype=np.float64).reshape(-1, 4) * np.array([sx, sy, sx, sy])


# ----------------------------------------------------------------------------------- predictions
@torch.no_grad()
def class_probabilities(model: nn.Module, x: Tensor) -> np.ndarray:
    """Softmax class probabilities ``(classes,)`` of one input ``x (1, C, H, W)``."""
    model.eval()
    return torch.softmax(model(x).float(), dim=-1)[0].numpy().astype(np.float64)


def predict_split(model: nn.Module, images: np.ndarray, *, batch_size: int = 256) -> np.ndarray:
    """Predicted class ``(n,)`` of each uint8 image ``(n, H, W)`` (the models' own normalisation)."""
    from .data import to_tensor
    from .train import predict

    return predict(model, to_tensor(images), batch_size=batch_size).argmax(-1).numpy()


def misclassified_indices(predicted: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Indices where ``predicted != labels``, ascending."""
    return np.flatnonzero(np.asarray(predicted) != np.asarray(labels))


def map_options(method: str, *, layer: int | None = None, head: int | str | None = None) -> dict[str, Any]:
    """Options for :func:`~infsa_viz.maps.explain` from the app's layer / head selectors.

    ``layer`` and ``head`` are used only where the method has ``layer_options``; ``head="mean"``
    (or ``None``) means the method's own head-fusing default from the registry.
    """
    from .maps import check_method

    spec = check_method(method)
    options: dict[str, Any] = {}
    if not spec.layer_options:
        return options
    if layer is not None:
        options["layer"] = int(layer)
    if head not in (None, "mean"):
        options["head"] = int(head)  # type: ignore[arg-type]
    return options


# ------------------------------------------------------------------------------ per-image figures
def _nan_to_none(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def perturbation_figures(model: nn.Module, x: Tensor, token_map: np.ndarray | Tensor, target: int, *,
                         steps: int = 20) -> dict[str, Any]:
    """MoRF / LeRF curves of one image and their scores (:mod:`infsa_viz.metrics`, default protocol).

    Args:
        model: the model in eval mode.
        x: ``(1, C, H, W)`` input.
        token_map: ``(h, w)`` map on the patch grid.
        target: the class whose probability is tracked (ground truth, or the prediction for uploads).
        steps: removal steps (default 20).

    Returns:
        ``{"fractions", "morf", "lerf" (lists), "morf_aoc", "lerf_auc", "aopc" (float or None),
        "protocol"}``.
    """
    from .metrics import aopc, lerf_auc, morf_aoc, perturbation_curves

    maps = torch.as_tensor(np.asarray(token_map, dtype=np.float32))[None]  # (1, h, w)
    curves = perturbation_curves(model, x, maps, torch.tensor([int(target)]), patch_size=model.patch_size,
                                 order="both", steps=steps)
    morf, lerf = curves["morf"], curves["lerf"]
    return {
        "fractions": morf.fractions.tolist(),
        "morf": morf.probs[0].tolist(),
        "lerf": lerf.probs[0].tolist(),
        "morf_aoc": _nan_to_none(morf_aoc(morf, select="all").per_image[0]),
        "lerf_auc": _nan_to_none(lerf_auc(lerf, select="all").per_image[0]),
        "aopc": _nan_to_none(aopc(morf, select="all").per_image[0]),
        "protocol": morf.protocol,
    }


def _box_defined(boxes: np.ndarray | None, size: tuple[int, int]) -> bool:
    from .metrics import boxes_to_mask

    if boxes is None or len(boxes) == 0:
        return False
    mask = boxes_to_mask(boxes, size)
    return bool(0 < mask.sum() < mask.size)


def localisation_figures(token_map: np.ndarray | Tensor, boxes: np.ndarray | None,
                         distractor_boxes: np.ndarray | None, *, image_size: int) -> dict[str, Any]:
    """Pointing-game hit, box ROC-AUC / PR-AUC and target-vs-distractor ROC-AUC of one map.

    All ``None`` where undefined (no boxes, e.g. uploads, or a box covering the whole image).
    """
    from .metrics import box_auc, pointing_game

    out: dict[str, Any] = {"pointing_hit": None, "box_roc_auc": None, "box_pr_auc": None,
                           "distractor_roc_auc": None}
    if not _box_defined(boxes, (image_size, image_size)):
        return out
    maps = np.asarray(token_map, dtype=np.float32)[None]  # (1, h, w)
    negatives = None
    if distractor_boxes is not None and len(distractor_boxes) and _box_defined(distractor_boxes, (image_size,) * 2):
        negatives = [distractor_boxes]
    auc = box_auc(maps, [boxes], image_size=image_size, negatives_boxes=negatives)
    point = pointing_game(maps, [boxes], image_size=image_size)
    out["pointing_hit"] = _nan_to_none(point.hits[0])
    out["box_roc_auc"] = _nan_to_none(auc.roc_auc[0])
    out["box_pr_auc"] = _nan_to_none(auc.pr_auc[0])
    if auc.negatives_roc_auc is not None:
        out["distractor_roc_auc"] = _nan_to_none(auc.negatives_roc_auc[0])
    return out


def box_curves(token_map: np.ndarray | Tensor, boxes: np.ndarray | None, *, image_size: int) -> dict[str, Any] | None:
    """ROC and PR curves of one map as a detector of the target boxes' pixels.

    The same labelling as :func:`~infsa_viz.metrics.box_auc` at pixel level: the map upsampled
    bilinearly to the image, label 1 inside the union of the target boxes. ``None`` if undefined.

    Returns:
        ``{"fpr", "tpr", "recall", "precision" (lists), "positive_fraction"}``.
    """
    from sklearn.metrics import precision_recall_curve, roc_curve

    from .metrics import boxes_to_mask, upsample_map

    if not _box_defined(boxes, (image_size, image_size)):
        return None
    scores = upsample_map(np.asarray(token_map, dtype=np.float32)[None], (image_size, image_size))[0].ravel()
    labels = boxes_to_mask(boxes, image_size).ravel()
    fpr, tpr, _ = roc_curve(labels, scores)
    precision, recall, _ = precision_recall_curve(labels, scores)
    return {"fpr": fpr.tolist(), "tpr": tpr.tolist(), "recall": recall.tolist(),
            "precision": precision.tolist(), "positive_fraction": float(labels.mean())}


def figures_csv(rows: Sequence[dict[str, Any]]) -> str:
    """Rows of flat dicts as CSV text (columns in first-seen order; ``None`` → empty)."""
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return buf.getvalue()


def figures_json(rows: Sequence[dict[str, Any]], **context: Any) -> str:
    """``{"context": ..., "rows": [...]}`` as indented JSON text."""
    return json.dumps({"context": context, "rows": list(rows)}, indent=2, default=str) + "\n"


# ---------------------------------------------------------------------------------------- spectra
@dataclass(frozen=True, eq=False)
class LayerSpectrum:
    """The graph of one layer and head for one image.

    Attributes:
        eigenvalues: complex ``(N,)``, by decreasing modulus.
        spectral_radius: largest modulus.
        gamma: discount (learned ``ρ``; the registry's ``SOFTMAX_GAMMA`` for softmax layers).
        absorption_valid_share: share of rows with ``γ·Σ_j A_ij ≤ 1``.
        min_absorption: smallest ``1 − γ·Σ_j A_ij``.
        cosine_left / cosine_right: cosine between Linear-InfSA's ``a`` and the dense left / right
            Perron vector of ``Â`` from the layer's ``q``, ``k`` (head ``"mean"``: mean over heads).
    """

    layer: int
    head: int | str
    variant: str
    matrix: str
    eigenvalues: np.ndarray
    spectral_radius: float
    gamma: float
    absorption_valid_share: float
    min_absorption: float
    cosine_left: float
    cosine_right: float

    def row(self) -> dict[str, Any]:
        return {"layer": self.layer, "head": str(self.head), "variant": self.variant, "matrix": self.matrix,
                "spectral_radius": self.spectral_radius, "gamma": self.gamma,
                "gamma_x_radius": self.gamma * self.spectral_radius,
                "absorption_valid_share": self.absorption_valid_share, "min_absorption": self.min_absorption,
                "cosine_left": self.cosine_left, "cosine_right": self.cosine_right}


def spectral_summary(model: nn.Module, x: Tensor, *, matrix: str = "native") -> list[LayerSpectrum]:
    """Spectrum, absorption check and Linear-vs-Perron cosine of every layer × (head mean, heads).

    Args:
        model: the model.
        x: ``(1, C, H, W)`` input.
        matrix: ``"native"`` (what each layer applies) or ``"infsa"`` (``Â`` from its q, k).
    """
    from .capture import capture_attention
    from .maps import SOFTMAX_GAMMA
    from .spectral import absorption_check, eigenvalue_spectrum, layer_operator, perron_cosines

    _, records = capture_attention(model, x)
    out = []
    for record in records:
        cos = perron_cosines(record.q, record.k, eps=record.eps)  # each (1, H)
        heads: list[int | str] = ["mean", *range(record.q.shape[1])]
        for head in heads:
            op, gamma = layer_operator(record, head=head, matrix=matrix)  # type: ignore[arg-type]
            g = float(SOFTMAX_GAMMA if gamma is None else gamma)
            values = eigenvalue_spectrum(op)[0].numpy()  # (N,) complex, by decreasing modulus
            check = absorption_check(op, g)
            pick = (lambda t: t[0].mean()) if head == "mean" else (lambda t, h=head: t[0, h])
            out.append(LayerSpectrum(
                layer=record.layer, head=head, variant=record.variant, matrix=matrix, eigenvalues=values,
                spectral_radius=float(np.abs(values).max()), gamma=g,
                absorption_valid_share=float(check.valid_share[0]), min_absorption=float(check.absorption[0].min()),
                cosine_left=float(pick(cos["left"])), cosine_right=float(pick(cos["right"])),
            ))
    return out


# ---------------------------------------------------------------------------------- metrics files
def metrics_files(directory: str | Path) -> dict[str, Path]:
    """The ``*.json`` reports in ``directory`` by stem (empty if the folder is missing)."""
    directory = Path(directory)
    return {p.stem: p for p in sorted(directory.glob("*.json"))} if directory.is_dir() else {}


#: Lists longer than this (curves, per-head values) are left out of report tables.
MAX_LIST_IN_TABLE = 8


def _flat(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            if len(value) <= MAX_LIST_IN_TABLE:
                out[name] = json.dumps(value)
        else:
            out[name] = value
    return out


def _uniform_columns(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Columns mixing text with numbers become text (tables need one type per column)."""
    mixed = {k for k in {k for r in rows for k in r}
             if len({isinstance(r[k], str) for r in rows if r.get(k) is not None}) > 1}
    return [{k: (json.dumps(v) if k in mixed and not isinstance(v, str) and v is not None else v)
             for k, v in r.items()} for r in rows]


def report_tables(report: Any) -> dict[str, list[dict[str, Any]]]:
    """Every top-level list of objects in a JSON report (``results``, ``cases``, ``per_layer``, …)
    as rows of flat dicts: nested objects become dotted columns, short lists JSON text, long lists
    (curves) are left out, and a column mixing text and numbers becomes text."""
    if not isinstance(report, dict):
        return {}
    return {key: _uniform_columns([_flat(r) for r in value]) for key, value in report.items()
            if isinstance(value, list) and value and all(isinstance(r, dict) for r in value)}


def group_series(rows: Sequence[dict[str, Any]], *, x: str, y: str, group: str | Sequence[str],
                 where: dict[str, Any] | None = None) -> dict[str, tuple[list[Any], list[Any]]]:
    """``{group label: (xs, ys)}`` from table rows, for one chart trace per group.

    Rows whose ``y`` is missing or ``None``, or that differ from ``where``, are skipped; a group of
    several columns is labelled ``"a · b · c"``.
    """
    columns = [group] if isinstance(group, str) else list(group)
    out: dict[str, tuple[list[Any], list[Any]]] = {}
    for row in rows:
        if row.get(y) is None or any(row.get(k) != v for k, v in (where or {}).items()):
            continue
        xs, ys = out.setdefault(" · ".join(str(row.get(c)) for c in columns), ([], []))
        xs.append(row.get(x))
        ys.append(row[y])
    return out


def dataset_curves(report: Any, method: str) -> list[dict[str, Any]]:
    """The mean curves of ``method`` in an attention-quality report, one entry per model.

    Returns:
        ``[{"model", "variant", "curves": {"fractions", "morf_mean", "lerf_mean", "recall",
        "precision_mean", ...}}]``, only for rows that carry curves.
    """
    rows = report.get("results", []) if isinstance(report, dict) else []
    return [{"model": r.get("model"), "variant": r.get("variant"), "curves": r["curves"]}
            for r in rows if isinstance(r, dict) and r.get("method") == method and isinstance(r.get("curves"), dict)]
