"""Bring-your-own images: an ImageNet-style class-folder dataset with optional VOC-style boxes.

Layout::

    root/<class>/<image>.png|.jpg|.jpeg|.bmp          one sub-folder per class
    boxes_dir/<image stem>.xml                         optional, one Pascal-VOC file per image

A folder's label (see :func:`folder_labels`): for a model (``classes`` or ``num_classes`` given),
the index of the model's class the folder names (``classes``: a class-index file or the model's
``class_names``), or the class index the folder's name is (``0 2 3 5``); otherwise, and for
training, the folder's position in sorted order (torchvision's ``ImageFolder`` convention).

Boxes follow the package convention ``(x0, y0, x1, y1)``, ``x1``/``y1`` exclusive. Pascal VOC
stores 1-based inclusive pixel indices, so a VOC box ``xmin..xmax`` becomes
``x0 = xmin - 1``, ``x1 = xmax`` (likewise for y); with ``one_based=False`` (0-based inclusive
files) it becomes ``x0 = xmin``, ``x1 = xmax + 1``. Boxes are checked against the image size
before conversion and, when scaled to a resized image, rounded outwards (``floor`` of the start,
``ceil`` of the end) so the scaled box still covers the object.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from xml.etree.ElementTree import Element, ParseError

import defusedxml
import defusedxml.ElementTree
import numpy as np
from torch.utils.data import Dataset

from ..images import check_decoded_budget, read_image
from .layouts import Layout, register_layout
from .splits import LabelledImages

__all__ = ["IMAGE_EXTENSIONS", "FolderDataset", "folder_labels", "parse_voc_boxes"]

logger = logging.getLogger(__name__)

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp")
Box = tuple[int, int, int, int]
_EPS = 1e-9  # keeps exact products such as 10 * 0.5 from rounding outwards by float noise


def _child_text(node: Element, tag: str, path: Path) -> str:
    child = node.find(tag)
    if child is None or child.text is None or not child.text.strip():
        raise ValueError(f"{path}: <{node.tag}> has no <{tag}> value")
    return child.text.strip()


def _number(node: Element, tag: str, path: Path) -> float:
    text = _child_text(node, tag, path)
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{path}: <{tag}>{text}</{tag}> is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{path}: <{tag}>{text}</{tag}> is not a finite number")
    return value


def _read_voc(path: Path, *, one_based: bool) -> tuple[tuple[int, int], list[tuple[str, tuple[float, ...]]]]:
    """Parses and validates one VOC file; returns ``((width, height), [(name, float box), ...])``."""
    try:
        root = defusedxml.ElementTree.parse(os.fspath(path), forbid_dtd=True).getroot()
    except defusedxml.DefusedXmlException as err:
        raise ValueError(
            f"{path}: unsafe XML rejected, DTDs and entities are not allowed ({err!r})"
        ) from None
    except ParseError as err:
        raise ValueError(f"{path}: malformed XML ({err})") from None
    if root.tag != "annotation":
        raise ValueError(f"{path}: root element is <{root.tag}>, expected <annotation>")
    size = root.find("size")
    if size is None:
        raise ValueError(f"{path}: <annotation> has no <size>")
    width, height = _number(size, "width", path), _number(size, "height", path)
    if width < 1 or height < 1 or width != int(width) or height != int(height):
        raise ValueError(f"{path}: image size {width}x{height} is invalid; expected positive integers")
    image_wh = (int(width), int(height))
    lo = 1.0 if one_based else 0.0
    objects = []
    for obj in root.findall("object"):
        name = _child_text(obj, "name", path)
        bndbox = obj.find("bndbox")
        if bndbox is None:
            raise ValueError(f"{path}: object {name!r} has no <bndbox>")
        xmin, ymin, xmax, ymax = (_number(bndbox, t, path) for t in ("xmin", "ymin", "xmax", "ymax"))
        if not (lo <= xmin <= xmax <= image_wh[0] - 1 + lo and lo <= ymin <= ymax <= image_wh[1] - 1 + lo):
            raise ValueError(
                f"{path}: box (xmin={xmin:g}, ymin={ymin:g}, xmax={xmax:g}, ymax={ymax:g}) of {name!r} is "
                f"inverted or outside the {image_wh[0]}x{image_wh[1]} image; expected "
                f"{lo:g} <= xmin <= xmax <= {image_wh[0] - 1 + lo:g} and "
                f"{lo:g} <= ymin <= ymax <= {image_wh[1] - 1 + lo:g} "
                f"({'1' if one_based else '0'}-based inclusive)"
            )
        objects.append((name, (xmin - lo, ymin - lo, xmax - lo + 1.0, ymax - lo + 1.0)))
    return image_wh, objects


def _to_int_box(box: Sequence[float], sx: float, sy: float, width: int, height: int) -> Box:
    x0, y0, x1, y1 = box
    return (
        max(0, math.floor(x0 * sx + _EPS)),
        max(0, math.floor(y0 * sy + _EPS)),
        min(width, math.ceil(x1 * sx - _EPS)),
        min(height, math.ceil(y1 * sy - _EPS)),
    )


def parse_voc_boxes(
    path: str | os.PathLike[str], *, image_size: int | None = None, one_based: bool = True
) -> list[tuple[str, Box]]:
    """Reads the boxes of a Pascal-VOC / ImageNet-style annotation file.

    The XML is parsed with ``defusedxml`` with DTDs forbidden, so entity-expansion ("billion
    laughs") and external-entity files are rejected instead of expanded.

    Args:
        path: The ``.xml`` file (``<annotation><size><width/><height/></size><object><name/>
            <bndbox><xmin/><ymin/><xmax/><ymax/></bndbox></object>...``).
        image_size: If given, boxes are scaled from the ``<size>`` of the file to an
            ``image_size`` x ``image_size`` image and rounded outwards. Default ``None`` (boxes
            in original pixels).
        one_based: The file's coordinates are 1-based inclusive (Pascal VOC). Set ``False``
            for 0-based inclusive files. Default ``True``.

    Returns:
        ``[(name, (x0, y0, x1, y1)), ...]`` in file order, ``x1``/``y1`` exclusive, ints.

    Raises:
        ValueError: Naming the file, if the XML is unsafe or malformed, a field is missing,
            or a box is inverted or outside the image (the message gives box and image size).
    """
    if image_size is not None and (
        isinstance(image_size, bool) or not isinstance(image_size, int) or image_size < 1
    ):
        raise ValueError(f"image_size={image_size!r} is invalid; expected a positive int or None")
    path = Path(path)
    (width, height), objects = _read_voc(path, one_based=one_based)
    if image_size is None:
        return [(name, _to_int_box(box, 1.0, 1.0, width, height)) for name, box in objects]
    sx, sy = image_size / width, image_size / height
    return [(name, _to_int_box(box, sx, sy, image_size, image_size)) for name, box in objects]


def folder_labels(folders: Sequence[str], *, classes: Sequence[str] | Mapping[str, int] | None = None,
                  num_classes: int | None = None, root: str | os.PathLike[str] = "root") -> tuple[dict[str, int], str]:
    """The label of each class folder, and the rule that gave it.

    Args:
        folders: the class folders' names.
        classes: the model's class names in output order (or ``{name: index}``), e.g. from a
            class-index file or ``ViTConfig.class_names``; folders named by them get their index.
        num_classes: the model's class count; folders named by integers are those classes.
        root: the data folder, for messages.

    Returns:
        ``({folder: label}, rule)``, the rule one of ``"class names"``, ``"class indices"`` or
        ``"sorted folder names"`` (without ``classes`` and ``num_classes``, or for names that are
        neither; a warning says so when their count is not the model's).

    Raises:
        ValueError: folders that are neither the model's class names nor indices below its class
            count, when it names its classes; or an index out of range. The message names both.
    """
    index = None if classes is None else (dict(classes) if isinstance(classes, Mapping)
                                          else {n: i for i, n in enumerate(classes)})
    count = num_classes if num_classes is not None else (None if index is None else max(index.values()) + 1)
    if index is not None and all(f in index for f in folders):
        return {f: index[f] for f in folders}, "class names"
    if count is not None and all(f.isdecimal() for f in folders):
        beyond = sorted((f for f in folders if int(f) >= count), key=int)
        if beyond:
            raise ValueError(f"{os.fspath(root)}: class folder {beyond[-1]!r} names class {int(beyond[-1])}; the model "
                             f"has {count} classes (0..{count - 1})")
        return {f: int(f) for f in folders}, "class indices"
    if index is not None:
        unknown = [f for f in folders if f not in index]
        raise ValueError(f"{os.fspath(root)}: class folders {unknown[:3]} are neither the model's class names "
                         f"(e.g. {list(index)[:3]}) nor class indices below {count}; rename them or pass --classes "
                         "FILE naming them in the model's output order")
    if count is not None and len(folders) != count:
        logger.warning("%s: %d class folders labelled by sorted position; the model has %d classes",
                       os.fspath(root), len(folders), count)
    return {f: i for i, f in enumerate(sorted(folders))}, "sorted folder names"


class FolderDataset(Dataset):
    """Images in class sub-folders, with optional VOC boxes, decoded but not resized.

    Items are ``(image, label)``: ``image`` is the decoded file, uint8 ``(H, W)`` (gray) or
    ``(H, W, 3)`` (RGB; alpha dropped, 16-bit reduced to 8) as :func:`infsa_viz.images.read_image`
    returns it, ``label`` the folder's class (:func:`folder_labels`). A model's own
    preprocessing (:func:`infsa_viz.preprocess.prepare`) turns images into its input, so the
    dataset knows nothing of sizes or normalisation; boxes stay in the file's pixels.

    Args:
        root: Folder with one sub-folder per class.
        boxes_dir: Folder of ``<image stem>.xml`` VOC files; images without a file have no boxes.
            Default ``None``.
        one_based: Coordinates in the XML files are 1-based (Pascal VOC). Default ``True``.
        classes: the model's class names in output order (or ``{name: index}``); default ``None``.
        num_classes: the model's class count; default ``None`` (with neither, labels are sorted
            positions).

    Attributes:
        classes: Sorted class folder names; ``class_to_idx`` maps them to labels, ``labelling``
            says by which rule.
        samples: ``[(path, label), ...]`` sorted by class, then file name.

    Raises:
        ValueError: If ``root`` or ``boxes_dir`` is not a folder, no image is found, or the
            folders do not name the model's classes (see :func:`folder_labels`).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        boxes_dir: str | os.PathLike[str] | None = None,
        one_based: bool = True,
        classes: Sequence[str] | Mapping[str, int] | None = None,
        num_classes: int | None = None,
    ) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise ValueError(f"root={os.fspath(root)!r} is not a folder")
        self.boxes_dir = None if boxes_dir is None else Path(boxes_dir)
        if self.boxes_dir is not None and not self.boxes_dir.is_dir():
            raise ValueError(f"boxes_dir={os.fspath(boxes_dir)!r} is not a folder")
        self.one_based = one_based
        self.classes = sorted(
            d.name for d in self.root.iterdir() if d.is_dir() and not d.name.startswith(".")
        )
        self.class_to_idx, self.labelling = folder_labels(self.classes, classes=classes, num_classes=num_classes,
                                                          root=self.root)
        self.samples = [
            (f, self.class_to_idx[name])
            for name in self.classes
            for f in sorted((self.root / name).iterdir())
            if f.is_file() and f.suffix.lower() in IMAGE_EXTENSIONS and not f.name.startswith(".")
        ]
        if not self.samples:
            raise ValueError(
                f"root={os.fspath(root)!r} holds no {'/'.join(IMAGE_EXTENSIONS)} image in a class folder"
            )

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[np.ndarray, int]:
        path, label = self.samples[index]
        return read_image(path), label

    def box_file(self, index: int) -> Path | None:
        """Returns the VOC file of item ``index`` (``boxes_dir/<stem>.xml``) if it exists."""
        if self.boxes_dir is None:
            return None
        xml = self.boxes_dir / (self.samples[index][0].stem + ".xml")
        return xml if xml.is_file() else None

    def boxes(self, index: int, *, image_shape: tuple[int, ...] | None = None) -> np.ndarray:
        """Returns the boxes of item ``index`` in the image's pixels, as ``(K, 4) int64``.

        ``K`` is 0 without ``boxes_dir`` or without an XML file for the image. Boxes are
        validated against the size recorded in the XML, which must match the image file
        (``image_shape`` saves decoding the file again when the caller has it).

        Raises:
            ValueError: Naming the file, if the XML is invalid (see :func:`parse_voc_boxes`)
                or its size differs from the image's.
        """
        xml = self.box_file(index)
        if xml is None:
            return np.zeros((0, 4), dtype=np.int64)
        (width, height), objects = _read_voc(xml, one_based=self.one_based)
        path = self.samples[index][0]
        actual_h, actual_w = (image_shape or read_image(path).shape)[:2]
        if (width, height) != (actual_w, actual_h):
            raise ValueError(
                f"{xml}: <size> {width}x{height} differs from the image {path} ({actual_w}x{actual_h})"
            )
        rows = [_to_int_box(box, 1.0, 1.0, width, height) for _, box in objects]
        return np.array(rows, dtype=np.int64).reshape(-1, 4)

    def labelled(self, n: int | None = None) -> LabelledImages:
        """The first ``n`` items (default all), decoded once, with labels, boxes and file names."""
        count = len(self) if n is None else min(n, len(self))
        check_decoded_budget([path for path, _ in self.samples[:count]])  # before decoding any of them
        images = [self[i][0] for i in range(count)]
        return LabelledImages(
            images=images,
            labels=np.array([label for _, label in self.samples[:count]], dtype=np.int64),
            boxes=[self.boxes(i, image_shape=images[i].shape) for i in range(count)],
            names=[str(path) for path, _ in self.samples[:count]],
            description={"name": "folder", "root": str(self.root), "classes": self.classes,
                         **({} if self.labelling == "sorted folder names" else
                            {"labels": self.labelling, "class_to_idx": self.class_to_idx}),
                         "boxes_dir": None if self.boxes_dir is None else str(self.boxes_dir),
                         "n_images": count},
        )


register_layout(Layout(
    "class-folders", "class sub-folders (root/<class>/<image>; --boxes XMLDIR adds Pascal-VOC boxes)",
    lambda root: True,
    lambda root, *, classes=None, boxes_dir=None, num_classes=None: FolderDataset(
        root, boxes_dir=boxes_dir, classes=classes, num_classes=num_classes),
    fallback=True, splits=("test", "train")))  # train: a root of train/ and test/ class folders
